#pragma once
// Reads a Chrome/Kineto JSON trace, as torch.profiler and stint write it, or stint's Perfetto trace
// (plain or gzip), in one streaming pass: each complete event is handed to a callback as it is parsed,
// so memory does not grow with the file (no DOM of the whole trace is ever built).

#include <cstdint>      // std::int64_t, std::int32_t, std::uint64_t, std::uint8_t
#include <functional>   // std::function
#include <optional>     // std::optional
#include <stdexcept>    // std::runtime_error
#include <string>       // std::string
#include <string_view>  // std::string_view

#include "stint/detail/separate_compilation.hpp"

namespace stint {

/// What a trace event is, from its category (and, for kernels, its name): the classes the analyses
/// of analysis/trace_analysis.hpp count.
enum class trace_activity : std::uint8_t {
    cpu_op,         ///< "cpu_op", "operator", or no category (torch's legacy profiler): an op on a CPU thread
    annotation,     ///< "user_annotation", "python_function", stint's scopes: a range on a CPU thread
    kernel,         ///< "kernel": device computation (or communication, by its name)
    memcpy,         ///< "gpu_memcpy", "Memcpy": a device copy
    memset,         ///< "gpu_memset", "Memset": a device memset
    runtime,        ///< "cuda_runtime", "cuda_driver", "Runtime": an API call that may launch device work
    ignored,        ///< known but not work: syncs, GPU annotations, overhead, instants, flows
    unknown,        ///< a category this reader does not know (counted, not analysed)
};

/// One complete ("ph": "X") event of a trace. The views are valid only during the callback.
struct trace_record {
    std::string_view name;
    std::string_view category;
    std::string_view shapes;           ///< args "Input Dims" as the JSON text it was written as ("" if none)
    trace_activity activity = trace_activity::unknown;
    std::int64_t pid = 0;              ///< a device event's process is its device in Kineto's traces
    std::int64_t tid = 0;              ///< a device event's thread is its stream
    std::int64_t start_ns = 0;
    std::int64_t duration_ns = 0;
    std::int64_t correlation = -1;     ///< args "correlation": a launch and the work it launched share it
    std::int32_t device = -1;          ///< args "device"
    std::int64_t stream = -1;          ///< args "stream"
};

/// What a read saw besides the events it handed on: nothing is dropped silently.
struct trace_read_stats {
    std::uint64_t bytes = 0;               ///< JSON bytes read (after decompression)
    std::uint64_t events = 0;              ///< complete events handed to the callback
    std::uint64_t missing_duration = 0;    ///< "X" events without a numeric "dur" or "ts" (skipped)
    std::uint64_t unknown_category = 0;    ///< complete events of an unknown category (handed on as unknown)
    std::uint64_t invalid_utf8_names = 0;  ///< names that were not valid UTF-8 (kept byte for byte)
    std::uint64_t other_phases = 0;        ///< events that are not complete ("ph" other than "X")
    std::optional<std::int32_t> rank{};    ///< "distributedInfo": {"rank": n}, when the trace has it
};

/// A trace that is not JSON, or ends early: says where (the byte offset in the JSON text, after
/// decompression) and what was expected.
///
///     try { stint::read_chrome_trace("t.json", sink); }
///     catch (const stint::trace_read_error& e) { fmt::print("{} at byte {}\n", e.what(), e.offset()); }
class trace_read_error : public std::runtime_error {
public:
    trace_read_error(const std::string& what, std::uint64_t offset) : std::runtime_error(what), offset_(offset) {}
    [[nodiscard]] std::uint64_t offset() const noexcept { return offset_; }

private:
    std::uint64_t offset_;
};

namespace detail {
/// Equal ignoring ASCII case (categories are "Kernel" in old Kineto, "kernel" now).
[[nodiscard]] STINT_DECL bool iequals(std::string_view a, std::string_view b) noexcept;
/// Whether `s` is valid UTF-8 (names that are not are counted, and kept byte for byte).
[[nodiscard]] STINT_DECL bool valid_utf8(std::string_view s) noexcept;
}  // namespace detail

/// Receives each complete event of a trace, in file order.
using trace_sink = std::function<void(const trace_record&)>;

/// The activity of an event of category `category` named `name` (case-insensitive categories, as
/// Kineto's spelling changed between versions).
[[nodiscard]] STINT_DECL trace_activity classify_trace_event(std::string_view category, std::string_view name);

/// Reads a Chrome/Kineto JSON trace file (gzip or plain; the first bytes decide), handing each complete
/// event to `sink`. Throws trace_read_error on malformed JSON or a truncated file, std::system_error
/// when the file cannot be opened.
///
///     stint::read_chrome_trace("run.pt.trace.json.gz", [&](const stint::trace_record& r) { ... });
STINT_DECL trace_read_stats read_chrome_trace(const std::string& path, const trace_sink& sink);

/// The same over JSON text already in memory.
STINT_DECL trace_read_stats read_chrome_trace_text(std::string_view json, const trace_sink& sink);

/// Reads stint's Perfetto protobuf trace (export/perfetto_trace.hpp; gzip or plain) packet by packet:
/// each slice on a thread or device-stream track is handed on at its end, so memory grows with the
/// interned names and the open slices only. stint's Perfetto traces carry no correlation ids, so their
/// device work cannot be matched to its launch (launch statistics, host wait and queue length need the
/// JSON trace). A slice still open at the end is counted in missing_duration.
STINT_DECL trace_read_stats read_perfetto_trace(const std::string& path, const trace_sink& sink);

/// The same over the trace's bytes in memory.
STINT_DECL trace_read_stats read_perfetto_trace_bytes(std::string_view bytes, const trace_sink& sink);

/// Reads either kind of trace, told apart by its first byte (a protobuf Trace starts with its packet
/// field's key, 0x0A; JSON with '{', '[' or white space).
STINT_DECL trace_read_stats read_trace(const std::string& path, const trace_sink& sink);

}  // namespace stint

#if defined(STINT_HEADER_ONLY)
#include "stint/analysis/impl/trace_reader.ipp"
#endif
