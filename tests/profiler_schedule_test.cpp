// profiler::step() and schedules: windows, on_trace_ready, ProfilerStep#N, warmup, accumulation,
// per-window drop counts, the step tracker, disabled profilers, and exceptions from callbacks.
#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <limits>
#include <mutex>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "stint/stint.hpp"
#include "test_util.hpp"

namespace {

using stint::profiler_action;
using namespace stint_test::schedule_actions;  // N, W, R, S

using stint_test::warning_capture;

/// The numbers N of the events named "<prefix>N", sorted.
std::vector<std::int64_t> numbered(const stint::event_list& events, std::string_view prefix) {
    std::vector<std::int64_t> out;
    for (const stint::event& e : events) {
        if (e.name.starts_with(prefix)) out.push_back(std::stoll(std::string(e.name.substr(prefix.size()))));
    }
    std::sort(out.begin(), out.end());
    return out;
}
std::vector<std::int64_t> profiler_steps(const stint::event_list& events) { return numbered(events, "ProfilerStep#"); }
std::vector<std::int64_t> work_steps(const stint::event_list& events) { return numbered(events, "work#"); }

/// One iteration's work, named after the step it runs in.
void work(std::int64_t step) {
    stint::record_function rf("work#" + std::to_string(step));
    STINT_SCOPE("inner");
}

using stint_test::reference_actions;

/// The windows a profiler started at step 0 and stopped after `iterations` steps delivers: runs of
/// record steps, each closed by a RECORD_AND_SAVE step or by the stop.
std::vector<std::vector<std::int64_t>> reference_windows(const std::vector<profiler_action>& actions) {
    std::vector<std::vector<std::int64_t>> windows;
    std::vector<std::int64_t> current;
    for (std::size_t i = 0; i < actions.size(); ++i) {
        if (actions[i] == R || actions[i] == S) {
            current.push_back(static_cast<std::int64_t>(i));
            if (actions[i] == S) windows.push_back(std::exchange(current, {}));
        } else {
            current.clear();
        }
    }
    if (!current.empty()) windows.push_back(current);
    return windows;
}

struct window_seen {
    std::vector<std::int64_t> profiler_steps;
    std::vector<std::int64_t> work_steps;
    std::int64_t profiler_step_row_count = 0;
};

window_seen observe(stint::profiler<>& p) {
    window_seen w{profiler_steps(p.events()), work_steps(p.events()), 0};
    for (const auto& row : p.key_averages()) {
        if (row.key == "ProfilerStep*") w.profiler_step_row_count = row.count;
    }
    return w;
}

}  // namespace

TEST_CASE("the seed's schedule wait=1 warmup=1 active=2 over 8 steps saves twice and steps the tracker 8 times") {
    std::vector<window_seen> windows;
    const std::int64_t initial_step = stint::step_tracker::current_step();
    {
        stint::profiler<> p({
            .schedule = stint::schedule({.wait = 1, .warmup = 1, .active = 2}),
            .on_trace_ready = [&](stint::profiler<>& prof) { windows.push_back(observe(prof)); },
        });
        p.start();
        for (std::int64_t i = 0; i < 8; ++i) {
            work(i);
            p.step();
        }
        p.stop();
    }
    REQUIRE(windows.size() == 2);
    CHECK(windows[0].profiler_steps == std::vector<std::int64_t>{2, 3});
    CHECK(windows[0].work_steps == std::vector<std::int64_t>{2, 3});
    CHECK(windows[0].profiler_step_row_count == 2);  // key_averages folds them into ProfilerStep*
    CHECK(windows[1].profiler_steps == std::vector<std::int64_t>{6, 7});
    CHECK(windows[1].work_steps == std::vector<std::int64_t>{6, 7});
    CHECK(stint::step_tracker::current_step() == initial_step + 8);
}

