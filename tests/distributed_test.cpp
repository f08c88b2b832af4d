// The pieces of a job's trace that need no MPI (tests/mpi runs the whole under mpirun): the clock
// alignment's arithmetic, an event list moved onto another clock, and one process's elements of
// traceEvents written under a rank's pid, name and id ranges.

#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <thread>

#include "stint/distributed/clock_alignment.hpp"
#include "stint/analysis/event_tree.hpp"
#include "stint/export/chrome_trace.hpp"
#include "test_util.hpp"

namespace {

using stint::event_kind;
using stint::detail::event_list_builder;

// Rank 0's steady reading when this rank's reads `local`: this rank's clock is 1 ms behind at
// local 10 s and gains 1 us per second (1 ppm) on rank 0's.
std::int64_t root_steady(std::int64_t local) {
    const double gained = 1e-6 * static_cast<double>(local - 10'000'000'000);
    return local + 1'000'000 - static_cast<std::int64_t>(std::llround(gained));
}

}  // namespace

TEST_CASE("a rank's trace time maps onto rank 0's through two clock samples, offset and drift both") {
    const stint::mpi::clock_sample first{10'000'000'000, root_steady(10'000'000'000) - 10'000'000'000, 700};
    const stint::mpi::clock_sample last{30'000'000'000, root_steady(30'000'000'000) - 30'000'000'000, 300};
    const std::int64_t base_steady = 9'000'000'000;       // this rank's event time 0
    const std::int64_t root_base_steady = 4'000'000'000;  // rank 0's event time 0
    const stint::mpi::clock_alignment a = stint::mpi::align(first, last, base_steady, root_base_steady);
    CHECK(a.error_ns == 700);  // the worse sample's bound
    CHECK(std::abs(a.drift + 1e-6) < 1e-9);  // gains 1 us per s
    constexpr std::int64_t second = 1'000'000'000;
    for (const std::int64_t t : {1 * second, 11 * second, 21 * second}) {
        const std::int64_t expected = root_steady(base_steady + t) - root_base_steady;
        const std::int64_t mapped = t + a.offset_ns + std::llround(a.drift * static_cast<double>(t - a.reference_ns));
        CHECK(std::llabs(mapped - expected) <= 1);
    }
    // One sample, or two at one instant: no drift, the offset as measured.
    const stint::mpi::clock_alignment once = stint::mpi::align(first, first, base_steady, root_base_steady);
    CHECK(once.drift == 0.0);
    CHECK(once.offset_ns == base_steady + first.offset_ns - root_base_steady);
}

TEST_CASE("retime moves every event onto another clock, stretching durations by the drift, and keeps the tree") {
    event_list_builder b;
    const auto t = b.add_thread({.os_tid = 1, .name = "main"});
    b.add(event_kind::user_annotation, "parent", t, 0, 1'000'000);
    b.add(event_kind::cpu_op, "child", t, 200'000, 400'000);
    stint::event_list list = std::move(b).build();
    const std::int64_t parent_self = list[0].self_ns;
    list.retime(5'000, 1e-3, 0, 123'456);
    CHECK(list.base_time_ns() == 123'456);
    CHECK(list[0].start_ns == 5'000);
    CHECK(list[0].end_ns == 5'000 + 1'001'000);
    CHECK(list[1].start_ns == 5'000 + 200'200);
    CHECK(list[1].end_ns == 5'000 + 400'400);
    CHECK(list[0].self_ns == parent_self + parent_self / 1000);
    CHECK(list.parent(list[1]) == list[0]);
    CHECK(stint::key_averages(list).size() == 2);
}

TEST_CASE("one process's trace elements carry the rank's pid, name, sort index, device pids and flow ids") {
    stint::profiler<> prof;
    prof.start();
    const std::uint64_t id = stint::new_flow_id();
    {
        STINT_SCOPE("submit");
        STINT_FLOW_BEGIN(id);
    }
    std::thread([id] {
        STINT_SCOPE("run");
        STINT_FLOW_END(id);
    }).join();
    prof.stop();

    stint::detail::chrome_trace_info info;
    info.pid = 3;
    info.process_name = "rank 3";
    info.sort_index = 3;
    info.device_pid_base = 1'003'000;
    info.flow_id_base = std::uint64_t{3} << 40;
    for (const bool first : {true, false}) {
        stint_test::string_sink sink;
        {
            stint::detail::json_writer out(sink);
            stint::detail::write_trace_events(out, prof.events(), info, first);
            out.flush();
        }
        // Not the array's first elements: each after a comma, so that they follow another rank's.
        CHECK(sink.text.starts_with(first ? "\n    {" : ",\n    {"));
        const auto elements = nlohmann::json::parse("[" + sink.text.substr(first ? 0 : 1) + "]");
        int flows = 0;
        for (const auto& e : elements) {
            CHECK(e.at("pid") == 3);
            if (e.at("ph") == "M" && e.at("name") == "process_name") CHECK(e.at("args").at("name") == "rank 3");
            if (e.at("ph") == "M" && e.at("name") == "process_sort_index") CHECK(e.at("args").at("sort_index") == 3);
            if (e.at("ph") == "s" || e.at("ph") == "f") {
                CHECK(e.at("id").get<std::uint64_t>() == info.flow_id_base + id);
                ++flows;
            }
        }
        CHECK(flows == 2);
    }
}
