#pragma once
// Reading STINT_REGION's counters (stint::region_counters<Kind>()): a query of the program that
// profiles, which needs the clock's calibration from the registry; the macro itself (region.hpp) does not.

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <string_view>
#include <vector>

#include "stint/annotations/region.hpp"
#include "stint/recording/registry.hpp"

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
template <class = void>
region_kind_stats read_region_list(std::string_view label, const std::atomic<region_counter*>& head) {
    region_kind_stats out;
    out.label = label;
    const double ns_per_tick = the_registry().calibration().ns_per_tick;
    // acquire: pairs with the release in link_region(); each counter's fields are visible.
    for (const region_counter* c = head.load(std::memory_order_acquire); c != nullptr; c = c->next) {
        const std::uint64_t count = c->count.load(std::memory_order_relaxed);
        const double ticks = static_cast<double>(c->ticks.load(std::memory_order_relaxed));
        const auto ns = static_cast<std::int64_t>(ticks * ns_per_tick);
        auto it = std::find_if(out.regions.begin(), out.regions.end(),
                               [&](const region_stats& r) { return r.name == c->name; });
        if (it == out.regions.end()) {
            out.regions.push_back({c->name, count, ns});
        } else {
            it->count += count;
            it->total_ns += ns;
        }
        out.count += count;
        out.total_ns += ns;
    }
    std::sort(out.regions.begin(), out.regions.end(),
              [](const region_stats& a, const region_stats& b) { return a.name < b.name; });
    return out;
}

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
