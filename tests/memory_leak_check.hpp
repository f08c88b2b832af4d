#pragma once
// torch's test_mem_leak for stint: 10 sessions of 1,024 recorded ops each; the resident memory after
// sessions 6..10 must not keep growing. Read from /proc/self/statm, as the issue asks.

#include <unistd.h>

#include <cstdint>
#include <fstream>
#include <vector>

#include "reliability/size.hpp"

namespace stint_test {

/// Resident bytes from /proc/self/statm (its second field, in pages).
inline std::int64_t statm_resident_bytes() {
    std::ifstream statm("/proc/self/statm");
    std::int64_t size = 0;
    std::int64_t resident = 0;
    statm >> size >> resident;
    return resident * static_cast<std::int64_t>(::sysconf(_SC_PAGESIZE));
}

/// Runs `session` (one whole profiling session) 10 times and returns the resident bytes after each.
template <class Session>
std::vector<std::int64_t> resident_after_sessions(Session&& session) {
    std::vector<std::int64_t> samples;
    for (int i = 0; i < 10; ++i) {
        session();
        samples.push_back(statm_resident_bytes());
    }
    return samples;
}

/// The largest growth from one of sessions 6..10 to the next.
inline std::int64_t largest_late_step(const std::vector<std::int64_t>& samples) {
    std::int64_t largest = 0;
    for (std::size_t i = 6; i < samples.size(); ++i) largest = std::max(largest, samples[i] - samples[i - 1]);
    return largest;
}

}  // namespace stint_test
