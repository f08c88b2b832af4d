#include <doctest/doctest.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>

#include "stint/stint.hpp"
#include "test_util.hpp"

namespace {

using stint_test::spin_for;

void leaf() {
    STINT_SCOPE("leaf");
    spin_for(std::chrono::microseconds(50));
}

void middle() {
    STINT_OP(stint::config<>, "ns::middle", 1, 2.0);
    leaf();
    leaf();
}

using stint_test::find;

using stint_test::count_named;

}  // namespace

TEST_CASE("nested scopes lie inside their parents and self times add up") {
    stint::profiler<> prof;
    prof.start();
    {
        STINT_SCOPE("root");
        middle();
        spin_for(std::chrono::microseconds(20));
    }
    prof.stop();
    const auto& events = prof.events();
    REQUIRE(events.size() == 4);
    std::optional<stint::event> root = find(events, "root");
    std::optional<stint::event> mid = find(events, "ns::middle");
    REQUIRE(root != std::nullopt);
    REQUIRE(mid != std::nullopt);
    CHECK(root->kind == stint::event_kind::user_annotation);
    CHECK(mid->kind == stint::event_kind::cpu_op);
    CHECK(root->is_top_level());
    CHECK(events.parent(*mid) == root);
    CHECK(mid->depth == 1);
    CHECK(events.children(*root).size() == 1);
    CHECK(events.children(*mid).size() == 2);
    std::int64_t children_total = 0;
    for (const auto& leaf_event : events.children(*mid)) {
        CHECK(leaf_event.name == "leaf");
        CHECK(leaf_event.depth == 2);
        CHECK(leaf_event.start_ns >= mid->start_ns);
        CHECK(leaf_event.end_ns <= mid->end_ns);
        CHECK(leaf_event.duration_ns() >= 50'000);
        CHECK(leaf_event.self_ns == leaf_event.duration_ns());
        children_total += leaf_event.duration_ns();
    }
    CHECK(mid->self_ns == mid->duration_ns() - children_total);
    CHECK(root->self_ns == root->duration_ns() - mid->duration_ns());
    CHECK(root->self_ns >= 20'000);
    // Self times of a tree add up to the root's total.
    std::int64_t self_sum = 0;
    for (const auto& e : events) self_sum += e.self_ns;
    CHECK(self_sum == root->duration_ns());
    CHECK(root->cpu_time_total() == doctest::Approx(static_cast<double>(root->duration_ns()) / 1e3));
    CHECK(root->self_cpu_time_total() == doctest::Approx(static_cast<double>(root->self_ns) / 1e3));
}

TEST_CASE("every event gets a distinct record function id, counting from 1") {
    stint::profiler<> prof;
    prof.start();
    for (int i = 0; i < 100; ++i) middle();
    prof.stop();
    std::set<std::uint64_t> ids;
    for (const auto& e : prof.events()) ids.insert(e.id);
    CHECK(ids.size() == prof.events().size());
    CHECK(prof.events().size() == 300);
    // 1 to 300, as torch's handles: a trace writes no "External id" of 0, so an op with id 0
    // could not be joined to the kernels it launched.
    CHECK(*ids.begin() == 1);
    CHECK(*ids.rbegin() == 300);
}

TEST_CASE("instants, runtime names and record_function are recorded") {
    stint::profiler<> prof;
    prof.start();
    {
        STINT_SCOPE("outer");
        STINT_INSTANT("marker");
        const std::string base = "layer";
        STINT_SCOPE_NAMED(base + "." + std::to_string(3));
        stint::record_function rf("rf.forward");
        rf.end();
        rf.end();  // a second end does nothing
    }
    prof.stop();
    const auto& events = prof.events();
    REQUIRE(events.size() == 4);
    const auto marker = find(events, "marker");
    REQUIRE(marker != std::nullopt);
    CHECK(marker->kind == stint::event_kind::instant);
    CHECK(marker->duration_ns() == 0);
    CHECK(events.parent(*marker)->name == "outer");
    const auto named = find(events, "layer.3");
    REQUIRE(named != std::nullopt);
    CHECK(named->kind == stint::event_kind::user_annotation);
    const auto rf = find(events, "rf.forward");
    REQUIRE(rf != std::nullopt);
    CHECK(events.parent(*rf) == named);
}

TEST_CASE("is_recording is true only while a session records") {
    CHECK_FALSE(stint::is_recording());
    stint::profiler<> prof;
    CHECK_FALSE(stint::is_recording());
    prof.start();
    CHECK(stint::is_recording());
    CHECK(prof.is_running());
    prof.stop();
    CHECK_FALSE(stint::is_recording());
    CHECK_FALSE(prof.is_running());
}

TEST_CASE("nothing is recorded outside a session") {
    leaf();
    stint::profiler<> prof;
    leaf();
    prof.start();
    middle();
    prof.stop();
    leaf();
    CHECK(prof.events().size() == 3);
    CHECK(prof.stats().recorded == 3);
}

TEST_CASE("starting twice, stopping twice, and two profilers at once") {
    stint::profiler<> prof;
    SUBCASE("the same profiler started twice is a clear error") {
        prof.start();
        CHECK_THROWS_WITH_AS(prof.start(), "stint: start(): this profiler is already recording", std::logic_error);
        prof.stop();
    }
    SUBCASE("a second profiler cannot start while one records") {
        prof.start();
        stint::profiler<> other;
        CHECK_THROWS_WITH_AS(other.start(),
                             "stint: start(): a profiler is already recording in this process; stop it first",
                             std::logic_error);
        CHECK(stint::is_recording());
        prof.stop();
        other.start();  // now it can
        other.stop();
    }
    SUBCASE("stop twice is a no-op and keeps the events") {
        prof.start();
        leaf();
        prof.stop();
        prof.stop();
        CHECK(prof.events().size() == 1);
    }
    SUBCASE("stop without start is a no-op that warns once") {
        const stint_test::warning_capture warnings;
        const std::string text =
            "stop() without start(): the profiler didn't run, so its results (table, trace, events) are empty; "
            "call start() before the code to profile";
        prof.stop();
        CHECK(prof.events().empty());
        CHECK(warnings.count(text) == 1);
        prof.stop();  // once per profiler
        CHECK(warnings.count(text) == 1);
        prof.start();  // a profiler that ran stops without a word, twice too
        prof.stop();
        prof.stop();
        CHECK(warnings.seen().size() == 1);
        stint::profiler<> other;  // another profiler's mistake is said again
        other.stop();
        CHECK(warnings.count(text) == 2);
        // A schedule's step() opens windows without start(): its stop() is no mistake.
        stint::profiler<> stepped({.schedule = stint::schedule({.active = 1})});
        stepped.step();
        stepped.stop();
        CHECK(warnings.count(text) == 2);
    }
}

TEST_CASE("reading results while recording is a clear error naming the call") {
    stint::profiler<> prof;
    prof.start();
    CHECK_THROWS_WITH_AS((void)prof.events(),
                         "stint: events(): the profiler didn't finish running; call stop() first", std::logic_error);
    CHECK_THROWS_WITH_AS((void)prof.stats(),
                         "stint: stats(): the profiler didn't finish running; call stop() first", std::logic_error);
    CHECK_THROWS_WITH_AS(prof.export_chrome_trace("/tmp/never.json"),
                         "stint: export_chrome_trace(): the profiler didn't finish running; call stop() first",
                         std::logic_error);
    prof.stop();
}

TEST_CASE("a profiler destroyed while running stops, so the next one can start") {
    {
        stint::profiler<> prof;
        prof.start();
        leaf();
    }
    CHECK_FALSE(stint::is_recording());
    stint::profiler<> next;
    next.start();
    leaf();
    next.stop();
    CHECK(next.events().size() == 1);
}

TEST_CASE("two sessions back to back keep their events apart") {
    stint::profiler<> first;
    first.start();
    leaf();
    first.stop();
    REQUIRE(first.events().size() == 1);
    const std::uint64_t first_id = first.events()[0].id;
    CHECK(first_id == 1);  // a profiler's ids start at 1
    stint::profiler<> second;
    second.start();
    middle();
    second.stop();
    first.start();
    leaf();
    leaf();
    first.stop();
    CHECK(second.events().size() == 3);
    REQUIRE(first.events().size() == 2);  // each start begins a new event list
    CHECK(count_named(first.events(), "leaf") == 2);
    // Ids keep growing across a profiler's sessions: the next session's follow the last one's.
    CHECK(first.events()[0].id == first_id + 1);
    CHECK(first.events()[1].id == first_id + 2);
}

TEST_CASE("a scope that straddles stop is in no session, not torn, not in the next one") {
    stint::profiler<> prof;
    std::mutex m;
    std::condition_variable cv;
    int phase = 0;
    prof.start();
    std::thread worker([&] {
        {
            STINT_SCOPE("straddler");
            std::unique_lock lock(m);
            phase = 1;
            cv.notify_all();
            cv.wait(lock, [&] { return phase == 2; });
        }
        {
            STINT_SCOPE("after");  // recorded nowhere: no session
        }
        std::unique_lock lock(m);
        phase = 3;
        cv.notify_all();
        cv.wait(lock, [&] { return phase == 4; });
        STINT_SCOPE("in second session");
    });
    {
        std::unique_lock lock(m);
        cv.wait(lock, [&] { return phase == 1; });
    }
    prof.stop();
    {
        std::unique_lock lock(m);
        phase = 2;
        cv.notify_all();
        cv.wait(lock, [&] { return phase == 3; });
    }
    stint::profiler<> second;
    second.start();
    {
        std::unique_lock lock(m);
        phase = 4;
        cv.notify_all();
    }
    worker.join();
    second.stop();
    CHECK(prof.events().empty());
    REQUIRE(second.events().size() == 1);
    CHECK(second.events()[0].name == "in second session");
}

TEST_CASE("a scope open across start is not recorded but its children are") {
    stint::profiler<> prof;
    {
        STINT_SCOPE("opened before start");
        prof.start();
        leaf();
    }
    prof.stop();
    REQUIRE(prof.events().size() == 1);
    CHECK(prof.events()[0].name == "leaf");
}

TEST_CASE("stats have all of torch's fields positive after a real session") {
    stint::profiler<> prof;
    prof.start();
    for (int i = 0; i < 10; ++i) middle();
    prof.stop();
    CHECK(prof.stats().function_events_build_tree_call_duration_us == 0);  // no tree yet: nothing asked for one
    CHECK(prof.events().size() == 30);
    const auto& s = prof.stats();
    CHECK(s.profiling_window_duration_sec > 0);
    CHECK(s.number_of_events == 30);
    CHECK(s.profiler_prepare_call_duration_us > 0);
    CHECK(s.profiler_enable_call_duration_us > 0);
    CHECK(s.profiler_disable_call_duration_us > 0);
    CHECK(s.parse_kineto_call_duration_us > 0);
    CHECK(s.function_events_build_tree_call_duration_us > 0);
    CHECK(s.recorded == 30);
    CHECK(s.dropped == 0);
}

TEST_CASE("a disabled-config profiler and disabled-config scopes record nothing") {
    stint::profiler<stint::disabled> off;
    off.start();
    CHECK_FALSE(stint::is_recording());
    {
        STINT_OP(stint::disabled, "never", 1);
    }
    off.stop();
    CHECK(off.events().empty());
    // A disabled op inside a real session leaves no event either.
    stint::profiler<> prof;
    prof.start();
    {
        STINT_OP(stint::disabled, "never", 1);
        leaf();
    }
    prof.stop();
    REQUIRE(prof.events().size() == 1);
    CHECK(prof.events()[0].name == "leaf");
    static_assert(std::is_empty_v<stint::detail::scope<stint::disabled>>);
}

TEST_CASE("op inputs are not evaluated by a timing-only or disabled op") {
    int evaluated = 0;
    const auto input = [&] { return ++evaluated; };
    stint::profiler<> prof;
    prof.start();
    {
        STINT_OP(stint::config<>, "op", input());
    }
    {
        STINT_OP(stint::disabled, "op", input());
    }
    prof.stop();
    CHECK(evaluated == 0);
    CHECK(prof.events().size() == 1);
}

TEST_CASE("runtime names longer than 4096 bytes are cut and counted") {
    stint::profiler<> prof;
    prof.start();
    {
        const std::string huge(10000, 'x');
        stint::record_function rf(huge);
    }
    prof.stop();
    REQUIRE(prof.events().size() == 1);
    CHECK(prof.events()[0].name.size() == 4096);
    CHECK(prof.stats().truncated_names == 1);
}

TEST_CASE("several scopes on one line get distinct sites") {
    stint::profiler<> prof;
    prof.start();
    { STINT_SCOPE("a"); STINT_SCOPE("b"); STINT_OP(stint::config<>, "c"); }
    prof.stop();
    REQUIRE(prof.events().size() == 3);
    CHECK(prof.events()[0].name == "a");
    CHECK(prof.events()[1].name == "b");
    CHECK(prof.events()[2].name == "c");
    CHECK(prof.events()[2].depth == 2);
}
