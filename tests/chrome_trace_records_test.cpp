// A timing-only window's Chrome trace written from its records, with no event list (design §8).

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <atomic>
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "nesting_workload.hpp"
#include "stint/stint.hpp"
#include "test_util.hpp"
#include "trace_from_records.hpp"

TEST_CASE("a timing-only window's trace from its records holds the events its event list's trace holds") {
    stint_test::temp_dir dir;
    stint::profiler<> prof;
    prof.start();
    // The threads take turns, so that their events interleave in time (the list's trace is in start
    // order; the one from the records goes thread by thread).
    std::atomic<int> turn{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < 3; ++t) {
        threads.emplace_back([&, t] {
            nesting::recorder r;
            for (int i = 0; i < 300; ++i) {
                while (turn.load() % 3 != t) std::this_thread::yield();
                nesting::iteration(r, i + t);
                ++turn;
            }
        });
    }
    {
        // Names a trace must escape, a runtime name of invalid UTF-8, and a scope open at stop (it
        // ends after it: in no window).
        const std::string quoted = "quote \" backslash \\ tab \t";
        const std::string invalid = "bad \xff\xfe utf-8";
        STINT_SCOPE_NAMED(quoted);
        STINT_SCOPE_NAMED(invalid);
    }
    for (auto& t : threads) t.join();  // threads that exit before the stop
    std::optional<stint::record_function> open_at_stop;
    open_at_stop.emplace("open at stop");
    prof.stop();
    open_at_stop.reset();
    REQUIRE(prof.stats().dropped == 0);

    const records_trace::compared both = records_trace::check_same_as_list(prof, dir);
    const nlohmann::json& trace = both.from_records;
    CHECK(records_trace::threads_contiguous(both.from_records));
    CHECK_FALSE(records_trace::threads_contiguous(both.from_list));  // the two paths did differ
    std::set<std::string> names;
    for (const auto& e : trace["traceEvents"]) names.insert(e["name"].get<std::string>());
    CHECK(names.count("quote \" backslash \\ tab \t") == 1);
    CHECK(names.count("bad \xEF\xBF\xBD\xEF\xBF\xBD utf-8") == 1);
    CHECK(names.count("open at stop") == 0);
    CHECK(trace["stint"]["threads"].size() == 4);
}

TEST_CASE("records dropped over the budget are counted alike in a trace from records") {
    stint_test::temp_dir dir;
    stint::profiler<> prof({.buffer_budget_bytes = 64 * 1024});
    prof.start();
    for (int i = 0; i < 20'000; ++i) {
        STINT_SCOPE("outer");
        STINT_SCOPE("inner");
    }
    prof.stop();
    REQUIRE(prof.stats().dropped > 0);
    const nlohmann::json trace = records_trace::check_same_as_list(prof, dir).from_records;
    CHECK(trace["stint"]["dropped"].get<std::uint64_t>() == prof.stats().dropped);
    CHECK(trace["stint"]["recorded"].get<std::uint64_t>() == prof.stats().recorded);
}

TEST_CASE("event ids are the records' order, from 1, continuing across windows") {
    stint::profiler<> prof;
    std::uint64_t next = 1;
    for (int window = 0; window < 3; ++window) {
        prof.start();
        std::thread other([] {
            for (int i = 0; i < 50; ++i) {
                STINT_SCOPE("other");
            }
        });
        for (int i = 0; i < 100; ++i) {
            STINT_SCOPE("outer");
            STINT_INSTANT("tick");
        }
        other.join();
        prof.stop();
        std::set<std::uint64_t> ids;
        for (const stint::event& e : prof.events()) ids.insert(e.id);
        REQUIRE(ids.size() == prof.events().size());
        CHECK(*ids.begin() == next);
        CHECK(*ids.rbegin() == next + ids.size() - 1);  // contiguous
        next += ids.size();
    }
}

TEST_CASE("a scheduled window's events stay readable after the next window begins") {
    stint_test::temp_dir dir;
    int saved = 0;
    stint::profiler<> prof({.schedule = stint::schedule({.wait = 0, .warmup = 0, .active = 1}),
                            .on_trace_ready = [&](stint::profiler<>& p) {
                                ++saved;
                                p.export_chrome_trace(dir.file("window" + std::to_string(saved) + ".json"));
                            }});
    prof.start();
    for (int step = 0; step < 3; ++step) {
        for (int i = 0; i <= step; ++i) {
            STINT_SCOPE("work");
        }
        prof.step();
    }
    REQUIRE(saved == 3);
    // The third window was saved at the last step and the fourth records: the third's events are read
    // from the list built before the fourth began.
    std::size_t work = 0;
    for (const stint::event& e : prof.events()) work += e.name == "work" ? 1 : 0;
    CHECK(work == 3);
    prof.stop();
    const nlohmann::json third = stint_test::read_json(dir.file("window3.json"));
    std::size_t written = 0;
    for (const auto& e : third["traceEvents"]) written += e["name"] == "work" ? 1 : 0;
    CHECK(written == 3);
}

TEST_CASE("windows whose records need the event list are written from it") {
    using shapes = stint::config<stint::record_shapes>;
    stint::profiler<shapes> prof;
    prof.start();
    for (int i = 0; i < 10; ++i) {
        STINT_OP(shapes, "aten::add", i, 2.0);
    }
    prof.stop();
    stint_test::temp_dir dir;
    prof.export_chrome_trace(dir.file("t.json"));
    const nlohmann::json trace = stint_test::read_json(dir.file("t.json"));
    std::size_t with_inputs = 0;
    for (const auto& e : trace["traceEvents"]) {
        if (e["name"] == "aten::add" && e["args"].contains("Input type")) ++with_inputs;
    }
    CHECK(with_inputs == 10);
}
