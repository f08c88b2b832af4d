#pragma once
// The tick clock's calibration: anchors against steady_clock and the wall clock, and the rate that
// converts ticks (ticks.hpp, read on the hot path) to nanoseconds at drain.

#include <chrono>   // std::chrono::steady_clock, std::chrono::system_clock, std::chrono::duration_cast
#include <cstdint>  // std::int64_t, std::uint64_t
#include <cstdlib>  // std::getenv, std::strtoll

#include "stint/detail/export_macros.hpp"
#include "stint/recording/ticks.hpp"

namespace stint {

/// A pair of readings of the tick counter and steady_clock taken at (nearly) the same instant.
struct clock_anchor {
    std::uint64_t ticks = 0;
    std::int64_t steady_ns = 0;
    std::int64_t system_ns = 0;  ///< wall clock, for the trace's baseTimeNanoseconds
};

/// Converts ticks to nanoseconds: ns = anchor.steady_ns + (ticks - anchor.ticks) * ns_per_tick.
struct tick_calibration {
    clock_anchor anchor;
    double ns_per_tick = 1.0;

    [[nodiscard]] std::int64_t to_ns_since_anchor(std::uint64_t ticks) const noexcept {
        // Signed: a tick read on another core may precede the anchor by a few ticks.
        const auto delta = static_cast<std::int64_t>(ticks - anchor.ticks);
        return static_cast<std::int64_t>(static_cast<double>(delta) * ns_per_tick);
    }
};

namespace detail {

#if defined(STINT_DETAIL_TEST_CLOCK_SKEW)
/// Tests only (a whole test program): every steady and wall clock reading of this process is ahead
/// by STINT_TEST_CLOCK_SKEW_NS, as on a host whose clocks disagree with its peers' (tests/mpi).
inline std::int64_t test_clock_skew_ns() noexcept {
    static const std::int64_t skew = [] {
        const char* text = std::getenv("STINT_TEST_CLOCK_SKEW_NS");
        return text == nullptr ? std::int64_t{0} : static_cast<std::int64_t>(std::strtoll(text, nullptr, 10));
    }();
    return skew;
}
#else
constexpr std::int64_t test_clock_skew_ns() noexcept { return 0; }
#endif

inline std::int64_t steady_now_ns() noexcept {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
               .count() +
           test_clock_skew_ns();
}
inline std::int64_t system_now_ns() noexcept {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
               .count() +
           test_clock_skew_ns();
}

}  // namespace detail

/// Takes an anchor: the steady_clock reading bracketed by the two closest tick reads of a few tries,
/// so the pair is off by at most half the bracket (tens of ns).
inline clock_anchor take_clock_anchor() noexcept {
    clock_anchor best;
    std::uint64_t best_width = ~std::uint64_t{0};
    for (int i = 0; i < 8; ++i) {
        const std::uint64_t before = read_ticks();
        const std::int64_t steady = detail::steady_now_ns();
        const std::uint64_t after = read_ticks();
        if (after - before < best_width) {
            best_width = after - before;
            best = {before + (after - before) / 2, steady, 0};
        }
    }
    best.system_ns = detail::system_now_ns() - (detail::steady_now_ns() - best.steady_ns);
    return best;
}

/// Measures ticks per nanosecond between two anchors taken `interval` apart (spinning, so the
/// measurement is not at the mercy of the scheduler's wake-up latency).
inline tick_calibration calibrate_ticks(std::chrono::nanoseconds interval = std::chrono::milliseconds(10)) noexcept {
    const clock_anchor first = take_clock_anchor();
    while (detail::steady_now_ns() - first.steady_ns < interval.count()) {
    }
    const clock_anchor second = take_clock_anchor();
    tick_calibration result;
    result.anchor = first;
    const auto ticks = static_cast<double>(second.ticks - first.ticks);
    result.ns_per_tick = ticks > 0 ? static_cast<double>(second.steady_ns - first.steady_ns) / ticks : 1.0;
    return result;
}

/// Re-anchors a calibration at the current instant; when `refine` spans enough time, its own rate
/// replaces the stored one (a longer interval measures the rate more precisely).
inline tick_calibration refine_calibration(const tick_calibration& base, const clock_anchor& later) noexcept {
    tick_calibration result = base;
    const auto ticks = static_cast<double>(later.ticks - base.anchor.ticks);
    const std::int64_t span_ns = later.steady_ns - base.anchor.steady_ns;
    if (ticks > 0 && span_ns > 100'000'000) {
        result.ns_per_tick = static_cast<double>(span_ns) / ticks;
    }
    return result;
}

}  // namespace stint
