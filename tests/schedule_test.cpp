#include "stint/schedule.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <mutex>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#if defined(__unix__) || defined(__APPLE__)
#include <unistd.h>
#endif

#include "stint/common/warning.hpp"
#include "test_util.hpp"

namespace {

using stint::profiler_action;
using stint::detail::session_op;
using stint::detail::session_ops;
using stint::detail::transition_actions;

using namespace stint_test::schedule_actions;  // N, W, R, S

/// Installs a capturing warning handler for its lifetime, then puts the previous one back.
using stint_test::warning_capture;

using stint_test::reference_actions;

std::vector<profiler_action> run(const stint::schedule_fn& fn, std::int64_t steps) {
    std::vector<profiler_action> out;
    for (std::int64_t step = 0; step < steps; ++step) out.push_back(fn(step));
    return out;
}

std::string names(const std::vector<profiler_action>& actions) {
    std::string out;
    for (auto a : actions) out += std::string(stint::to_string(a)) + " ";
    return out;
}

std::string names(const session_ops& ops) {
    std::string out = "[";
    for (auto op : ops) out += std::string(stint::detail::to_string(op)) + " ";
    return out + "]";
}

/// What torch.profiler.profile does with a schedule: start() transits from NONE to schedule(0),
/// each step() from the previous action to schedule(++step_num), stop() to "stopped". Checks that the
/// session operations are legal in order and counts the trace_ready calls.
struct session_simulation {
    enum class state { idle, prepared, started };
    state current = state::idle;
    int trace_ready = 0;
    std::vector<std::int64_t> ready_at_step;
    bool legal = true;

    void apply(const session_ops& ops, std::int64_t step) {
        for (session_op op : ops) {
            switch (op) {
                case session_op::prepare_trace:
                    legal = legal && current == state::idle;
                    current = state::prepared;
                    break;
                case session_op::start_trace:
                    legal = legal && current == state::prepared;
                    current = state::started;
                    break;
                case session_op::stop_trace:
                    legal = legal && current == state::started;
                    current = state::idle;
                    break;
                case session_op::trace_ready:
                    legal = legal && current == state::idle;
                    ++trace_ready;
                    ready_at_step.push_back(step);
                    break;
            }
        }
    }

    template <typename Schedule>
    void drive(const Schedule& schedule, std::int64_t steps) {
        std::int64_t step_num = 0;
        profiler_action action = schedule(step_num);
        apply(transition_actions(N, action), step_num);
        for (std::int64_t i = 0; i < steps; ++i) {
            const profiler_action prev = action;
            action = schedule(++step_num);
            apply(transition_actions(prev, action), step_num);
        }
        apply(transition_actions(action, std::nullopt), step_num);
    }
};

}  // namespace

TEST_CASE("schedule reproduces torch's sequence for skip_first=3 wait=2 warmup=1 active=4 repeat=2") {
    const auto fn = stint::schedule({.skip_first = 3, .wait = 2, .warmup = 1, .active = 4, .repeat = 2});
    const std::vector<profiler_action> expected{
        N, N, N,     // steps 0-2    skip_first=3
        N, N,        // steps 3-4    wait=2
        W,           // step  5      warmup=1
        R, R, R, S,  // steps 6-9    active=4 (cycle 1)
        N, N,        // steps 10-11  wait
        W,           // step  12
        R, R, R, S,  // steps 13-16  active (cycle 2)
        N, N, N, N,  // steps 17-20  after repeat=2
    };
    const auto actual = run(fn, 21);
    CHECK_MESSAGE(actual == expected, names(actual));
}

TEST_CASE("schedule with warmup=0 warns torch's text once per process") {
    const std::string text = "Profiler won't be using warmup, this can skew profiler results";
    const bool warned_before = stint::detail::warned_once(stint::schedule_fn::warmup_warning_key);
    warning_capture capture;
    (void)stint::schedule({.wait = 1, .warmup = 0, .active = 2});
    CHECK(capture.count(text) == (warned_before ? 0U : 1U));
    CHECK(stint::detail::warned_once(stint::schedule_fn::warmup_warning_key));
    (void)stint::schedule({.wait = 0, .warmup = 0, .active = 1});
    (void)stint::schedule({.skip_first = 1, .wait = 3, .warmup = 0, .active = 5, .repeat = 2});
    CHECK(capture.count(text) == (warned_before ? 0U : 1U));
    CHECK(capture.seen().size() == capture.count(text));
}

