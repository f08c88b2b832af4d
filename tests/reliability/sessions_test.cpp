// Sessions under churn: back-to-back sessions with exact accounting.

#include <doctest/doctest.h>

#include <cstdint>

#include "../test_util.hpp"
#include "size.hpp"

TEST_CASE("1,000 back-to-back sessions each keep exactly what they recorded") {
    const int sessions = stint_test::sized(1000, 1000);
    std::uint64_t recorded = 0;
    for (int s = 0; s < sessions; ++s) {
        stint::profiler<> prof;
        prof.start();
        for (int i = 0; i <= s % 7; ++i) {
            STINT_SCOPE("outer");
            STINT_SCOPE("inner");
        }
        prof.stop();
        const stint::profiler_stats stats = prof.stats();
        REQUIRE(stats.recorded == static_cast<std::uint64_t>(2 * (s % 7 + 1)));
        REQUIRE(stats.dropped == 0);
        REQUIRE(prof.events().size() == stats.recorded + stats.overhead_events);
        recorded += stats.recorded;
    }
    CHECK(recorded > 0);
}
