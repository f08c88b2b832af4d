#pragma once
// The tick clock: the cheapest monotonic counter of the CPU (rdtsc on x86-64, the virtual counter on
// aarch64, steady_clock elsewhere), read on the hot path; clock.hpp converts it to nanoseconds at drain.

#include <cstdint>  // std::uint64_t

#if !defined(__x86_64__) && !defined(__aarch64__)
#include <chrono>  // std::chrono::steady_clock, std::chrono::duration_cast, std::chrono::nanoseconds
#endif

#include "stint/detail/export_macros.hpp"

namespace stint {

/// Reads the tick counter without the test-only quantisation below.
STINT_DETAIL_ALWAYS_INLINE std::uint64_t read_raw_ticks() noexcept {
#if defined(__x86_64__)
    return __builtin_ia32_rdtsc();  // <x86intrin.h>'s __rdtsc without its thousands of lines
#elif defined(__aarch64__)
    std::uint64_t value;
    asm volatile("mrs %0, cntvct_el0" : "=r"(value));
    return value;
#else
    return static_cast<std::uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
            .count());
#endif
}

/// Reads the tick counter. Two reads cost about two rdtsc instructions; nothing else.
///
/// STINT_DETAIL_TEST_TICK_SHIFT (tests only, for a whole test binary) rounds every reading down to a
/// multiple of 2^shift ticks: a clock so coarse that most events share their ticks, as a few happen
/// to on machines whose counter steps every ~10 ns.
STINT_DETAIL_ALWAYS_INLINE std::uint64_t read_ticks() noexcept {
#if defined(STINT_DETAIL_TEST_TICK_SHIFT)
    return read_raw_ticks() & ~((std::uint64_t{1} << STINT_DETAIL_TEST_TICK_SHIFT) - 1);
#else
    return read_raw_ticks();
#endif
}

}  // namespace stint
