#pragma once
// Chrome / Perfetto trace JSON in Kineto's shape (design §4), streamed: the document is never built
// in memory, and it lands under its final name only when complete.

#include <array>        // std::array
#include <cstdint>      // std::int64_t, std::uint64_t
#include <optional>     // std::optional
#include <span>         // std::span
#include <string>       // std::string
#include <string_view>  // std::string_view
#include <utility>      // std::pair
#include <vector>       // std::vector

#include "stint/analysis/event_list.hpp"
#include "stint/detail/separate_compilation.hpp"
#include "stint/export/device_trace.hpp"
#include "stint/export/json_writer.hpp"
#include "stint/export/trace_time.hpp"

namespace stint::detail {

/// What a trace carries besides the events.
struct chrome_trace_info {
    std::uint64_t pid = 0;
    std::uint64_t truncated_names = 0;
    /// The process's name in viewers, and its place among processes (its pid when not said).
    std::string process_name = "stint";
    std::optional<std::int64_t> sort_index{};
    /// Added to a device's index to make its pid: 0 writes Kineto's pids; a job's trace
    /// (distributed/mpi.hpp) gives each rank's devices pids of their own.
    std::uint64_t device_pid_base = 0;
    /// Added to every flow's and async span's id (ids wrap): a job's trace keeps each rank's apart.
    std::uint64_t flow_id_base = 0;
    /// Top-level keys in insertion order; values are JSON text already validated.
    std::vector<std::pair<std::string, std::string>> metadata_json;
};

/// The keys one side of an op's values is written under.
struct value_keys {
    std::string_view dims, strides, types, concrete, truncated;
};
inline constexpr value_keys input_keys{", \"Input Dims\": ", ", \"Input Strides\": ", ", \"Input type\": ",
                                       ", \"Concrete Inputs\": ", ", \"Inputs truncated\": true"};
inline constexpr value_keys output_keys{", \"Output Dims\": ", ", \"Output Strides\": ", ", \"Output type\": ",
                                        ", \"Concrete Outputs\": ", ""};

/// Captured values as Kineto writes an op's inputs: dims (a TensorList nests one list per tensor),
/// strides, types, concrete values (when captured); stint adds "Inputs truncated": true when the
/// capture hit a bound.
STINT_DECL void write_values(json_writer& out, const event_args& args, const value_keys& keys);

/// The keys an event's "args" may hold besides stint::add_args' names: a named arg called so is written
/// as "<name> (arg)" (a JSON object's keys must be unique).
inline constexpr std::array<std::string_view, 15> event_arg_keys{
    "External id",        "Record function id", "Input Dims",      "Input Strides",    "Input type",
    "Concrete Inputs",    "Inputs truncated",   "Output Dims",     "Output Strides",   "Output type",
    "Concrete Outputs",   "Module Hierarchy",   "Call stack",      "Args truncated",   "Source Location",
};

/// stint::add_args' arguments, each `, "name": value`, then "Args truncated": true when a call gave more
/// than its record held.
STINT_DECL void write_named_args(json_writer& out, const event_args& args);

/// An op's args: its inputs ("Input Dims", ...), its outputs from stint::record_outputs ("Output Dims",
/// "Output Strides", "Output type", "Concrete Outputs"), then "Module Hierarchy" (with_modules), then
/// stint::add_args' arguments.
STINT_DECL void write_event_args(json_writer& out, const event_args& args);

/// Top-level keys the writer emits itself; metadata may not take them (a JSON object's keys must be
/// unique).
inline constexpr std::array<std::string_view, 8> reserved_trace_keys{
    "schemaVersion", "deviceProperties", "stint",           "WARNING",
    "traceEvents",   "traceName",        "displayTimeUnit", "baseTimeNanoseconds",
};

STINT_DECL bool is_reserved_trace_key(std::string_view key) noexcept;

/// A [memory] or [OutOfMemory] event's args in Kineto's names and order (an OOM has no "Addr").
STINT_DECL void write_memory_args(json_writer& out, const event& e, const memory_record& memory);

/// The "stint" block's memory summary: events the budget dropped, each device's peak live bytes.
STINT_DECL void write_memory_summary(json_writer& out, std::uint64_t dropped, std::span<const memory_peak> peaks);

/// What a trace's head says besides the events: the session's counts and summaries, and its threads.
struct chrome_trace_head {
    std::uint64_t recorded = 0;
    std::uint64_t dropped = 0;
    std::uint64_t late = 0;
    const device_report* device = nullptr;
    std::uint64_t memory_dropped = 0;
    std::span<const memory_peak> memory_peaks;
    std::span<const thread_info> threads;
    bool no_events = false;
    /// A streamed trace's records whose captured values the stream left out (trace_stream.hpp).
    std::optional<std::uint64_t> values_not_streamed;
    /// Flow and async span points without a partner.
    unmatched_points unmatched = {};