TEST_CASE("windows and on_trace_ready calls match an independent reference for many schedules") {
    warning_capture quiet;  // warmup = 0 warns
    struct param_set {
        stint::schedule_options options;
        std::int64_t iterations;
    };
    const std::vector<param_set> sets = {
        {{.skip_first = 0, .wait = 1, .warmup = 1, .active = 2, .repeat = 0}, 8},
        {{.skip_first = 3, .wait = 2, .warmup = 1, .active = 4, .repeat = 2}, 21},
        {{.skip_first = 0, .wait = 0, .warmup = 0, .active = 1, .repeat = 0}, 5},
        {{.skip_first = 0, .wait = 0, .warmup = 1, .active = 3, .repeat = 2}, 12},
        {{.skip_first = 2, .wait = 1, .warmup = 0, .active = 2, .repeat = 3}, 15},
        {{.skip_first = 1, .wait = 3, .warmup = 2, .active = 1, .repeat = 1}, 7},
        {{.skip_first = 0, .wait = 1, .warmup = 1, .active = 4, .repeat = 0}, 4},  // stopped mid-window
        {{.skip_first = 0, .wait = 0, .warmup = 0, .active = 3, .repeat = 0}, 4},  // records from step 0
        {{.skip_first = 0, .wait = 2, .warmup = 2, .active = 2, .repeat = 1}, 10},
    };
    for (const param_set& set : sets) {
        const auto& o = set.options;
        CAPTURE(o.skip_first);
        CAPTURE(o.wait);
        CAPTURE(o.warmup);
        CAPTURE(o.active);
        CAPTURE(o.repeat);
        CAPTURE(set.iterations);
        const auto actions = reference_actions(o, static_cast<std::size_t>(set.iterations + 1));
        const auto expected = reference_windows(actions);

        std::vector<window_seen> windows;
        stint::profiler<> p({
            .schedule = stint::schedule(o),
            .on_trace_ready = [&](stint::profiler<>& prof) { windows.push_back(observe(prof)); },
        });
        p.start();
        for (std::int64_t i = 0; i < set.iterations; ++i) {
            CHECK(p.current_action() == actions[static_cast<std::size_t>(i)]);
            work(i);
            p.step();
        }
        p.stop();
        CHECK(p.step_num() == set.iterations);
        REQUIRE(windows.size() == expected.size());
        for (std::size_t w = 0; w < expected.size(); ++w) {
            CAPTURE(w);
            CHECK(windows[w].profiler_steps == expected[w]);
            std::vector<std::int64_t> worked = expected[w];
            std::erase(worked, set.iterations);  // the step stop() ends has no work
            CHECK(windows[w].work_steps == worked);
            CHECK(windows[w].profiler_step_row_count == static_cast<std::int64_t>(expected[w].size()));
        }
    }
}

TEST_CASE("step() drives the schedule of a profiler that was never started") {
    // test_profiler_cache_lookup_profiler_step: 10 steps, wait=2 warmup=2 active=2 repeat=1, no start.
    stint::profiler<> p({.schedule = stint::schedule({.wait = 2, .warmup = 2, .active = 2, .repeat = 1})});
    for (std::int64_t i = 0; i < 10; ++i) {
        work(i);
        p.step();
    }
    CHECK_FALSE(p.events().empty());
    CHECK(profiler_steps(p.events()) == std::vector<std::int64_t>{4, 5});
    CHECK(work_steps(p.events()) == std::vector<std::int64_t>{4, 5});
    std::size_t inner = 0;
    for (const auto& e : p.events()) inner += e.name == "inner" ? 1 : 0;
    CHECK(inner == 2);
}

TEST_CASE("is_recording is false in wait and warmup steps and true in record steps") {
    const stint::schedule_options o{.skip_first = 1, .wait = 1, .warmup = 2, .active = 2, .repeat = 2};
    const auto actions = reference_actions(o, 16);
    std::vector<std::vector<std::int64_t>> windows;  // each saved window's steps, as the profiler recorded them
    stint::profiler<> p({.schedule = stint::schedule(o),
                         .on_trace_ready = [&](stint::profiler<>& q) { windows.push_back(profiler_steps(q.events())); }});
    p.start();
    for (std::size_t i = 0; i < 15; ++i) {
        const profiler_action a = actions[i];
        CAPTURE(i);
        CAPTURE(a);
        const bool records = a == R || a == S;
        CHECK(stint::is_recording() == records);
        CHECK(p.is_running() == records);
        p.step();
    }
    p.stop();
    CHECK_FALSE(stint::is_recording());
    // Step 0 skipped; then twice: wait (1), warmup (2, 3), record (4, 5); none after the repeats.
    CHECK(windows == std::vector<std::vector<std::int64_t>>{{4, 5}, {9, 10}});
}

