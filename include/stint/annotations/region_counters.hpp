#pragma once
// Reading STINT_REGION's counters (stint::region_counters<Kind>()): a query of the program that
// profiles, which needs the clock's calibration from the registry; the macro itself (region.hpp) does not.

#include <algorithm>  // std::find_if
#include <atomic>  // std::atomic
#include <cstdint>  // std::int64_t, std::uint64_t
#include <string_view>  // std::string_view
#include <vector>  // std::vector

#include "stint/annotations/region.hpp"
#include "stint/detail/separate_compilation.hpp"

namespace stint {

/// The counters of one region name of a kind (every STINT_REGION site with that name).
struct region_stats {
    std::string_view name;      ///< the name given to STINT_REGION ("inner_fn")
    std::uint64_t count = 0;    ///< regions that have ended
    std::int64_t total_ns = 0;  ///< their summed duration (nested regions count in each)
};

/// The counters of a region kind: one row per name, sorted by name, and their totals.
struct region_kind_stats {
    std::string_view label;
    std::vector<region_stats> regions;
    std::uint64_t count = 0;
    std::int64_t total_ns = 0;

    /// The row of `name`, or nullptr when no region of that name has run yet.
    [[nodiscard]] const region_stats* find(std::string_view name) const noexcept {
        auto it = std::find_if(regions.begin(), regions.end(), [&](const region_stats& r) { return r.name == name; });
        return it == regions.end() ? nullptr : &*it;
    }
};

}  // namespace stint

namespace stint::detail {

/// Sums a kind's list by name. The two counters of a site are read separately, so a region ending
/// meanwhile may show in the count and not yet in the time.
STINT_DECL region_kind_stats read_region_list(std::string_view label, const std::atomic<region_counter*>& head);

}  // namespace stint::detail

namespace stint {

/// The cumulative counters of every STINT_REGION of `Kind` in the process since it started, with or
/// without a session (dynamo's compile metrics). Regions still open are not counted yet.
///
///     const stint::region_kind_stats s = stint::region_counters<dynamo_timed>();
///     if (const auto* r = s.find("inner_fn")) fmt::print("{} x, {} ns\n", r->count, r->total_ns);
template <region_kind Kind>
[[nodiscard]] region_kind_stats region_counters() {
    return detail::read_region_list(Kind::label, detail::region_list<Kind>::head);
}

}  // namespace stint

#if defined(STINT_HEADER_ONLY)
#include "stint/annotations/impl/region_counters.ipp"
#endif
