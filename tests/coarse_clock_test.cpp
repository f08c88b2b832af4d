// Built with STINT_DETAIL_TEST_TICK_SHIFT (tests/meson.build): every tick reading is rounded down to
// 2^16 ticks (about 25 us), so most events of the workload share their begin and end ticks. The tree
// must still be the program's nesting, in every session.

#include <doctest/doctest.h>

#include "nesting_workload.hpp"

static_assert(STINT_DETAIL_TEST_TICK_SHIFT >= 12, "this binary needs a clock coarse enough for ties to be the rule");

TEST_CASE("under a clock where most events share ticks, the tree is the nesting the program executed") {
    for (int session = 0; session < 12; ++session) {
        CAPTURE(session);
        nesting::run_and_check(4, 400);
    }
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