TEST_CASE("events recorded during wait and warmup steps never reach a saved window, from any thread") {
    // A second thread records continuously; each window holds only what it recorded while the window
    // was open, bracketed by wall-clock readings taken around the step() calls that open and close it.
    std::atomic<bool> done{false};
    std::thread background([&] {
        while (!done.load(std::memory_order_relaxed)) {
            STINT_SCOPE("background");
            std::this_thread::sleep_for(std::chrono::microseconds(50));
        }
    });
    const auto wall_ns = [] {
        return std::chrono::duration_cast<std::chrono::nanoseconds>(
                   std::chrono::system_clock::now().time_since_epoch())
            .count();
    };
    struct window_bounds {
        std::int64_t open_before = 0;
        std::int64_t close_after = 0;
        std::int64_t earliest = 0;
        std::int64_t latest = 0;
        std::size_t background_events = 0;
        std::vector<std::int64_t> steps;
    };
    std::vector<window_bounds> windows;
    stint::profiler<> p({
        .schedule = stint::schedule({.wait = 2, .warmup = 2, .active = 2, .repeat = 2}),
        .on_trace_ready =
            [&](stint::profiler<>& prof) {
                window_bounds w;
                w.earliest = std::numeric_limits<std::int64_t>::max();
                w.latest = std::numeric_limits<std::int64_t>::min();
                for (const auto& e : prof.events()) {
                    if (e.name != "background") continue;
                    ++w.background_events;
                    w.earliest = std::min(w.earliest, prof.events().base_time_ns() + e.start_ns);
                    w.latest = std::max(w.latest, prof.events().base_time_ns() + e.end_ns);
                }
                w.steps = profiler_steps(prof.events());
                windows.push_back(w);
            },
    });
    std::vector<std::int64_t> opened_at;  // wall time before the step() that opened each window
    for (std::int64_t i = 0; i < 14; ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
        const std::int64_t before_step = wall_ns();
        const bool was_running = p.is_running();
        const std::size_t windows_before = windows.size();
        p.step();
        if (!was_running && p.is_running()) opened_at.push_back(before_step);
        if (windows.size() > windows_before) windows.back().close_after = wall_ns();
    }
    done = true;
    background.join();
    REQUIRE(windows.size() == 2);
    REQUIRE(opened_at.size() == 2);
    // Calibration error between the tick clock and the wall clock stays far below this slack; a wait
    // or warmup step lasts 2 ms, so an event from one would fall outside.
    constexpr std::int64_t slack_ns = 500'000;
    for (std::size_t w = 0; w < 2; ++w) {
        CAPTURE(w);
        windows[w].open_before = opened_at[w];
        CHECK(windows[w].steps == (w == 0 ? std::vector<std::int64_t>{4, 5} : std::vector<std::int64_t>{10, 11}));
        REQUIRE(windows[w].background_events > 0);
        CHECK(windows[w].earliest >= windows[w].open_before - slack_ns);
        CHECK(windows[w].latest <= windows[w].close_after + slack_ns);
    }
}

