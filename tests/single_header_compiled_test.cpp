// The generated single headers built the separate way: this file defines STINT_SEPARATE_COMPILATION (a
// build flag), includes single_include/stint/stint.hpp, and is the one file that compiles
// single_include/stint/impl/src.hpp.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include <stint/stint.hpp>
#include <stint/impl/src.hpp>

#include <fstream>
#include <iterator>
#include <string>

#include <nlohmann/json.hpp>

#include "test_util.hpp"

#ifndef STINT_SEPARATE_COMPILATION
#error "this test is built with STINT_SEPARATE_COMPILATION"
#endif

TEST_CASE("the single headers compiled once record a scope and export its trace") {
    stint_test::temp_dir dir;
    stint::profiler<> prof;
    prof.start();
    { STINT_SCOPE("single::compiled"); }
    prof.stop();
    REQUIRE(stint_test::program_event_count(prof.events()) == 1);
    CHECK(prof.key_averages().table().find("single::compiled") != std::string::npos);
    prof.export_chrome_trace(dir.file("compiled.json"));
    std::ifstream in(dir.file("compiled.json"));
    const nlohmann::json trace = nlohmann::json::parse(in);
    int scopes = 0;
    for (const auto& e : trace["traceEvents"]) scopes += e.value("name", "") == "single::compiled" ? 1 : 0;
    CHECK(scopes == 1);
}
