// Built with STINT_DETAIL_TEST_TICK_SHIFT (tests/meson.build): every tick reading is rounded down to
// 2^16 ticks (about 25 us), so most events of the workload share their begin and end ticks. The tree
// must still be the program's nesting, in every session.

#include <doctest/doctest.h>

#include <atomic>
#include <string>
#include <thread>

#include "nesting_workload.hpp"
#include "test_util.hpp"
#include "trace_from_records.hpp"

static_assert(STINT_DETAIL_TEST_TICK_SHIFT >= 12, "this binary needs a clock coarse enough for ties to be the rule");

TEST_CASE("under a clock where most events share ticks, the tree is the nesting the program executed") {
    for (int session = 0; session < 12; ++session) {
        CAPTURE(session);
        nesting::run_and_check(4, 400);
    }
}

TEST_CASE("under a clock where most events share ticks, a trace from the records nests as the event list") {
    stint_test::temp_dir dir;
    stint::profiler<> prof;
    prof.start();
    std::atomic<int> turn{0};  // the threads take turns: their events interleave in time
    const auto work = [&](int t) {
        nesting::recorder r;
        for (int i = 0; i < 300; ++i) {
            while (turn.load() % 2 != t) std::this_thread::yield();
            nesting::iteration(r, i);
            ++turn;
        }
    };
    std::thread other(work, 1);
    work(0);
    other.join();
    prof.stop();
    const records_trace::compared both = records_trace::check_same_as_list(prof, dir);
    CHECK(records_trace::threads_contiguous(both.from_records));
    CHECK_FALSE(records_trace::threads_contiguous(both.from_list));
    CHECK(both.equal_times > 1000);  // most events tie with their parent here
}

TEST_CASE("under a coarse clock most events do share ticks (the test above is not luck)") {
    stint::profiler<> prof;
    prof.start();
    nesting::recorder r;
    for (int i = 0; i < 200; ++i) nesting::iteration(r, i);
    prof.stop();
    std::size_t tied = 0;
    for (const stint::event& e : prof.events()) tied += e.start_ns == e.end_ns ? 1 : 0;
    CHECK(tied * 2 > prof.events().size());
}

TEST_CASE("three nested scopes in a loop nest as written, however the ticks tie") {
    nesting::check_three_level_loop(100'000);
}

TEST_CASE("record_outputs reaches its own op however the ticks tie") {
    // Sibling ops of one tick, each with its outputs given inside a scope of its own, and zero-length
    // instants around them: each op gets exactly its value, none the neighbour's.
    using shapes = stint::config<stint::record_shapes>;
    stint::profiler<shapes> prof;
    prof.start();
    for (int i = 0; i < 2000; ++i) {
        STINT_SCOPE("step");
        STINT_INSTANT("before");
        {
            STINT_OP(shapes, "op", i);
            STINT_INSTANT("inside");
            {
                STINT_SCOPE("compute");
                stint::record_outputs(i);
            }
        }
        STINT_INSTANT("after");
    }
    prof.stop();
    int ops = 0;
    std::size_t tied = 0;
    for (const stint::event& e : prof.events()) {
        if (e.name != "op") continue;
        ++ops;
        tied += e.start_ns == e.end_ns ? 1 : 0;
        const stint::event_args* args = prof.events().args(e);
        REQUIRE(args != nullptr);
        REQUIRE(args->outputs.size() == 1);
        CHECK(args->outputs[0].int_value() == std::stoll(args->concrete_inputs[0]));
    }
    CHECK(ops == 2000);
    CHECK(tied * 2 > 2000);  // most share their ticks: the depth decided
}

TEST_CASE("under a coarse clock, flow points bind to the scope open around them and pair in program order") {
    stint::profiler<> prof;
    prof.start();
    for (std::uint64_t i = 0; i < 300; ++i) {
        STINT_SCOPE("outer");
        {
            STINT_SCOPE("hand over");
            STINT_FLOW_BEGIN(i % 3);  // ids reused: pairing must follow the program, not the ticks
        }
        STINT_FLOW_END(i % 3);
        STINT_SCOPE("after");
    }
    prof.stop();
    const stint::event_list& list = prof.events();
    REQUIRE(list.flows().size() == 300);
    CHECK(list.unmatched().total() == 0);
    std::size_t tied = 0;
    for (const stint::flow_link& f : list.flows()) {
        const stint::event& begin = list[f.begin];
        const stint::event& end = list[f.end];
        CHECK(list.parent(begin)->name == "hand over");
        CHECK(list.parent(end)->name == "outer");
        // The begin's scope is a child of the end's scope: one iteration's pair.
        CHECK(list.parent(*list.parent(begin)) == list.parent(end));
        tied += begin.start_ns == end.start_ns ? 1 : 0;
    }
    CHECK(tied > 100);  // most pairs share their tick here
}
