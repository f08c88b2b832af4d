// STINT_TRACE_ON_EXIT=path: a session still recording when the process exits normally leaves its
// trace at `path` (tests/programs/exit_in_session.cpp leaves main in each way, with detached threads
// still recording).

#include <doctest/doctest.h>

#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "../test_util.hpp"

namespace {

stint_test::program_result run_program(const std::string& mode, const std::string& trace_path) {
    return stint_test::run_exit_program(mode, "STINT_TRACE_ON_EXIT='" + trace_path + "'");
}

std::size_t count_in_trace(const nlohmann::json& trace, const std::string& name) {
    return stint_test::count_named(stint_test::timed_events(trace), name);
}

}  // namespace

TEST_CASE("STINT_TRACE_ON_EXIT writes the unfinished session's trace when the process exits normally") {
    stint_test::temp_dir dir;
    for (const char* mode : {"return", "exit", "static"}) {
        CAPTURE(mode);
        const std::string path = dir.file(std::string(mode) + ".json");
        const stint_test::program_result run = run_program(mode, path);
        INFO(run.output);
        REQUIRE(run.status == 0);
        REQUIRE(std::filesystem::exists(path));
        const nlohmann::json trace = stint_test::read_json(path);
        CHECK(count_in_trace(trace, "main") == 1000);
        CHECK(trace.at("stint").at("recorded").get<std::uint64_t>() >= 1000);
    }
}

TEST_CASE("STINT_TRACE_ON_EXIT: quick_exit runs no exit handler and writes nothing; unset writes nothing") {
    stint_test::temp_dir dir;
    const std::string path = dir.file("quick.json");
    CHECK(run_program("quick_exit", path).status == 0);
    CHECK_FALSE(std::filesystem::exists(path));
    CHECK(stint_test::run_exit_program("exit").status == 0);
    CHECK(std::filesystem::is_empty(dir.path()));
}

TEST_CASE("STINT_TRACE_ON_EXIT to an unwritable path: a warning, and the process still exits cleanly") {
    stint_test::temp_dir dir;
    const std::string path = dir.file("missing/dir/trace.json");
    const stint_test::program_result run = run_program("exit", path);
    INFO(run.output);
    CHECK(run.status == 0);
    CHECK_FALSE(std::filesystem::exists(path));
    // The promised warning, once, naming the path and the reason.
    const std::string warning = "stint: warning: STINT_TRACE_ON_EXIT: cannot write the unfinished session's trace: ";
    const std::size_t at = run.output.find(warning);
    REQUIRE(at != std::string::npos);
    const std::string line = run.output.substr(at, run.output.find('\n', at) - at);
    CHECK(line.find(path) != std::string::npos);
    CHECK(line.find("No such file or directory") != std::string::npos);
    CHECK(run.output.find(warning, at + 1) == std::string::npos);
}