TEST_CASE("schedule matches a step-by-step reference for many parameter sets") {
    const std::vector<stint::schedule_options> cases{
        {.skip_first = 0, .wait = 1, .warmup = 1, .active = 2, .repeat = 0},  // repeat 0: forever
        {.skip_first = 2, .wait = 3, .warmup = 2, .active = 5, .repeat = 0},
        {.skip_first = 40, .wait = 0, .warmup = 1, .active = 1, .repeat = 0},  // skip_first only matters
        {.skip_first = 7, .wait = 0, .warmup = 1, .active = 3, .repeat = 1},
        {.skip_first = 0, .wait = 2, .warmup = 1, .active = 1, .repeat = 3},  // active=1: SAVE at once
        {.skip_first = 0, .wait = 0, .warmup = 1, .active = 1, .repeat = 0},
        {.skip_first = 1, .wait = 1, .warmup = 3, .active = 2, .repeat = 4},
        {.skip_first = 3, .wait = 1, .warmup = 1, .active = 2, .repeat = 1},
        {.skip_first = 0, .wait = 10, .warmup = 10, .active = 10, .repeat = 2},
    };
    for (const auto& o : cases) {
        CAPTURE(o.skip_first);
        CAPTURE(o.wait);
        CAPTURE(o.warmup);
        CAPTURE(o.active);
        CAPTURE(o.repeat);
        const auto actual = run(stint::schedule(o), 100);
        const auto expected = reference_actions(o, 100);
        CHECK_MESSAGE(actual == expected, names(actual));
    }
}

