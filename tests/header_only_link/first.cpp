// Two files of one program, both header-only: every session-side body is inline in each, so a body an
// .ipp defines without `inline` (a helper that forgot it, a STINT_DECL left off) is defined twice and
// this program fails to link, naming it (design §16, the rule for .ipp bodies). Unity builds are off for
// this target: one translation unit would hide the second definition.
#include <stint/stint.hpp>
#include <stint/profiler/on_demand_server.hpp>

#include <string>

#include <doctest/doctest.h>

std::string table_from_the_second_file();

TEST_CASE("header-only in two files: one program, one session, each file's profiler works") {
    {
        stint::profiler<> prof;
        prof.start();
        { STINT_SCOPE("first_file_scope"); }
        prof.stop();
        CHECK(prof.key_averages().table().find("first_file_scope") != std::string::npos);
    }
    CHECK(table_from_the_second_file().find("second_file_scope") != std::string::npos);
}
