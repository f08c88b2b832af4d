#include <doctest/doctest.h>

#include <atomic>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "stint/stint.hpp"
#include "test_util.hpp"

namespace {

void record_scopes(int n) {
    for (int i = 0; i < n; ++i) {
        STINT_SCOPE("work");
    }
}

struct run_result {
    std::uint64_t recorded = 0;
    std::uint64_t dropped = 0;
    std::size_t events = 0;  ///< the program's (stint's own overhead events apart)
    std::uint64_t overhead = 0;
    std::uint64_t per_thread_recorded = 0;
    std::uint64_t per_thread_dropped = 0;
};

run_result run_threads(int threads, int scopes_per_thread, std::size_t budget, const std::string& trace_path) {
    stint::profiler<> prof({.buffer_budget_bytes = budget});
    prof.start();
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t) pool.emplace_back(record_scopes, scopes_per_thread);
    for (auto& t : pool) t.join();
    prof.stop();
    run_result r;
    r.recorded = prof.stats().recorded;
    r.dropped = prof.stats().dropped;
    r.events = stint_test::program_event_count(prof.events());
    r.overhead = prof.stats().overhead_events;
    for (const auto& t : prof.events().threads()) {
        r.per_thread_recorded += t.recorded;
        r.per_thread_dropped += t.dropped;
    }
    prof.export_chrome_trace(trace_path);
    return r;
}

}  // namespace

TEST_CASE("8 threads x 200,000 scopes: recorded + dropped == issued exactly") {
    stint_test::temp_dir dir;
    constexpr int threads = 8;
    constexpr int scopes = 200'000;
    constexpr std::uint64_t issued = std::uint64_t{threads} * scopes;

    SUBCASE("an ample budget drops nothing") {
        const auto r = run_threads(threads, scopes, std::size_t{1} << 30, dir.file("ample.json"));
        CHECK(r.recorded == issued);
        CHECK(r.dropped == 0);
        CHECK(r.events == issued);
        CHECK(r.per_thread_recorded == issued);
        const auto trace = stint_test::read_json(dir.file("ample.json"));
        CHECK(trace["stint"]["recorded"] == issued);
        CHECK(trace["stint"]["dropped"] == 0);
        CHECK(stint_test::timed_events(trace).size() == issued);
        // Each thread registered once, then took chunks of 1, 2, 4 ... 64 KiB, each an overhead record.
        CHECK(r.overhead == threads * stint_test::overhead_of_new_thread(scopes));
        CHECK(r.overhead == threads * 79U);
        CHECK(stint_test::all_timed_events(trace).size() == issued + r.overhead);
    }
    SUBCASE("a tiny budget drops, counts every drop, and still writes a valid trace") {
        const auto r = run_threads(threads, scopes, 256 * 1024, dir.file("tiny.json"));
        CHECK(r.recorded + r.dropped == issued);
        CHECK(r.dropped > 0);
        CHECK(r.recorded > 0);
        CHECK(r.events == r.recorded);
        CHECK(r.per_thread_recorded == r.recorded);
        CHECK(r.per_thread_dropped == r.dropped);
        const auto trace = stint_test::read_json(dir.file("tiny.json"));
        CHECK(trace["stint"]["recorded"].get<std::uint64_t>() + trace["stint"]["dropped"].get<std::uint64_t>() ==
              issued);
        CHECK(stint_test::timed_events(trace).size() == r.recorded);
        std::uint64_t per_thread = 0;
        for (const auto& t : trace["stint"]["threads"]) per_thread += t["dropped"].get<std::uint64_t>();
        CHECK(per_thread == r.dropped);
    }
}

TEST_CASE("1,000 short-lived threads x 10 scopes: every event, distinct ids, thread names") {
    stint_test::temp_dir dir;
    stint::profiler<> prof;
    prof.start();
    for (int batch = 0; batch < 10; ++batch) {
        std::vector<std::thread> threads;
        for (int t = 0; t < 100; ++t) {
            threads.emplace_back([batch, t] {
                stint::set_thread_name("worker-" + std::to_string(batch * 100 + t));
                record_scopes(10);
            });
        }
        for (auto& t : threads) t.join();
    }
    prof.stop();
    CHECK(stint_test::program_event_count(prof.events()) == 10'000);
    // set_thread_name registered each thread; its first record then took a chunk (no chunk was set
    // aside: the thread did not exist at start()).
    CHECK(stint_test::overhead_event_count(prof.events(), "[stint] buffer chunk") == 1000);
    CHECK(prof.stats().overhead_events == 1000);
    CHECK(prof.stats().dropped == 0);
    const auto& threads = prof.events().threads();
    CHECK(threads.size() == 1000);
    std::set<std::uint64_t> tids;
    std::set<std::string> names;
    for (const auto& t : threads) {
        tids.insert(t.os_tid);
        names.insert(t.name);
        CHECK(t.recorded == 10);
    }
    CHECK(tids.size() == 1000);
    CHECK(names.size() == 1000);

    prof.export_chrome_trace(dir.file("threads.json"));
    const auto trace = stint_test::read_json(dir.file("threads.json"));
    std::set<std::string> exported_names;
    std::set<std::uint64_t> event_tids;
    for (const auto& e : trace["traceEvents"]) {
        if (e["ph"] == "M" && e["name"] == "thread_name") exported_names.insert(e["args"]["name"].get<std::string>());
        if (e["ph"] == "X") event_tids.insert(e["tid"].get<std::uint64_t>());
    }
    CHECK(exported_names == names);
    CHECK(event_tids == tids);
}

TEST_CASE("threads started before the session and exiting during it keep their events") {
    std::atomic<int> go{0};
    std::atomic<int> registered{0};
    std::vector<std::thread> threads;
    for (int i = 0; i < 4; ++i) {
        threads.emplace_back([&go, &registered] {
            record_scopes(1);  // registers before the session
            registered.fetch_add(1);
            while (go.load() == 0) std::this_thread::yield();
            record_scopes(100);
        });
    }
    while (registered.load() != 4) std::this_thread::yield();
    stint::profiler<> prof;
    prof.start();
    go.store(1);
    for (auto& t : threads) t.join();
    prof.stop();
    // Recording nothing before the session, they register during it (one overhead event each).
    CHECK(stint_test::program_event_count(prof.events()) == 400);
    CHECK(stint_test::overhead_event_count(prof.events(), "[stint] register thread") == 4);
    CHECK(prof.events().threads().size() == 4);
}

TEST_CASE("a thread that keeps recording across sessions records into each") {
    std::atomic<int> phase{0};
    std::atomic<int> done{0};
    std::thread worker([&] {
        for (int p = 1; p <= 2; ++p) {
            while (phase.load() != p) std::this_thread::yield();
            record_scopes(1000);
            done.store(p);
        }
    });
    stint::profiler<> prof;
    for (int p = 1; p <= 2; ++p) {
        prof.start();
        phase.store(p);
        while (done.load() != p) std::this_thread::yield();
        prof.stop();
        CHECK(stint_test::program_event_count(prof.events()) == 1000);
        // Registered in the first session, growing its chunks from 1 KiB (1 + 5 overhead records for
        // 1,000 records); the second gave it a 64 KiB chunk at start(): no slow path.
        CHECK(prof.stats().overhead_events == (p == 1 ? stint_test::overhead_of_new_thread(1000) : 0U));
        CHECK(prof.stats().overhead_events == (p == 1 ? 5U : 0U));
    }
    worker.join();
}
