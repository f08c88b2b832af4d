#pragma once
// How one process's trace times map onto another's (rank 0's, in a job): from two comparisons of their
// steady clocks, at a session's start and stop (distributed/mpi.hpp takes them over MPI). No MPI here.

#include <algorithm>
#include <cstdint>

namespace stint::mpi {

/// One comparison of this rank's steady clock with rank 0's: at `local_ns` (this rank's steady
/// clock), rank 0's read `local_ns + offset_ns`, give or take `error_ns` (half the best round trip).
struct clock_sample {
    std::int64_t local_ns = 0;
    std::int64_t offset_ns = 0;
    std::int64_t error_ns = 0;
};

/// How this rank's trace times map onto rank 0's: t0 = t + offset_ns + drift * (t - reference_ns),
/// with t and t0 in each trace's own time (ns since its baseTimeNanoseconds). `error_ns` bounds how
/// far a mapped time may be from the truth (the larger of the two samples' bounds).
struct clock_alignment {
    std::int64_t offset_ns = 0;
    double drift = 0;
    std::int64_t reference_ns = 0;
    std::int64_t error_ns = 0;
};

/// The map from this rank's trace time to rank 0's, from two samples and both traces' time origins
/// (steady clock readings at time 0). One sample (or two at the same instant) gives no drift.
inline clock_alignment align(const clock_sample& first, const clock_sample& last, std::int64_t base_steady_ns,
                             std::int64_t root_base_steady_ns) {
    clock_alignment a;
    const std::int64_t span = last.local_ns - first.local_ns;
    a.drift = span > 0 ? static_cast<double>(last.offset_ns - first.offset_ns) / static_cast<double>(span) : 0.0;
    // t (this trace) is steady base_steady + t here, + offset(first) + drift * (that - first.local_ns)
    // on rank 0's steady clock, minus rank 0's base for its trace time.
    a.reference_ns = first.local_ns - base_steady_ns;
    a.offset_ns = base_steady_ns + first.offset_ns - root_base_steady_ns;
    a.error_ns = std::max(first.error_ns, last.error_ns);
    return a;
}

}  // namespace stint::mpi
