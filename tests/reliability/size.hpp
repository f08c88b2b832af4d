#pragma once
// The reliability suite's sizes. README's test command and CI run the reduced sizes; the full sizes
// (the figures) run with STINT_RELIABILITY_FULL=1 in the environment:
//     STINT_RELIABILITY_FULL=1 build-test-gcc/tests/reliability/reliability_tests

#include <cstdlib>
#include <cstring>

namespace stint_test {

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
