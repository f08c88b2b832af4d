// A program that profiles a framework which includes only stint's annotation header: the framework's
// ops land in the program's session, nested under the program's own scopes, with their shapes.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include <stint/stint.hpp>

#include "framework.hpp"

namespace {

std::vector<stint::event> named(const stint::event_list& events, std::string_view name) {
    std::vector<stint::event> found;
    for (const stint::event& e : events) {
        if (e.name == name) found.push_back(e);
    }
    return found;
}

}  // namespace

TEST_CASE("a framework that includes only annotate.hpp records into the program's session, with shapes") {
    stint::profiler<framework::profiled> prof;
    framework_linear(4, 8);  // before start: nothing records
    prof.start();
    {
        STINT_SCOPE("program::step");
        framework_linear(4, 8);
        framework::add(framework::tensor{{5}}, framework::tensor{{5}});  // the header's op, in this file
    }
    framework_linear_on_worker();
    prof.stop();
    const stint::event_list& events = prof.events();
    const auto steps = named(events, "program::step");
    const auto linears = named(events, "framework::linear");
    const auto matmuls = named(events, "framework::matmul");
    const auto adds = named(events, "framework::add");
    REQUIRE(steps.size() == 1);
    REQUIRE(linears.size() == 2);
    REQUIRE(matmuls.size() == 2);
    REQUIRE(adds.size() == 3);
    CHECK(events.parent(linears[0]) == steps[0]);
    CHECK(events.parent(matmuls[0]) == linears[0]);
    CHECK(matmuls[0].kind == stint::event_kind::cpu_op);
    const stint::event_args* args = events.args(matmuls[0]);
    REQUIRE(args != nullptr);
    CHECK(args->input_dims == std::vector<std::vector<std::int64_t>>{{4, 8}, {8, 8}});
    CHECK(args->input_types == std::vector<std::string>{"float", "float"});
    // The worker thread of the library: its own track, named by the library before the profiler's file
    // registered it.
    CHECK(events.parent(linears[1]) == std::nullopt);
    const stint::thread_info& worker = events.threads()[linears[1].thread];
    CHECK(worker.name == "framework worker");
    CHECK(linears[1].thread != linears[0].thread);
}