TEST_CASE("schedule with repeat=0 keeps cycling for as long as the profiler steps") {
    const auto fn = stint::schedule({.wait = 1, .warmup = 1, .active = 2});
    int saves = 0;
    for (std::int64_t step = 0; step < 100; ++step) saves += fn(step) == S ? 1 : 0;
    CHECK(saves == 25);
    CHECK(fn(1'000'000'003) == S);
    CHECK(fn(std::numeric_limits<std::int64_t>::max()) == S);  // max % 4 == 3
}

TEST_CASE("schedule with warmup=0 and active=1 saves at every step after the wait") {
    warning_capture capture;
    const auto fn = stint::schedule({.skip_first = 2, .wait = 0, .warmup = 0, .active = 1, .repeat = 3});
    const auto actual = run(fn, 8);
    CHECK(actual == std::vector<profiler_action>{N, N, S, S, S, N, N, N});
}

TEST_CASE("schedule gives NONE for negative steps") {
    const auto fn = stint::schedule({.wait = 0, .warmup = 1, .active = 2});
    CHECK(fn(0) == W);
    CHECK(fn(-1) == N);
    CHECK(fn(-3) == N);
    CHECK(fn(std::numeric_limits<std::int64_t>::min()) == N);
}

TEST_CASE("schedule keeps its options and copies behave the same") {
    const auto fn = stint::schedule({.skip_first = 3, .wait = 2, .warmup = 1, .active = 4, .repeat = 2});
    CHECK(fn.options().skip_first == 3);
    CHECK(fn.options().wait == 2);
    CHECK(fn.options().warmup == 1);
    CHECK(fn.options().active == 4);
    CHECK(fn.options().repeat == 2);
    const stint::schedule_fn copy = fn;
    CHECK(run(copy, 21) == run(fn, 21));
}

TEST_CASE("schedule rejects every invalid argument with the values and the rule") {
    const std::string rule =
        "need wait >= 0, warmup >= 0, active > 0, repeat >= 0, skip_first >= 0";
    SUBCASE("active = 0") {
        CHECK_THROWS_WITH_AS(stint::schedule({.wait = 1, .warmup = 1, .active = 0}),
                             ("stint: schedule(): invalid arguments (skip_first=0, wait=1, warmup=1, active=0, "
                              "repeat=0): " + rule).c_str(),
                             std::invalid_argument);
    }
    SUBCASE("active < 0") {
        CHECK_THROWS_WITH_AS(stint::schedule({.wait = 1, .warmup = 1, .active = -2}),
                             ("stint: schedule(): invalid arguments (skip_first=0, wait=1, warmup=1, active=-2, "
                              "repeat=0): " + rule).c_str(),
                             std::invalid_argument);
    }
    SUBCASE("wait < 0") {
        CHECK_THROWS_WITH_AS(stint::schedule({.wait = -1, .warmup = 1, .active = 1}),
                             ("stint: schedule(): invalid arguments (skip_first=0, wait=-1, warmup=1, active=1, "
                              "repeat=0): " + rule).c_str(),
                             std::invalid_argument);
    }
    SUBCASE("warmup < 0") {
        CHECK_THROWS_WITH_AS(stint::schedule({.wait = 1, .warmup = -1, .active = 1}),
                             ("stint: schedule(): invalid arguments (skip_first=0, wait=1, warmup=-1, active=1, "
                              "repeat=0): " + rule).c_str(),
                             std::invalid_argument);
    }
    SUBCASE("repeat < 0") {
        CHECK_THROWS_WITH_AS(stint::schedule({.wait = 1, .warmup = 1, .active = 1, .repeat = -1}),
                             ("stint: schedule(): invalid arguments (skip_first=0, wait=1, warmup=1, active=1, "
                              "repeat=-1): " + rule).c_str(),
                             std::invalid_argument);
    }
    SUBCASE("skip_first < 0") {
        CHECK_THROWS_WITH_AS(stint::schedule({.skip_first = -5, .wait = 1, .warmup = 1, .active = 1}),
                             ("stint: schedule(): invalid arguments (skip_first=-5, wait=1, warmup=1, active=1, "
                              "repeat=0): " + rule).c_str(),
                             std::invalid_argument);
    }
    SUBCASE("a cycle longer than std::int64_t can count") {
        constexpr auto max = std::numeric_limits<std::int64_t>::max();
        CHECK_THROWS_WITH_AS(stint::schedule({.wait = max, .warmup = 1, .active = 1}),
                             fmt::format("stint: schedule(): invalid arguments (skip_first=0, wait={}, warmup=1, "
                                         "active=1, repeat=0): wait + warmup + active must fit in std::int64_t",
                                         max)
                                 .c_str(),
                             std::invalid_argument);
        CHECK_THROWS_AS(stint::schedule({.wait = 1, .warmup = 1, .active = max}), std::invalid_argument);
        CHECK_NOTHROW(stint::schedule({.wait = max - 2, .warmup = 1, .active = 1}));
    }
    SUBCASE("the constructor checks too") {
        CHECK_THROWS_AS(stint::schedule_fn({.active = 0}), std::invalid_argument);
    }
}

TEST_CASE("schedule with a warmup does not warn") {
    warning_capture capture;
    (void)stint::schedule({.wait = 1, .warmup = 1, .active = 2});
    (void)stint::schedule({.skip_first = 2, .wait = 0, .warmup = 3, .active = 1, .repeat = 1});
    CHECK(capture.seen().empty());
}

TEST_CASE("schedule throws before it warns about warmup") {
    warning_capture capture;
    CHECK_THROWS_AS(stint::schedule({.wait = 1, .warmup = 0, .active = 0}), std::invalid_argument);
    CHECK(capture.seen().empty());
}

TEST_CASE("profiler_action has torch's names and values") {
    CHECK(static_cast<int>(N) == 0);
    CHECK(static_cast<int>(W) == 1);
    CHECK(static_cast<int>(R) == 2);
    CHECK(static_cast<int>(S) == 3);
    CHECK(stint::to_string(N) == "NONE");
    CHECK(stint::to_string(W) == "WARMUP");
    CHECK(stint::to_string(R) == "RECORD");
    CHECK(stint::to_string(S) == "RECORD_AND_SAVE");
    CHECK(stint::to_string(static_cast<profiler_action>(9)) == "UNKNOWN");
    static_assert(stint::to_string(profiler_action::record_and_save) == "RECORD_AND_SAVE");

    CHECK(fmt::format("{}", W) == "WARMUP");
    CHECK(fmt::format("[{:>8}]", R) == "[  RECORD]");
    std::ostringstream out;
    out << S << ' ' << N;
    CHECK(out.str() == "RECORD_AND_SAVE NONE");
}

TEST_CASE("schedule_checker warns about the three transitions torch calls incorrect") {
    warning_capture capture;
    stint::schedule_checker checker;
    for (auto prev : {N, W, R, S}) {
        for (auto next : {N, W, R, S}) checker.observe(prev, next);
    }
    CHECK(capture.seen() == std::vector<std::string>{
                                "Incorrect schedule: WARMUP followed by NONE",
                                "Incorrect schedule: RECORD followed by NONE",
                                "Incorrect schedule: RECORD followed by WARMUP",
                            });
}

TEST_CASE("schedule_checker reports each incorrect transition once per checker") {
    warning_capture capture;
    stint::schedule_checker checker;
    for (int i = 0; i < 5; ++i) {
        checker.observe(R, N);
        checker.observe(R, R);
    }
    CHECK(capture.seen() == std::vector<std::string>{"Incorrect schedule: RECORD followed by NONE"});

    stint::schedule_checker another;
    another.observe(R, N);
    another.observe(W, N);
    CHECK(capture.count("Incorrect schedule: RECORD followed by NONE") == 2);
    CHECK(capture.count("Incorrect schedule: WARMUP followed by NONE") == 1);
}

TEST_CASE("schedule_checker is silent for every schedule torch's schedule() makes") {
    warning_capture capture;
    const std::vector<stint::schedule_options> cases{
        {.skip_first = 3, .wait = 2, .warmup = 1, .active = 4, .repeat = 2},
        {.skip_first = 0, .wait = 0, .warmup = 1, .active = 1, .repeat = 0},
        {.skip_first = 1, .wait = 0, .warmup = 2, .active = 3, .repeat = 0},
        {.skip_first = 0, .wait = 5, .warmup = 1, .active = 1, .repeat = 2},
    };
    for (const auto& o : cases) {
        const auto fn = stint::schedule(o);
        stint::schedule_checker checker;
        checker.observe(N, fn(0));
        for (std::int64_t step = 1; step < 60; ++step) checker.observe(fn(step - 1), fn(step));
    }
    CHECK(capture.seen().empty());
}

TEST_CASE("transition_actions reproduces every entry of torch's action_map") {
    using enum session_op;
    struct entry {
        profiler_action prev;
        std::optional<profiler_action> next;
        session_ops ops;
    };
    const std::vector<entry> table{
        {N, N, {}},
        {N, W, {prepare_trace}},
        {N, R, {prepare_trace, start_trace}},
        {N, S, {prepare_trace, start_trace}},
        {W, N, {start_trace, stop_trace}},
        {W, W, {}},
        {W, R, {start_trace}},
        {W, S, {start_trace}},
        {R, N, {stop_trace}},
        {R, W, {stop_trace}},
        {R, R, {}},
        {R, S, {}},
        {S, N, {stop_trace, trace_ready}},
        {S, W, {stop_trace, trace_ready, prepare_trace}},
        {S, R, {stop_trace, trace_ready, prepare_trace, start_trace}},
        {S, S, {stop_trace, trace_ready, prepare_trace, start_trace}},
        {N, std::nullopt, {}},
        {W, std::nullopt, {start_trace, stop_trace}},
        {R, std::nullopt, {stop_trace, trace_ready}},
        {S, std::nullopt, {stop_trace, trace_ready}},
    };
    for (const auto& e : table) {
        CAPTURE(stint::to_string(e.prev));
        CAPTURE(e.next ? stint::to_string(*e.next) : std::string_view("stopped"));
        const session_ops actual = transition_actions(e.prev, e.next);
        CHECK_MESSAGE(actual == e.ops, names(actual));
    }
    CHECK(transition_actions(static_cast<profiler_action>(7), R).empty());
    CHECK(transition_actions(N, static_cast<profiler_action>(7)).empty());
    static_assert(transition_actions(S, R).size() == 4);
    static_assert(transition_actions(W, std::nullopt) == session_ops{start_trace, stop_trace});
}

TEST_CASE("session_ops is a small value with a view") {
    using enum session_op;
    const session_ops ops{stop_trace, trace_ready, prepare_trace};
    CHECK(ops.size() == 3);
    CHECK_FALSE(ops.empty());
    CHECK(ops[1] == trace_ready);
    const auto view = ops.span();
    REQUIRE(view.size() == 3);
    CHECK(view[2] == prepare_trace);
    CHECK(std::vector<session_op>(ops.begin(), ops.end()) ==
          std::vector<session_op>{stop_trace, trace_ready, prepare_trace});
    CHECK(ops != session_ops{stop_trace, trace_ready});
    CHECK(session_ops{}.empty());
    CHECK(stint::detail::to_string(trace_ready) == "trace_ready");
}

TEST_CASE("driving schedules through the transition table gives torch's trace_ready counts") {
    SUBCASE("wait=1 warmup=1 active=2, 8 steps: two windows") {
        session_simulation sim;
        sim.drive(stint::schedule({.wait = 1, .warmup = 1, .active = 2}), 8);
        CHECK(sim.legal);
        CHECK(sim.trace_ready == 2);
        CHECK(sim.ready_at_step == std::vector<std::int64_t>{4, 8});
    }
    SUBCASE("wait=1 warmup=1 active=2 repeat=3, 18 steps: three windows") {
        session_simulation sim;
        sim.drive(stint::schedule({.wait = 1, .warmup = 1, .active = 2, .repeat = 3}), 18);
        CHECK(sim.legal);
        CHECK(sim.trace_ready == 3);
    }
    SUBCASE("skip_first=3 wait=1 warmup=1 active=2 repeat=1, 10 steps: one window") {
        session_simulation sim;
        sim.drive(stint::schedule({.skip_first = 3, .wait = 1, .warmup = 1, .active = 2, .repeat = 1}), 10);
        CHECK(sim.legal);
        CHECK(sim.trace_ready == 1);
        CHECK(sim.ready_at_step == std::vector<std::int64_t>{7});
    }
    SUBCASE("the default schedule (RECORD every step): one window at stop") {
        session_simulation sim;
        sim.drive([](std::int64_t) { return R; }, 5);
        CHECK(sim.legal);
        CHECK(sim.ready_at_step == std::vector<std::int64_t>{5});
    }
    SUBCASE("stopping inside an active window still delivers it") {
        session_simulation sim;
        sim.drive(stint::schedule({.wait = 1, .warmup = 1, .active = 4}), 3);
        CHECK(sim.legal);
        CHECK(sim.trace_ready == 1);
        CHECK(sim.current == session_simulation::state::idle);
    }
    SUBCASE("stopping during warmup closes the session without a trace") {
        session_simulation sim;
        sim.drive(stint::schedule({.wait = 1, .warmup = 3, .active = 1}), 2);
        CHECK(sim.legal);
        CHECK(sim.trace_ready == 0);
        CHECK(sim.current == session_simulation::state::idle);
    }
    SUBCASE("every active-window schedule leaves the session idle and legal") {
        for (std::int64_t skip = 0; skip < 3; ++skip) {
            for (std::int64_t wait = 0; wait < 3; ++wait) {
                for (std::int64_t warmup = 1; warmup < 3; ++warmup) {
                    for (std::int64_t active = 1; active < 4; ++active) {
                        for (std::int64_t repeat = 0; repeat < 3; ++repeat) {
                            const stint::schedule_options o{skip, wait, warmup, active, repeat};
                            for (std::int64_t steps = 0; steps < 25; ++steps) {
                                session_simulation sim;
                                sim.drive(stint::schedule(o), steps);
                                CHECK(sim.legal);
                                CHECK(sim.current == session_simulation::state::idle);
                                // One window per RECORD_AND_SAVE step passed, plus one cut short by stop.
                                const auto seq = reference_actions(o, static_cast<std::size_t>(steps) + 1);
                                int saves = 0;
                                for (std::size_t i = 0; i < static_cast<std::size_t>(steps); ++i)
                                    saves += seq[i] == S ? 1 : 0;
                                const bool open_at_stop = seq.back() == R || seq.back() == S;
                                CHECK(sim.trace_ready == saves + (open_at_stop ? 1 : 0));
                            }
                        }
                    }
                }
            }
        }
    }
}

TEST_CASE("set_warning_handler returns the handler it replaces") {
    std::vector<std::string> first;
    std::vector<std::string> second;
    auto original = stint::set_warning_handler([&](std::string_view t) { first.emplace_back(t); });
    CHECK(static_cast<bool>(original));
    stint::detail::warn("one");
    auto previous = stint::set_warning_handler([&](std::string_view t) { second.emplace_back(t); });
    stint::detail::warn("two");
    REQUIRE(static_cast<bool>(previous));
    previous("three");  // the returned handler is the first one
    stint::set_warning_handler(std::move(original));
    CHECK(first == std::vector<std::string>{"one", "three"});
    CHECK(second == std::vector<std::string>{"two"});
}

TEST_CASE("an empty warning handler silences warnings") {
    std::vector<std::string> seen;
    auto original = stint::set_warning_handler([&](std::string_view t) { seen.emplace_back(t); });
    auto capturing = stint::set_warning_handler({});
    stint::detail::warn("dropped");
    auto empty = stint::set_warning_handler(std::move(capturing));
    CHECK_FALSE(static_cast<bool>(empty));
    stint::detail::warn("kept");
    stint::set_warning_handler(std::move(original));
    CHECK(seen == std::vector<std::string>{"kept"});
}

TEST_CASE("a warning handler may warn and replace the handler while it runs") {
    std::vector<std::string> seen;
    stint::warning_handler original;
    original = stint::set_warning_handler([&](std::string_view t) {
        seen.emplace_back(t);
        if (t == "outer") {
            stint::detail::warn("inner");
            stint::set_warning_handler([&](std::string_view u) { seen.emplace_back("replaced: " + std::string(u)); });
        }
    });
    stint::detail::warn("outer");
    stint::detail::warn("after");
    stint::set_warning_handler(std::move(original));
    CHECK(seen == std::vector<std::string>{"outer", "inner", "replaced: after"});
}

TEST_CASE("warn_once warns the first time per key only") {
    warning_capture capture;
    CHECK_FALSE(stint::detail::warned_once("schedule_test.key_a"));
    stint::detail::warn_once("schedule_test.key_a", "text a");
    stint::detail::warn_once("schedule_test.key_a", "text a again");
    stint::detail::warn_once("schedule_test.key_b", "text b");
    stint::detail::warn_once("schedule_test.key_b", "text b");
    CHECK(stint::detail::warned_once("schedule_test.key_a"));
    CHECK(capture.seen() == std::vector<std::string>{"text a", "text b"});
}

#if defined(__unix__) || defined(__APPLE__)
TEST_CASE("the default warning handler writes one prefixed line to stderr") {
    std::FILE* tmp = std::tmpfile();
    REQUIRE(tmp != nullptr);
    std::fflush(stderr);
    const int saved = ::dup(2);
    REQUIRE(saved >= 0);
    REQUIRE(::dup2(::fileno(tmp), 2) >= 0);
    auto original = stint::set_warning_handler(stint::default_warning_handler);
    stint::detail::warn("something odd");
    std::fflush(stderr);
    stint::set_warning_handler(std::move(original));
    ::dup2(saved, 2);
    ::close(saved);
    std::rewind(tmp);
    char buffer[256] = {};
    const std::size_t n = std::fread(buffer, 1, sizeof(buffer) - 1, tmp);
    std::fclose(tmp);
    CHECK(std::string(buffer, n) == "stint: warning: something odd\n");
}
#endif

TEST_CASE("warnings from many threads reach the handler one call at a time") {
    std::vector<std::string> seen;  // no lock of its own: stint serialises handler calls
    auto original = stint::set_warning_handler([&](std::string_view t) { seen.emplace_back(t); });
    std::vector<std::thread> pool;
    for (int t = 0; t < 4; ++t) {
        pool.emplace_back([t] {
            for (int i = 0; i < 500; ++i) stint::detail::warn(fmt::format("thread {} warning {}", t, i));
        });
    }
    // Replacing the handler while others warn is safe; a handler in flight finishes with its own copy.
    pool.emplace_back([&] {
        for (int i = 0; i < 50; ++i) {
            auto mine = stint::set_warning_handler([&](std::string_view t) { seen.emplace_back(t); });
            stint::set_warning_handler(std::move(mine));
        }
    });
    for (auto& th : pool) th.join();
    stint::set_warning_handler(std::move(original));
    CHECK(seen.size() == 2000);
    CHECK(std::count(seen.begin(), seen.end(), "thread 3 warning 499") == 1);
}
