#pragma once
// The body of distributed/clock_alignment.hpp: the map from two clock samples onto rank 0's time.
#include "stint/distributed/clock_alignment.hpp"

#include <algorithm>  // std::max

namespace stint::mpi {

clock_alignment align(const clock_sample& first, const clock_sample& last, std::int64_t base_steady_ns,
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
