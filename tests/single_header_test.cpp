// Includes only the generated single header.
#include <doctest/doctest.h>

#include <array>

#include <stint/stint.hpp>

#include <algorithm>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

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
    REQUIRE(stint_test::program_event_count(prof.events()) == 2);
    prof.export_chrome_trace(dir.file("single.json"));
    const auto trace = stint_test::read_json(dir.file("single.json"));
    CHECK(stint_test::timed_events(trace).size() == 2);
}

TEST_CASE("the single header captures op inputs and flops") {
    using flops = stint::config<stint::with_flops>;
    stint_test::temp_dir dir;
    stint::profiler<flops> prof;
    prof.start();
    {
        const std::array<float, 5> values{};
        const std::span<const float> v(values);
        STINT_OP(flops, "aten::add", v, 2);
    }
    prof.stop();
    REQUIRE(prof.events().size() == 1);
    CHECK(prof.events()[0].flops == 5);  // torch's add: one flop per element of self
    prof.export_chrome_trace(dir.file("shapes.json"));
    const auto trace = stint_test::read_json(dir.file("shapes.json"));
    const auto args = stint_test::timed_events(trace).at(0).at("args");
    CHECK(args.at("Input type") == nlohmann::json({"float", "Scalar"}));
    CHECK(args.at("Input Dims") == nlohmann::json::parse("[[5], []]"));
}

TEST_CASE("the single header drives a schedule and writes TensorBoard files") {
    stint_test::temp_dir dir;
    {
        stint::profiler<> prof({
            .schedule = stint::schedule({.wait = 1, .warmup = 1, .active = 1, .repeat = 2}),
            .on_trace_ready = stint::tensorboard_trace_handler(dir.path().string(), "single", true),
        });
        for (int i = 0; i < 6; ++i) {
            STINT_SCOPE("single_step");
            prof.step();
        }
    }
    int files = 0;
    for (const auto& entry : std::filesystem::directory_iterator(dir.path())) {
        ++files;
        CHECK(entry.path().string().ends_with(".pt.trace.json.gz"));
        CHECK_FALSE(stint_test::read_json(entry.path().string())["traceEvents"].empty());
    }
    CHECK(files == 2);
}

int single_header_annotated_op(std::span<const float> v);
int single_header_annotated_scope();

TEST_CASE("both single headers in one file, in either order: one registry, one session") {
    using shapes = stint::config<stint::record_shapes>;
    stint::profiler<shapes> prof;
    prof.start();
    const std::array<float, 3> values{};
    CHECK(single_header_annotated_op(values) == 3);
    CHECK(single_header_annotated_scope() == 1);
    prof.stop();
    std::vector<std::string> names;
    for (const stint::event& e : prof.events()) names.emplace_back(e.name);
    CHECK(std::find(names.begin(), names.end(), "framework::op") != names.end());
    CHECK(std::find(names.begin(), names.end(), "framework::scope") != names.end());
    for (const stint::event& e : prof.events()) {
        if (e.name != "framework::op") continue;
        const stint::event_args* args = prof.events().args(e);
        REQUIRE(args != nullptr);
        CHECK(args->input_dims == std::vector<std::vector<std::int64_t>>{{3}});
    }
}
