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

#include <cstddef>        // std::size_t
#include <cstdint>        // std::int64_t
#include <limits>         // std::numeric_limits
#include <unordered_map>  // std::unordered_map
#include <vector>         // std::vector

#include "stint/analysis/event_list.hpp"
#include "stint/detail/separate_compilation.hpp"

namespace stint::detail {

/// A nanosecond count as the double a viewer reads from its microsecond text: ns / 1000 correctly
/// rounded, which is what strtod or JSON.parse make of "1234.567" (exact for |ns| < 2^53).
inline double trace_microseconds(std::int64_t ns) noexcept { return static_cast<double>(ns) / 1000.0; }

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
STINT_DECL double largest_addend(double s, double cap) noexcept;

}  // namespace trace_time_detail

/// Chooses the "dur" of an event [start_ns, end_ns] on a thread whose first complete event starts at
/// `origin` (µs, as read back). Aims at ends equal to the doubles nearest end_ns / 1000 (plain) and
/// that minus origin (shifted), never above `cap` (the parent's ends, when it ends in the same
/// nanosecond). Where no double reaches those ends (ts + dur then lands exactly half-way between two
/// doubles, and the tie rounds away), it takes the largest dur whose ends stay at or below them.
///     trace_duration d = choose_trace_duration(8'439'165, 8'439'175, 0.0, {});
///     // 8439.165 + d.value == 8439.175 as doubles; d.three_decimals is false
STINT_DECL trace_duration choose_trace_duration(std::int64_t start_ns, std::int64_t end_ns, double origin,
                                                trace_end cap) noexcept;

/// Writes a duration chosen by choose_trace_duration: three decimals when they read back as its
/// value, else the value's shortest round-trip form. Needs 25 bytes of room.
STINT_DECL char* write_trace_duration(char* o, const trace_duration& d, std::int64_t duration_ns) noexcept;

/// The durations of one event list's trace: each row's origin (a thread, a device stream, or a
/// stream's sync row), and the ends of events that others end with (a child that ends in its
/// parent's nanosecond is held at or below the parent's ends).
///     trace_timeline timeline(events);
///     for (event_index i = 0; i < events.size(); ++i) use(timeline.duration(i));  // not for instants
class trace_timeline {
public:
    STINT_DECL explicit trace_timeline(const event_list& events);

    /// The "dur" of events[i], a complete event.
    trace_duration duration(event_index i) { return choose(i, cap_of(i)); }

private:
    STINT_DECL trace_duration choose(event_index i, trace_end cap) const;

    // The row a viewer draws an event on: its thread or device stream, or that stream's sync row
    // (device_trace.hpp), each with its own origin.
    STINT_DECL std::size_t row(const event& e) const noexcept;

    // The parent's ends when it ends in the same nanosecond as events[i]; no bound otherwise. Ends
    // of such parents are kept, computed down each chain of equal ends from its top, so the order of
    // the list does not matter.
    STINT_DECL trace_end cap_of(event_index i);

    const event_list& events_;
    std::vector<double> origins_;
    std::unordered_map<event_index, trace_end> decided_;
    std::vector<event_index> chain_;
};

}  // namespace stint::detail

#if defined(STINT_HEADER_ONLY)
#include "stint/export/impl/trace_time.ipp"
#endif
