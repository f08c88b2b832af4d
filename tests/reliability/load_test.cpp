// Load: 8 threads × N scopes three deep (full size: 1,000,000 each). Every record is kept or counted
// as dropped, per thread and exactly; the trace holds exactly what was recorded; and every event's
// parent is the scope that enclosed it in the program.

#include <doctest/doctest.h>

#include <cstdint>
#include <string_view>
#include <thread>
#include <vector>

#include "../test_util.hpp"
#include "size.hpp"
#include "trace_count.hpp"

namespace {

constexpr int load_threads = 8;

struct load_result {
    stint::profiler_stats stats;
    std::uint64_t issued_per_thread = 0;
    stint_test::trace_counts trace;
};

// Runs the load under `budget` and checks everything that must hold whatever the budget.
load_result run_load(std::size_t budget, std::uint64_t scopes_per_thread) {
    stint_test::temp_dir dir;
    stint::profiler<> prof({.buffer_budget_bytes = budget});
    std::vector<std::uint64_t> tids(load_threads);
    prof.start();
    {
        std::vector<std::thread> threads;
        for (int t = 0; t < load_threads; ++t) {
            threads.emplace_back([&tids, t, scopes_per_thread] {
                tids[static_cast<std::size_t>(t)] = stint::detail::current_os_tid();
                for (std::uint64_t i = 0; i < scopes_per_thread; ++i) {
                    STINT_SCOPE("L0");
                    STINT_SCOPE("L1");
                    STINT_SCOPE("L2");
                }
            });
        }
        for (std::thread& t : threads) t.join();
    }
    prof.stop();
    load_result result;
    result.stats = prof.stats();
    result.issued_per_thread = 3 * scopes_per_thread;
    const stint::event_list& events = prof.events();

    // Per thread: recorded + dropped == issued, exactly.
    std::uint64_t matched = 0;
    for (const stint::thread_info& info : events.threads()) {
        for (std::uint64_t tid : tids) {
            if (info.os_tid != tid) continue;
            ++matched;
            CHECK(info.recorded + info.dropped == result.issued_per_thread);
        }
    }
    CHECK(matched == load_threads);
    CHECK(result.stats.recorded + result.stats.dropped == load_threads * result.issued_per_thread);

    // The nesting is the program's: L2 inside L1 inside L0, on the same thread; only a drop leaves
    // a scope without its parent.
    std::uint64_t orphans = 0;
    std::uint64_t program = 0;
    for (const stint::event& e : events) {
        if (e.kind == stint::event_kind::overhead) continue;
        ++program;
        const std::string_view expected_parent = e.name == "L2" ? "L1" : e.name == "L1" ? "L0" : "";
        if (e.parent == stint::no_index) {
            if (!expected_parent.empty()) ++orphans;
            continue;
        }
        const stint::event& parent = events[e.parent];
        REQUIRE(parent.name == expected_parent);
        REQUIRE(parent.thread == e.thread);
        REQUIRE(parent.start_ns <= e.start_ns);
        REQUIRE(e.end_ns <= parent.end_ns);
    }
    CHECK(program == result.stats.recorded);
    if (result.stats.dropped == 0) CHECK(orphans == 0);

    // The trace holds exactly the recorded events (parsed strictly, streaming).
    const std::string path = dir.file("load.json");
    prof.export_chrome_trace(path);
    result.trace = stint_test::count_trace_events(path);
    CHECK(result.trace.program_events == result.stats.recorded);
    CHECK(result.trace.overhead_events == result.stats.overhead_events);
    const nlohmann::json block = [&] {
        // The "stint" block comes before traceEvents: read the head of the file only.
        std::string head = stint_test::read_file(path).substr(0, 1 << 16);
        const std::size_t at = head.find("\"stint\": ");
        const std::size_t end = head.find("\n  \"traceEvents\"");
        REQUIRE(at != std::string::npos);
        REQUIRE(end != std::string::npos);
        head = head.substr(at + 9, end - at - 9);
        while (!head.empty() && (head.back() == ',' || head.back() == '\n')) head.pop_back();
        return nlohmann::json::parse(head);
    }();
    CHECK(block.at("recorded") == result.stats.recorded);
    CHECK(block.at("dropped") == result.stats.dropped);
    return result;
}

}  // namespace

TEST_CASE("load: 8 threads x N scopes 3 deep under a generous budget keep every record") {
    const std::uint64_t per_thread = stint_test::sized<std::uint64_t>(1'000'000, 20'000);
    // 24 bytes per record, chunks grow to 64 KiB: twice what the records need is generous.
    const load_result r = run_load(std::size_t{2} * load_threads * 3 * per_thread * 24 + (std::size_t{64} << 20),
                                   per_thread);
    CHECK(r.stats.dropped == 0);
    CHECK(r.stats.recorded == load_threads * r.issued_per_thread);
    MESSAGE("issued " << load_threads * r.issued_per_thread << ", recorded " << r.stats.recorded << ", dropped "
                      << r.stats.dropped << ", buffers " << r.stats.buffer_bytes << " bytes");
}

TEST_CASE("load: under a tight budget every record is kept or counted dropped, per thread") {
    const std::uint64_t per_thread = stint_test::sized<std::uint64_t>(1'000'000, 20'000);
    // A tenth of what the records need.
    const std::size_t budget = load_threads * 3 * per_thread * 24 / 10;
    const load_result r = run_load(budget, per_thread);
    CHECK(r.stats.dropped > 0);
    CHECK(r.stats.recorded > 0);
    CHECK(r.stats.buffer_bytes <= budget);
    MESSAGE("issued " << load_threads * r.issued_per_thread << ", recorded " << r.stats.recorded << ", dropped "
                      << r.stats.dropped << ", buffers " << r.stats.buffer_bytes << " of " << budget << " bytes");
}
