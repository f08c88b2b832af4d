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

int run_program(const std::string& mode, const std::string& trace_path) {
    const std::string command =
        "STINT_TRACE_ON_EXIT='" + trace_path + "' " + std::string(STINT_TEST_EXIT_PROGRAM) + " " + mode;
    const int status = std::system(command.c_str());
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

std::size_t count_named(const nlohmann::json& trace, const std::string& name) {
    std::size_t n = 0;
    for (const auto& e : stint_test::timed_events(trace)) n += e.at("name") == name ? 1 : 0;
    return n;
}

}  // namespace

TEST_CASE("STINT_TRACE_ON_EXIT writes the unfinished session's trace when the process exits normally") {
    stint_test::temp_dir dir;
    for (const char* mode : {"return", "exit", "static"}) {
        CAPTURE(mode);
        const std::string path = dir.file(std::string(mode) + ".json");
        REQUIRE(run_program(mode, path) == 0);
        REQUIRE(std::filesystem::exists(path));
        const nlohmann::json trace = stint_test::read_json(path);
        CHECK(count_named(trace, "main") == 1000);
        CHECK(trace.at("stint").at("recorded").get<std::uint64_t>() >= 1000);
    }
}

TEST_CASE("STINT_TRACE_ON_EXIT: quick_exit runs no exit handler and writes nothing; unset writes nothing") {
    stint_test::temp_dir dir;
    const std::string path = dir.file("quick.json");
    CHECK(run_program("quick_exit", path) == 0);
    CHECK_FALSE(std::filesystem::exists(path));
    const std::string command = std::string(STINT_TEST_EXIT_PROGRAM) + " exit";
    CHECK(std::system(command.c_str()) == 0);
    CHECK(std::filesystem::is_empty(dir.path()));
}

TEST_CASE("STINT_TRACE_ON_EXIT to an unwritable path: a warning, and the process still exits cleanly") {
    stint_test::temp_dir dir;
    const std::string path = dir.file("missing/dir/trace.json");
    CHECK(run_program("exit", path) == 0);
    CHECK_FALSE(std::filesystem::exists(path));
}