    STINT_DECL static chrome_trace_head of(const event_list& events) noexcept;
};

/// Writes the trace's top-level keys but traceEvents and the closing ones (write_trace_end), each line
/// ending in ",\n": deviceProperties, the metadata, the "stint" block, and a WARNING when there are no
/// events.
STINT_DECL void write_trace_keys(json_writer& out, const chrome_trace_head& head, const chrome_trace_info& info);

/// The "stint" block: stint's version, what the session recorded, and every count of what it lost
/// (dropped records, device and memory losses, unmatched points), in total and per thread.
STINT_DECL void write_stint_block(json_writer& out, const chrome_trace_head& head, const chrome_trace_info& info);

/// The process's metadata events (process_name, process_sort_index), the first elements of
/// traceEvents when `first` (no comma before them).
STINT_DECL void write_process_metadata(json_writer& out, const chrome_trace_info& info, bool first);

/// Opens traceEvents with the process's metadata events. Events follow, each starting with ",\n".
STINT_DECL void write_trace_events_opening(json_writer& out, const chrome_trace_info& info);

/// The threads' metadata events (thread_name, thread_sort_index), inside traceEvents.
STINT_DECL void write_thread_metadata(json_writer& out, std::span<const thread_info> threads,
                                      const chrome_trace_info& info);

/// Writes a trace's head: the top-level keys, the "stint" block, and the opening of traceEvents with
/// the process's and threads' metadata events. Events follow, each starting with ",\n".
STINT_DECL void write_trace_head(json_writer& out, const chrome_trace_head& head, const chrome_trace_info& info);

/// Writes the trace's closing keys, after traceEvents has been closed.
STINT_DECL void write_trace_closing_keys(json_writer& out, std::int64_t base_time_ns);

/// Writes a trace's end after its events.
STINT_DECL void write_trace_end(json_writer& out, std::int64_t base_time_ns);

/// Writes a flow's or async span's point as Chrome writes them: a flow's begin "s" and end "f" (with
/// "bp": "e", so that both bind to the slice enclosing them on their thread), an async span's "b" and
/// "e" (drawn on a track of their own). `where` is `, "pid": P, "tid": T, "ts": `. Ids beyond 2^53 are
/// written as hex strings, which JavaScript viewers keep exact.
STINT_DECL void write_point(json_writer& out, event_kind kind, std::string_view name, std::uint64_t id,
                            std::string_view where, std::int64_t ts_ns);

/// Writes a sample of the counter track `name` as Chrome's counter event, `{"ph": "C", "name": N, "pid": P,
/// "tid": T, "ts": ..., "args": {N: value}}`: viewers draw one track per name in the process. `where` is
/// `, "pid": P, "tid": T, "ts": `. JSON has no NaN or infinity and a counter track plots only numbers:
/// an infinity is written as the largest finite double of its sign, a NaN sample is left out (the track
/// keeps its previous value); each is counted in `not_finite`, which write_not_finite_note reports.
STINT_DECL void write_counter_sample(json_writer& out, std::string_view name, const counter_value& value,
                                     std::string_view where, std::int64_t ts_ns, std::uint64_t& not_finite);

/// A global instant at `ts_ns` saying that `count` counter samples were not finite (write_counter_sample),
/// so that the timeline itself says what its counter tracks do not show. Nothing when `count` is 0.
STINT_DECL void write_not_finite_note(json_writer& out, std::uint64_t count, std::uint64_t pid, std::int64_t ts_ns);
/// A global instant ("s": "g", drawn across the whole timeline) named "stint: <count> <what>", so that the
/// trace itself says what it lacks. `what` is written as it is: constant text with nothing to escape.
STINT_DECL void write_global_note(json_writer& out, std::uint64_t count, std::string_view what, std::uint64_t pid,
                                  std::int64_t ts_ns);

/// Writes one process's elements of traceEvents: its metadata events, its threads', its devices',
/// then its events, each element after a ",\n" (but the very first of the array, when `first`).
/// A job's trace (distributed/mpi.hpp) is one process's elements after another's.
STINT_DECL void write_trace_events(json_writer& out, const event_list& events, const chrome_trace_info& info,
                                   bool first);

/// write_chrome_trace's body: the whole trace of `events`, through `out` (flushed at its end).
STINT_DECL void write_chrome_trace_to(json_writer& out, const event_list& events, const chrome_trace_info& info);

/// Writes the trace to any sink with `write(std::string_view)`.
template <class Sink>
void write_chrome_trace(Sink& sink, const event_list& events, const chrome_trace_info& info) {
    json_writer out(sink);
    write_chrome_trace_to(out, events, info);
}

/// Writes the trace to `path` (gzip when it ends in ".gz") through a temporary file renamed into
/// place; throws std::system_error naming the path and the OS reason.
STINT_DECL void write_chrome_trace_file(const std::string& path, const event_list& events,
                                        const chrome_trace_info& info);

}  // namespace stint::detail

#if defined(STINT_HEADER_ONLY)
#include "stint/export/impl/chrome_trace.ipp"
#endif