TEST_CASE("a window's drop counters are its own") {
    std::vector<stint::profiler_stats> stats;
    std::vector<std::uint64_t> list_dropped;
    // One 64 KiB chunk per window: 10,000 records overflow it, 10 do not.
    stint::profiler<> p({
        .schedule = stint::schedule({.wait = 1, .warmup = 1, .active = 1, .repeat = 2}),
        .on_trace_ready =
            [&](stint::profiler<>& prof) {
                stats.push_back(prof.stats());
                list_dropped.push_back(prof.events().dropped());
            },
        .buffer_budget_bytes = 64 * 1024,
    });
    for (int i = 0; i < 6; ++i) {
        const int scopes = i == 2 ? 10'000 : 10;  // step 2 is the first window, step 5 the second
        for (int k = 0; k < scopes; ++k) {
            STINT_SCOPE("leaf");
        }
        p.step();
    }
    REQUIRE(stats.size() == 2);
    CHECK(stats[0].dropped > 0);
    CHECK(stats[0].recorded + stats[0].dropped == 10'000 + 1);  // + ProfilerStep#2
    CHECK(list_dropped[0] == stats[0].dropped);
    CHECK(stats[1].dropped == 0);
    CHECK(stats[1].recorded == 10 + 1);
    CHECK(list_dropped[1] == 0);
}

TEST_CASE("accumulate_events keeps earlier windows in events() while exports hold the last window") {
    stint_test::temp_dir dir;
    for (const bool accumulate : {false, true}) {
        CAPTURE(accumulate);
        int saved = 0;
        stint::profiler<> p({
            .schedule = stint::schedule({.wait = 1, .warmup = 1, .active = 2, .repeat = 2}),
            .on_trace_ready =
                [&](stint::profiler<>& prof) {
                    ++saved;
                    prof.export_chrome_trace(dir.file("window" + std::to_string(saved) + ".json"));
                },
            .accumulate_events = accumulate,
        });
        for (std::int64_t i = 0; i < 8; ++i) {
            work(i);
            p.step();
        }
        REQUIRE(saved == 2);
        const std::vector<std::int64_t> last{6, 7};
        const std::vector<std::int64_t> both{2, 3, 6, 7};
        CHECK(work_steps(p.events()) == (accumulate ? both : last));
        CHECK(profiler_steps(p.events()) == (accumulate ? both : last));
        std::int64_t row = 0;
        for (const auto& r : p.key_averages()) {
            if (r.key == "ProfilerStep*") row = r.count;
        }
        CHECK(row == (accumulate ? 4 : 2));
        // Ids stay unique across windows.
        std::vector<std::uint64_t> ids;
        for (const auto& e : p.events()) ids.push_back(e.id);
        std::sort(ids.begin(), ids.end());
        CHECK(std::adjacent_find(ids.begin(), ids.end()) == ids.end());
        // Each exported trace holds its own window only.
        for (int w = 1; w <= 2; ++w) {
            const auto trace = stint_test::read_json(dir.file("window" + std::to_string(w) + ".json"));
            std::vector<std::string> names;
            for (const auto& e : stint_test::timed_events(trace)) {
                const std::string name = e["name"];
                if (name.starts_with("ProfilerStep#")) names.push_back(name);
            }
            std::sort(names.begin(), names.end());
            CHECK(names == (w == 1 ? std::vector<std::string>{"ProfilerStep#2", "ProfilerStep#3"}
                                   : std::vector<std::string>{"ProfilerStep#6", "ProfilerStep#7"}));
        }
    }
}

TEST_CASE("a profiler stopped in the middle of an active window delivers that partial window once") {
    std::vector<window_seen> windows;
    {
        stint::profiler<> p({
            .schedule = stint::schedule({.wait = 1, .warmup = 1, .active = 4}),
            .on_trace_ready = [&](stint::profiler<>& prof) { windows.push_back(observe(prof)); },
        });
        p.start();
        for (std::int64_t i = 0; i < 3; ++i) {
            work(i);
            p.step();
        }
        work(3);
        p.stop();
        CHECK_FALSE(stint::is_recording());
        p.stop();  // nothing more to deliver
        REQUIRE(windows.size() == 1);
        CHECK(windows[0].profiler_steps == std::vector<std::int64_t>{2, 3});
        CHECK(windows[0].work_steps == std::vector<std::int64_t>{2, 3});
    }
    CHECK(windows.size() == 1);  // nor at destruction
}

TEST_CASE("a profiler destroyed in an active window delivers it") {
    int saved = 0;
    {
        stint::profiler<> p({
            .schedule = stint::schedule({.active = 3}),
            .on_trace_ready =
                [&](stint::profiler<>& prof) {
                    ++saved;
                    CHECK(profiler_steps(prof.events()) == std::vector<std::int64_t>{0, 1});
                },
        });
        p.start();
        p.step();
    }
    CHECK(saved == 1);
    CHECK_FALSE(stint::is_recording());
}

TEST_CASE("stop() in a warmup step records nothing, delivers nothing and keeps the last window") {
    int saved = 0;
    stint::profiler<> p({
        .schedule = stint::schedule({.wait = 1, .warmup = 2, .active = 1}),
        .on_trace_ready = [&](stint::profiler<>&) { ++saved; },
    });
    p.start();
    for (std::int64_t i = 0; i < 6; ++i) {  // window at step 3; steps 5 and 6 warm up
        work(i);
        p.step();
    }
    CHECK(p.current_action() == W);
    CHECK_FALSE(stint::is_recording());
    p.stop();
    CHECK(saved == 1);
    CHECK(work_steps(p.events()) == std::vector<std::int64_t>{3});
    // The dropped warmup does not keep the next profiler from recording.
    stint::profiler<> next;
    next.start();
    next.stop();
}

TEST_CASE("without a schedule, on_trace_ready fires once at stop and no step is annotated") {
    int saved = 0;
    stint::profiler<> p({.on_trace_ready = [&](stint::profiler<>& prof) {
        ++saved;
        CHECK(work_steps(prof.events()) == std::vector<std::int64_t>{0, 1, 2});
    }});
    p.start();
    for (std::int64_t i = 0; i < 3; ++i) {
        work(i);
        p.step();  // steps the tracker only
        CHECK(p.is_running());
    }
    p.stop();
    CHECK(saved == 1);
    CHECK(profiler_steps(p.events()).empty());
    CHECK(p.step_num() == 3);
}

TEST_CASE("a custom schedule's incorrect transitions warn as torch does and deliver nothing") {
    warning_capture warnings;
    // 0 NONE, 1 WARMUP, 2 NONE, 3 RECORD, 4 WARMUP, 5 RECORD, 6 NONE ...
    const std::vector<profiler_action> plan{N, W, N, R, W, R, N};
    int saved = 0;
    stint::profiler<> p({
        .schedule = [&](std::int64_t step) { return step < 7 ? plan[static_cast<std::size_t>(step)] : N; },
        .on_trace_ready = [&](stint::profiler<>&) { ++saved; },
    });
    for (std::int64_t i = 0; i < 8; ++i) {
        work(i);
        p.step();
    }
    CHECK(warnings.seen() == std::vector<std::string>{"Incorrect schedule: WARMUP followed by NONE",
                                                      "Incorrect schedule: RECORD followed by WARMUP",
                                                      "Incorrect schedule: RECORD followed by NONE"});
    CHECK(saved == 0);
    // A window stopped without RECORD_AND_SAVE still replaces the results, as torch's stop_trace does.
    CHECK(work_steps(p.events()) == std::vector<std::int64_t>{5});
}

TEST_CASE("an on_trace_ready that throws propagates from step() and stop(), and the schedule goes on") {
    int calls = 0;
    stint::profiler<> p({
        .schedule = stint::schedule({.wait = 1, .warmup = 1, .active = 2}),
        .on_trace_ready =
            [&](stint::profiler<>& prof) {
                ++calls;
                CHECK_FALSE(profiler_steps(prof.events()).empty());
                throw std::runtime_error("handler failed " + std::to_string(calls));
            },
    });
    p.start();
    for (std::int64_t i = 0; i < 10; ++i) {
        work(i);
        if (i == 3 || i == 7) {
            CHECK_THROWS_WITH_AS(p.step(), ("handler failed " + std::to_string(i == 3 ? 1 : 2)).c_str(),
                                 std::runtime_error);
        } else {
            p.step();
        }
        CHECK(p.step_num() == i + 1);
    }
    CHECK(calls == 2);
    // Step 10 records (the third window): the profiler kept to the schedule after each throw.
    CHECK(stint::is_recording());
    CHECK_THROWS_WITH_AS(p.stop(), "handler failed 3", std::runtime_error);
    CHECK_FALSE(stint::is_recording());
    CHECK(profiler_steps(p.events()) == std::vector<std::int64_t>{10});
    p.stop();  // stopped: nothing more
    CHECK(calls == 3);
}

TEST_CASE("calling step(), start() or stop() from on_trace_ready is a clear error") {
    for (const std::string call : {"step()", "start()", "stop()"}) {
        CAPTURE(call);
        stint::profiler<> p({
            .schedule = stint::schedule({.warmup = 1, .active = 1, .repeat = 1}),
            .on_trace_ready =
                [&](stint::profiler<>& prof) {
                    if (call == "step()") prof.step();
                    if (call == "start()") prof.start();
                    if (call == "stop()") prof.stop();
                },
        });
        p.step();
        CHECK_THROWS_WITH_AS(p.step(), ("stint: " + call + ": called from on_trace_ready; return from the callback first").c_str(),
                             std::logic_error);
        CHECK(p.step_num() == 2);
    }
}

TEST_CASE("a window that cannot open while another profiler records is an error, and later windows open") {
    stint::profiler<> other;
    int saved = 0;
    stint::profiler<> p({
        .schedule = stint::schedule({.wait = 1, .active = 1}),
        .on_trace_ready = [&](stint::profiler<>&) { ++saved; },
    });
    other.start();
    CHECK_THROWS_WITH_AS(p.step(), "stint: start(): a profiler is already recording in this process; stop it first",
                         std::logic_error);
    other.stop();
    p.step();  // step 2: waits
    p.step();  // step 3: records
    CHECK(p.is_running());
    p.step();
    CHECK(saved == 1);
}

TEST_CASE("each profiler steps the tracker as ProfilerStep: the seed's multiple steppers") {
    // test_kineto_profiler_multiple_steppers with a real profiler.
    constexpr std::int64_t niters = 8;
    const std::string requester = "profiler_schedule_test.yet_another_step";
    const std::int64_t initial_step = stint::step_tracker::current_step();
    for (std::int64_t i = 0; i < niters; ++i) stint::step_tracker::increment_step(requester);
    {
        stint::profiler<> p({.schedule = stint::schedule({.wait = 1, .warmup = 1, .active = 2})});
        for (std::int64_t i = 0; i < niters; ++i) {
            stint::step_tracker::increment_step(requester);
            p.step();
        }
        CHECK(stint::step_tracker::current_step() == initial_step + 2 * niters);
    }
    // The profiler left the tracker when destroyed.
    CHECK_FALSE(stint::step_tracker::erase_step_count(stint::step_tracker::profiler_step_name));
    CHECK(stint::step_tracker::erase_step_count(requester));
}

TEST_CASE("a profiler with enabled = false, or of stint::disabled, does nothing at all") {
    const std::int64_t initial_step = stint::step_tracker::current_step();
    int saved = 0;
    {
        stint::profiler<> off({
            .schedule = stint::schedule({.active = 1}),
            .on_trace_ready = [&](stint::profiler<>&) { ++saved; },
            .enabled = false,
        });
        off.start();
        CHECK_FALSE(stint::is_recording());
        CHECK_FALSE(off.is_running());
        work(0);
        off.step();
        off.step();
        off.add_metadata_json("ignored", "not json");
        off.stop();
        CHECK(off.events().empty());
        CHECK(off.step_num() == 0);
        CHECK_FALSE(stint::step_tracker::erase_step_count(stint::step_tracker::profiler_step_name));

        stint::profiler<stint::disabled> compiled_out({
            .schedule = stint::schedule({.active = 1}),
            .on_trace_ready = [&](stint::profiler<stint::disabled>&) { ++saved; },
        });
        compiled_out.start();
        CHECK_FALSE(stint::is_recording());
        compiled_out.step();
        compiled_out.stop();
        CHECK(compiled_out.events().empty());
    }
    CHECK(saved == 0);
    CHECK(stint::step_tracker::current_step() == initial_step);
}

TEST_CASE("with a schedule, results are readable while the next window records") {
    stint::profiler<> p({.schedule = stint::schedule({.active = 2})});
    p.start();
    work(0);
    p.step();
    CHECK(p.events().empty());  // nothing saved yet
    work(1);
    p.step();  // saves steps 0-1 and opens the next window
    CHECK(p.is_running());
    CHECK(work_steps(p.events()) == std::vector<std::int64_t>{0, 1});
    CHECK(p.stats().recorded == p.events().size());
    p.stop();
    CHECK(profiler_steps(p.events()) == std::vector<std::int64_t>{2});
}
