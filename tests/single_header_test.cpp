// Includes only the generated single header.
#include <doctest/doctest.h>

#include <stint/stint.hpp>

#include <filesystem>

#include "test_util.hpp"

#ifndef STINT_VERSION_STRING
#error "the single header must define the version"
#endif

TEST_CASE("the single header records and exports a trace") {
    stint_test::temp_dir dir;
    stint::profiler<> prof;
    prof.start();
    {
        STINT_SCOPE("single");
        STINT_OP(stint::config<>, "op", 1);
    }
    prof.stop();
    REQUIRE(prof.events().size() == 2);
    prof.export_chrome_trace(dir.file("single.json"));
    const auto trace = stint_test::read_json(dir.file("single.json"));
    CHECK(stint_test::timed_events(trace).size() == 2);
}
