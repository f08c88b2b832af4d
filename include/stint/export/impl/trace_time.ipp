#pragma once
// The bodies of trace_time.hpp: the choice of each event's "dur", and trace_timeline's members.

#include "stint/export/trace_time.hpp"

#include <bit>    // std::bit_cast
#include <cmath>  // std::fmax, std::fmin, std::nextafter

#include <fmt/compile.h>  // FMT_COMPILE
#include <fmt/format.h>   // fmt::format_to

#include "stint/export/device_trace.hpp"
#include "stint/export/json_writer.hpp"

namespace stint::detail {

namespace trace_time_detail {

double largest_addend(double s, double cap) noexcept {
    if (!(s + 0.0 <= cap)) return 0;
    const double guess = cap - s;
    const double slack = 4 * (std::nextafter(cap, std::numeric_limits<double>::infinity()) - cap);
    auto lo = std::bit_cast<std::uint64_t>(std::fmax(0.0, guess - slack));  // s + lo <= cap
    auto hi = std::bit_cast<std::uint64_t>(guess + slack);                   // s + hi > cap
    if (s + std::bit_cast<double>(lo) > cap) lo = 0;
    while (hi - lo > 1) {
        const std::uint64_t mid = lo + (hi - lo) / 2;
        if (s + std::bit_cast<double>(mid) <= cap) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    return std::bit_cast<double>(lo);
}

}  // namespace trace_time_detail

trace_duration choose_trace_duration(std::int64_t start_ns, std::int64_t end_ns, double origin,
                                     trace_end cap) noexcept {
    const double start = trace_microseconds(start_ns);
    const double end = trace_microseconds(end_ns);
    const double shifted_start = start - origin;
    const trace_end target{std::fmin(end, cap.plain), std::fmin(end - origin, cap.shifted)};
    const auto reaches = [&](double d) { return start + d == target.plain && shifted_start + d == target.shifted; };
    const double written = trace_microseconds(end_ns - start_ns);
    if (reaches(written)) return {written, true, target};
    // Usually the exact difference of the ends and starts (representable when dur <= ts).
    for (const double d : {end - start, target.shifted - shifted_start}) {
        if (d >= 0 && reaches(d)) return {d, false, target};
    }
    const double d = std::fmin(trace_time_detail::largest_addend(start, target.plain),
                               trace_time_detail::largest_addend(shifted_start, target.shifted));
    const trace_end below{start + d, shifted_start + d};
    if (start + written == below.plain && shifted_start + written == below.shifted) return {written, true, below};
    return {d, false, below};
}

char* write_trace_duration(char* o, const trace_duration& d, std::int64_t duration_ns) noexcept {
    if (d.three_decimals) return write_microseconds(o, duration_ns);
    return fmt::format_to(o, FMT_COMPILE("{}"), d.value);
}

trace_timeline::trace_timeline(const event_list& events) : events_(events) {
    origins_.assign(2 * events.threads().size(), std::numeric_limits<double>::infinity());
    for (const event& e : events) {
        // Viewers do not shift by instants' ts, nor by flow and async points', nor by counters' (drawn
        // on the process's counter tracks, not on this row).
        if (e.kind == event_kind::instant || is_point_kind(e.kind) || e.kind == event_kind::counter) continue;
        double& origin = origins_[row(e)];
        origin = std::fmin(origin, trace_microseconds(e.start_ns));
    }
}

trace_duration trace_timeline::choose(event_index i, trace_end cap) const {
    const event& e = events_[i];
    return choose_trace_duration(e.start_ns, e.end_ns, origins_[row(e)], cap);
}

std::size_t trace_timeline::row(const event& e) const noexcept {
    return on_sync_row(events_, e) ? events_.threads().size() + e.thread : e.thread;
}

trace_end trace_timeline::cap_of(event_index i) {
    const event_index parent = events_[i].parent;
    if (parent == no_index || events_[parent].end_ns != events_[i].end_ns) return {};
    if (const auto found = decided_.find(parent); found != decided_.end()) return found->second;
    chain_.clear();
    for (event_index p = parent;;) {
        chain_.push_back(p);
        const event_index up = events_[p].parent;
        if (up == no_index || events_[up].end_ns != events_[p].end_ns || decided_.count(up) != 0) break;
        p = up;
    }
    for (auto p = chain_.rbegin(); p != chain_.rend(); ++p) {
        const event_index up = events_[*p].parent;
        const bool bounded = up != no_index && events_[up].end_ns == events_[*p].end_ns;
        decided_[*p] = choose(*p, bounded ? decided_.at(up) : trace_end{}).end;
    }
    return decided_.at(parent);
}

}  // namespace stint::detail
