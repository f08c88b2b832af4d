#pragma once
// The reliability suite's sizes. README's test command and CI run the reduced sizes; the full sizes
// (the figures) run with STINT_RELIABILITY_FULL=1 in the environment:
//     STINT_RELIABILITY_FULL=1 build-test-gcc/tests/reliability/reliability_tests

#include <cstdlib>
#include <cstring>

namespace stint_test {

/// Whether a sanitizer instruments this build: RSS is meaningless then (shadow memory, ASan's
/// quarantine of freed memory), so memory bounds are asserted only without one.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
inline constexpr bool sanitized = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || __has_feature(memory_sanitizer)
inline constexpr bool sanitized = true;
#else
inline constexpr bool sanitized = false;
#endif
#else
inline constexpr bool sanitized = false;
#endif

/// Whether the full sizes were asked for (read once).
inline bool full_size() {
    static const bool full = [] {
        const char* value = std::getenv("STINT_RELIABILITY_FULL");
        return value != nullptr && std::strcmp(value, "1") == 0;
    }();
    return full;
}

/// `full` under STINT_RELIABILITY_FULL=1, else `reduced`.
template <class T>
T sized(T full, T reduced) {
    return full_size() ? full : reduced;
}

}  // namespace stint_test
