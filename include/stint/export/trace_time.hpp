#pragma once
// The times a Chrome trace writes, chosen so that viewers nest events as the program ran.
//
// A trace holds "ts" and "dur" in microseconds; viewers read both as doubles and draw an event's end
// at ts + dur, some (speedscope) after subtracting the thread's first ts from every ts. Written as
// exact decimals, 8439.165 + 0.010 is 8439.175000000001 in IEEE double, past 8439.175, the end of the
// parent that ends in the same nanosecond: the viewer then sees a child that outlives its parent. So
// "ts" stays exact, and "dur" is the double (in its shortest round-trip form) that makes both sums
// land on the double nearest end_ns / 1000: equal integer ends read back equal, and ordered ends
// stay ordered. It moves no time by more than a few units in the last place (far below 1 ns).

#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <unordered_map>
#include <vector>

#include <fmt/compile.h>
#include <fmt/format.h>

#include "stint/analysis/event_list.hpp"
#include "stint/detail/deferred.hpp"
#include "stint/export/device_trace.hpp"
#include "stint/export/json_writer.hpp"

namespace stint::detail {

/// A nanosecond count as the double a viewer reads from its microsecond text: ns / 1000 correctly
/// rounded, which is what strtod or JSON.parse make of "1234.567" (exact for |ns| < 2^53).
template <class = void>
double trace_microseconds(std::int64_t ns) noexcept { return static_cast<double>(ns) / 1000.0; }

/// Where viewers draw an event's end: ts + dur as written (plain), and after subtracting the thread's
/// first ts from ts (shifted, as speedscope does before adding dur).
struct trace_end {
    double plain = std::numeric_limits<double>::infinity();
    double shifted = std::numeric_limits<double>::infinity();
};

/// The "dur" of one event: the double to write, whether the three-decimal text of the integer
/// duration reads back as it, and the ends it gives.
struct trace_duration {
    double value = 0;
    bool three_decimals = true;
    trace_end end;
};

namespace trace_time_detail {

// The largest d >= 0 with s + d <= cap in double (0 when s > cap): a binary search over the bit
// patterns of non-negative doubles, which are ordered as the values are. The answer is within a few
// units in the last place of cap - s, so the search starts from that neighbourhood.
template <class = void>
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

/// Chooses the "dur" of an event [start_ns, end_ns] on a thread whose first complete event starts at
/// `origin` (µs, as read back). Aims at ends equal to the doubles nearest end_ns / 1000 (plain) and
/// that minus origin (shifted), never above `cap` (the parent's ends, when it ends in the same
/// nanosecond). Where no double reaches those ends (ts + dur then lands exactly half-way between two
/// doubles, and the tie rounds away), it takes the largest dur whose ends stay at or below them.
///     trace_duration d = choose_trace_duration(8'439'165, 8'439'175, 0.0, {});
///     // 8439.165 + d.value == 8439.175 as doubles; d.three_decimals is false
template <class = void>
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

/// Writes a duration chosen by choose_trace_duration: three decimals when they read back as its
/// value, else the value's shortest round-trip form. Needs 25 bytes of room.
template <class = void>
char* write_trace_duration(char* o, const trace_duration& d, std::int64_t duration_ns) noexcept {
    if (d.three_decimals) return write_microseconds(o, duration_ns);
    return fmt::format_to(o, FMT_COMPILE("{}"), d.value);
}

template <class = void>
class basic_trace_timeline;
/// basic_trace_timeline's one form (a template only so that a file that does not use it does not compile it).
using trace_timeline = basic_trace_timeline<>;

/// The durations of one event list's trace: each row's origin (a thread, a device stream, or a
/// stream's sync row), and the ends of events that others end with (a child that ends in its
/// parent's nanosecond is held at or below the parent's ends).
///     trace_timeline timeline(events);
///     for (event_index i = 0; i < events.size(); ++i) use(timeline.duration(i));  // not for instants
template <class Unused>
class basic_trace_timeline {
    template <class T>
    using later = deferred_t<T, Unused>;  // checked when used (detail/deferred.hpp)

public:
    explicit basic_trace_timeline(const later<event_list>& events) : events_(events) {
        origins_.assign(2 * events.threads().size(), std::numeric_limits<double>::infinity());
        for (const event& e : events) {
            // Viewers do not shift by instants' ts, nor by flow and async points', nor by counters' (drawn
            // on the process's counter tracks, not on this row).
            if (e.kind == event_kind::instant || is_point_kind(e.kind) || e.kind == event_kind::counter) continue;
            double& origin = origins_[row(e)];
            origin = std::fmin(origin, trace_microseconds(e.start_ns));
        }
    }

    /// The "dur" of events[i], a complete event.
    trace_duration duration(event_index i) { return choose(i, cap_of(i)); }

private:
    trace_duration choose(event_index i, trace_end cap) const {
        const event& e = events_[i];
        return choose_trace_duration(e.start_ns, e.end_ns, origins_[row(e)], cap);
    }

    // The row a viewer draws an event on: its thread or device stream, or that stream's sync row
    // (device_trace.hpp), each with its own origin.
    std::size_t row(const event& e) const noexcept {
        return on_sync_row(events_, e) ? events_.threads().size() + e.thread : e.thread;
    }

    // The parent's ends when it ends in the same nanosecond as events[i]; no bound otherwise. Ends
    // of such parents are kept, computed down each chain of equal ends from its top, so the order of
    // the list does not matter.
    trace_end cap_of(event_index i) {
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

    const later<event_list>& events_;
    later<std::vector<double>> origins_;
    later<std::unordered_map<event_index, trace_end>> decided_;
    later<std::vector<event_index>> chain_;
};

}  // namespace stint::detail
