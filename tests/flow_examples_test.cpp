// The flow examples' own code (examples/thread_pool.cpp, examples/coroutine.cpp), compiled here without
// their main(): their traces are read back and every link checked.

#include <doctest/doctest.h>

#include <cstdint>
#include <map>
#include <set>
#include <string>

#define STINT_EXAMPLE_NO_MAIN
#include "../examples/coroutine.cpp"
#include "../examples/thread_pool.cpp"
#include "test_util.hpp"

TEST_CASE("the thread pool example's trace links each of 10,000 tasks on 4 workers to the scope that submitted it") {
    stint_test::temp_dir dir;
    const std::string path = dir.file("pool.json");
    stint::profiler<> prof;
    pool_example::run(prof, path, 10'000, 4);
    CHECK(prof.events().flows().size() == 10'000);
    CHECK(prof.events().unmatched().total() == 0);
    CHECK(prof.stats().dropped == 0);

    // Read back independently: every "s" has its "f", each inside a "submit" on the main thread and a
    // "pool::run" on a worker thread.
    const nlohmann::json trace = stint_test::read_json(path);
    std::map<std::uint64_t, std::vector<std::pair<double, double>>> spans;  // tid -> "submit"/"pool::run" spans
    std::map<std::uint64_t, std::string> span_name;
    std::map<std::uint64_t, nlohmann::json> begins;
    std::map<std::uint64_t, nlohmann::json> ends;
    for (const auto& e : trace.at("traceEvents")) {
        const std::string ph = e.at("ph");
        if (ph == "X" && (e.at("name") == "submit" || e.at("name") == "pool::run")) {
            const double ts = e.at("ts").get<double>();
            spans[e.at("tid").get<std::uint64_t>()].emplace_back(ts, ts + e.at("dur").get<double>());
            span_name[e.at("tid").get<std::uint64_t>()] = e.at("name");
        }
        if (ph == "s") CHECK(begins.emplace(e.at("id").get<std::uint64_t>(), e).second);
        if (ph == "f") CHECK(ends.emplace(e.at("id").get<std::uint64_t>(), e).second);
    }
    REQUIRE(begins.size() == 10'000);
    REQUIRE(ends.size() == 10'000);
    const auto bound_to = [&](const nlohmann::json& p) -> std::string {
        const auto tid = p.at("tid").get<std::uint64_t>();
        const double at = p.at("ts").get<double>();
        for (const auto& [from, to] : spans[tid]) {
            if (from <= at && at <= to) return span_name[tid];
        }
        return {};
    };
    std::set<std::uint64_t> worker_tids;
    std::size_t linked = 0;
    for (const auto& [id, s] : begins) {
        const auto f = ends.find(id);
        REQUIRE(f != ends.end());
        CHECK(f->second.at("bp") == "e");
        CHECK(s.at("cat") == f->second.at("cat"));
        CHECK(s.at("ts").get<double>() <= f->second.at("ts").get<double>());
        linked += bound_to(s) == "submit" && bound_to(f->second) == "pool::run" ? 1 : 0;
        worker_tids.insert(f->second.at("tid").get<std::uint64_t>());
        CHECK(s.at("tid") != f->second.at("tid"));
    }
    CHECK(linked == 10'000);
    // Run by the pool's workers (how many of the 4 the scheduler woke is its business, not stint's).
    CHECK_FALSE(worker_tids.empty());
    CHECK(worker_tids.size() <= 4);
    CHECK(trace.at("stint").at("unmatched").at("flow_begins") == 0);
    CHECK(trace.at("stint").at("unmatched").at("flow_ends") == 0);
}

TEST_CASE("the coroutine example's async spans cover each request's suspensions, across three threads") {
    stint_test::temp_dir dir;
    const std::string path = dir.file("coroutine.json");
    stint::profiler<> prof;
    coroutine_example::run(prof, path, 20);
    const stint::event_list& list = prof.events();
    REQUIRE(list.async_spans().size() == 20);
    CHECK(list.unmatched().total() == 0);
    std::map<std::uint32_t, std::string> thread_name;
    for (std::uint32_t t = 0; t < list.threads().size(); ++t) thread_name[t] = list.threads()[t].name;
    for (const stint::async_span& span : list.async_spans()) {
        REQUIRE(span.end != stint::no_index);
        const stint::event& begin = list[span.begin];
        const stint::event& end = list[span.end];
        CHECK(begin.name == "request");
        CHECK(thread_name[end.thread] == "cpu");
        CHECK(begin.thread != end.thread);
        CHECK(list.parent(begin)->name == "accept");
        // The I/O thread waits 300 us before resuming it: the span covers that suspension.
        CHECK(end.start_ns - begin.start_ns >= 300'000);
    }
    // Each "read" ran on the I/O thread while some request was suspended there, inside its span.
    std::size_t reads = 0;
    for (const stint::event& e : list) {
        if (e.name != "read") continue;
        ++reads;
        CHECK(thread_name[e.thread] == "io");
        bool covered = false;
        for (const stint::async_span& span : list.async_spans()) {
            covered = covered ||
                      (list[span.begin].start_ns <= e.start_ns && e.end_ns <= list[span.end].start_ns);
        }
        CHECK(covered);
    }
    CHECK(reads == 20);
    const stint::averaged_event_list avg = prof.key_averages();
    bool found = false;
    for (const stint::averaged_event& a : avg) {
        if (a.key != "request") continue;
        found = true;
        CHECK(a.count == 20);
        CHECK(a.self_cpu_time_total == 0);
        CHECK(a.cpu_time_total >= 20 * 300.0);
    }
    CHECK(found);
    const nlohmann::json trace = stint_test::read_json(path);
    std::size_t b = 0;
    std::size_t e = 0;
    for (const auto& ev : trace.at("traceEvents")) {
        b += ev.at("ph") == "b" ? 1 : 0;
        e += ev.at("ph") == "e" ? 1 : 0;
    }
    CHECK(b == 20);
    CHECK(e == 20);
}
