#pragma once
// The body of annotations/region_counters.hpp: a region kind's counters summed by name.

#include "stint/annotations/region_counters.hpp"

#include <algorithm>  // std::find_if, std::sort

#include "stint/recording/registry.hpp"

namespace stint::detail {

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
