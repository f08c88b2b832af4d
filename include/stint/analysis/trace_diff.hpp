#pragma once
// Run-to-run comparison: per op name (and input shapes) the count and total/self times of two runs,
// most changed first, with a noise threshold, and a CI gate on ops that slowed past a ratio.

#include <cstdint>  // std::int64_t, std::uint64_t
#include <string>   // std::string
#include <vector>   // std::vector

#include "stint/analysis/trace_analysis.hpp"
#include "stint/detail/separate_compilation.hpp"

namespace stint {

/// What counts as a change.
///
///     auto rows = stint::diff_ops(a.op_stats(), b.op_stats(), {.noise_ns = 5'000});
struct diff_options {
    /// A row whose total time changed by less than this (ns) is noise: diff_ops leaves it out.
    std::int64_t noise_ns = 0;
};

/// One op in runs A and B.
struct op_diff {
    std::string name;
    std::string shapes;
    bool on_device = false;
    std::uint64_t count_a = 0;
    std::uint64_t count_b = 0;
    std::int64_t total_a_ns = 0;
    std::int64_t total_b_ns = 0;
    std::int64_t self_a_ns = 0;
    std::int64_t self_b_ns = 0;

    /// total B - total A
    [[nodiscard]] std::int64_t change_ns() const noexcept { return total_b_ns - total_a_ns; }
    /// total B / total A; infinity for an op new in B, 0 for one gone from it.
    [[nodiscard]] STINT_DECL double ratio() const noexcept;
};

/// The ops of A and B matched by (name, shapes, device or CPU), those whose total changed by at least
/// `noise_ns`, sorted by |change| (largest first; ties by name).
[[nodiscard]] STINT_DECL std::vector<op_diff> diff_ops(const std::vector<op_stat>& a, const std::vector<op_stat>& b,
                                                       const diff_options& options = {});

/// The rows of `diff` that slowed past `ratio` (total B > ratio x total A; an op new in B counts): a CI
/// gate fails when this is not empty.
[[nodiscard]] STINT_DECL std::vector<op_diff> slowed_ops(const std::vector<op_diff>& diff, double ratio);

}  // namespace stint

#if defined(STINT_HEADER_ONLY)
#include "stint/analysis/impl/trace_diff.ipp"
#endif
