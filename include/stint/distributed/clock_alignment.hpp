#pragma once
// How one process's trace times map onto another's (rank 0's, in a job): from two comparisons of their
// steady clocks, at a session's start and stop (distributed/mpi.hpp takes them over MPI). No MPI here.

#include <cstdint>  // std::int64_t

#include "stint/detail/separate_compilation.hpp"

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
STINT_DECL clock_alignment align(const clock_sample& first, const clock_sample& last, std::int64_t base_steady_ns,
                                 std::int64_t root_base_steady_ns);

}  // namespace stint::mpi

#if defined(STINT_HEADER_ONLY)
#include "stint/distributed/impl/clock_alignment.ipp"
#endif
