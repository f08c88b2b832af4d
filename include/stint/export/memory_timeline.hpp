#pragma once
// Live bytes of one device over time (profile_memory), as torch's export_memory_timeline writes them:
// JSON points for tools, or a self-contained HTML page with the plot for a person.

#include <cstdint>      // std::int64_t
#include <string>       // std::string
#include <string_view>  // std::string_view
#include <vector>       // std::vector

#include "stint/analysis/event_list.hpp"
#include "stint/common/device.hpp"
#include "stint/detail/separate_compilation.hpp"

namespace stint::detail {

class json_writer;  // export/json_writer.hpp

/// torch's memory categories in its column order (_CATEGORY_TO_COLORS): stint knows no tensor roles,
/// so every byte goes to the last, "Unknown" (torch's None, memory it cannot attribute to a tensor).
inline constexpr std::string_view memory_timeline_categories[] = {
    "PARAMETER", "OPTIMIZER_STATE", "INPUT", "TEMPORARY", "ACTIVATION", "GRADIENT", "AUTOGRAD_DETAIL", "Unknown"};

/// One device's live bytes: after every memory event of a microsecond, at that microsecond.
struct memory_timeline_points {
    std::vector<std::int64_t> times_us;  ///< wall clock, µs since the Unix epoch, ascending
    std::vector<std::int64_t> bytes;     ///< Total Allocated after the microsecond's last event
};

/// Floor division: a time before the epoch still lands in the microsecond that holds it.
constexpr std::int64_t floor_microseconds(std::int64_t ns) noexcept {
    return ns / 1000 - (ns % 1000 < 0 ? 1 : 0);
}

/// The [memory] events of `on` in time order (the list's order: start, then the order reported),
/// coalesced per microsecond as torch's _coalesce_timeline does. [OutOfMemory] events change no
/// live bytes and are left out.
STINT_DECL memory_timeline_points memory_timeline_of(const event_list& events, device on);

/// torch's name of a device: "cpu", "cuda:0".
STINT_DECL std::string memory_timeline_device_name(device d);

/// write_memory_timeline_json's text (impl/memory_timeline.ipp), into `out` (flushed).
STINT_DECL void write_memory_timeline_points(json_writer& out, const memory_timeline_points& points);

/// `text` for HTML text or a quoted attribute: & < > " ' as references, ill-formed UTF-8 and control
/// characters (other than tab and newline) as U+FFFD.
STINT_DECL void append_html_escaped(std::string& out, std::string_view text);

STINT_DECL std::string html_escaped(std::string_view text);

/// Bytes in the largest binary unit that keeps them >= 1: "512 B", "1.50 MiB".
STINT_DECL std::string memory_timeline_bytes(double bytes);

/// A round step (1, 2 or 5 times a power of ten) that cuts [0, span] into at most about `parts`.
STINT_DECL double memory_timeline_step(double span, int parts);

/// A tick label with as many decimals as the step needs ("0.25", "40").
STINT_DECL std::string memory_timeline_tick(double value, double step);

/// write_memory_timeline_html's page.
STINT_DECL std::string memory_timeline_html(const memory_timeline_points& points, const event_list& events, device on);

/// The page: a title naming the device, the peak (its bytes, when, and the op running), and an
/// inline SVG step plot of live bytes against milliseconds since the first point (torch's plot axes:
/// "Time (ms)" from the first time, memory on y). No script, no network.
template <class Sink>
void write_memory_timeline_html(Sink& sink, const memory_timeline_points& points, const event_list& events,
                                device on) {
    sink.write(memory_timeline_html(points, events, on));
}

}  // namespace stint::detail

namespace stint {

/// Writes the live bytes of `device` over the events' session: for each microsecond with [memory]
/// events on it, the device's Total Allocated after the last of them (event_list::memory_of), in time
/// order. The file's kind follows the path's ending:
/// - ".json", ".json.gz" (gzip): the `[times, sizes]` that torch's
///   MemoryProfileTimeline.export_memory_timeline writes (torch/profiler/_memory_profiler.py,
///   _coalesce_timeline): `times` in integer microseconds since the Unix epoch (the session's base
///   time plus the event's, as torch converts its ns timestamps), `sizes` one row per time of
///   1 + 8 integers: a leading 0, then torch's categories PARAMETER, OPTIMIZER_STATE, INPUT,
///   TEMPORARY, ACTIVATION, GRADIENT, AUTOGRAD_DETAIL and Unknown. stint records no tensor roles, so
///   every byte is in the last column, as torch does for memory it cannot categorise; tools that
///   stack the columns (torch's plot takes their cumulative sum) read the same live bytes.
/// - ".html": a self-contained page (inline SVG, no script) with the step plot, the device in the
///   title and the peak marked with its bytes and the op that was running (event_list::memory_peaks).
/// A device with no memory events gives an empty timeline (`[[], []]`; the page says so). Another
/// ending (torch's ".raw.json.gz" included) throws std::invalid_argument; an unwritable path
/// std::system_error, as export_chrome_trace.
///
///     stint::export_memory_timeline(prof.events(), "memory.html", {stint::device_type::cuda, 0});
///     stint::export_memory_timeline(prof.events(), "memory.json.gz");   // CPU memory
STINT_DECL void export_memory_timeline(const event_list& events, const std::string& path,
                                       stint::device device = {device_type::cpu, -1});

}  // namespace stint

#if defined(STINT_HEADER_ONLY)
#include "stint/export/impl/memory_timeline.ipp"
#endif
