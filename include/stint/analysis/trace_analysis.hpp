#pragma once
// Holistic Trace Analysis's analyses in C++, over a session's events or a trace file read in one
// streaming pass (analysis/trace_reader.hpp): each device's temporal breakdown, idle time by cause,
// communication/computation overlap, kernel durations, launch statistics, queue length per stream,
// each thread's busy and idle time, and per-op totals for run-to-run diffs (analysis/trace_diff.hpp).
//
// Memory: a trace_profile keeps one compact interval per event that the analyses need (32 bytes for a
// CPU op, 40 for device work, 32 for a launch) and each distinct name once; nothing of the JSON text.

#include <cstddef>        // std::size_t
#include <cstdint>        // std::int64_t, std::int32_t, std::uint64_t, std::uint32_t, std::uint8_t
#include <deque>          // std::deque
#include <optional>       // std::optional
#include <string>         // std::string
#include <string_view>    // std::string_view
#include <unordered_map>  // std::unordered_map
#include <utility>        // std::pair
#include <vector>         // std::vector

#include "stint/analysis/event_list.hpp"
#include "stint/analysis/trace_reader.hpp"
#include "stint/detail/separate_compilation.hpp"

namespace stint {

/// Thresholds of the analyses (HTA's defaults where HTA has one).
struct trace_analysis_options {
    /// A gap between a stream's kernels shorter than this is "kernel wait" (HTA's consecutive_kernel_delay).
    std::int64_t kernel_wait_ns = 30;
    /// launches(): kernels shorter than this are "short".
    std::int64_t short_kernel_ns = 10'000;
    /// op_stats(): split each name by its input shapes ("Input Dims").
    bool group_by_input_shape = false;
};

/// count, total and nearest-rank percentiles (the p-th percentile of n sorted values is the
/// ceil(p/100 * n)-th) of a set of durations.
struct duration_stats {
    std::uint64_t count = 0;
    std::int64_t total_ns = 0;
    std::int64_t min_ns = 0;
    std::int64_t p50_ns = 0;
    std::int64_t p90_ns = 0;
    std::int64_t p99_ns = 0;
    std::int64_t max_ns = 0;
};

/// One device's time (docs/guide: "analysing a trace"). Every figure is the length of a
/// union of intervals of the device's work: computation (kernels but communication), communication
/// (kernels whose names say NCCL, RCCL or a collective), memory (copies and memsets). span runs from
/// its first work's start to its last work's end; idle = span - |union of all its work|.
struct device_breakdown {
    std::string device;            ///< "cuda:0", or "rank 1 cuda:0" in a merged job trace
    std::int32_t rank = -1;        ///< -1: the trace names no rank
    std::int32_t index = 0;        ///< the device's index
    std::int64_t span_ns = 0;
    std::int64_t compute_ns = 0;
    std::int64_t communication_ns = 0;
    std::int64_t memory_ns = 0;
    std::int64_t busy_ns = 0;      ///< |union of all work|
    std::int64_t idle_ns = 0;
    std::int64_t overlap_ns = 0;   ///< |computation ∩ communication|

    /// `part` as a percentage of the span.
    [[nodiscard]] double percent(std::int64_t part) const noexcept {
        return span_ns > 0 ? 100.0 * static_cast<double>(part) / static_cast<double>(span_ns) : 0.0;
    }
    /// |computation ∩ communication| / |communication|, in percent (0 without communication).
    [[nodiscard]] double overlap_percent() const noexcept {
        return communication_ns > 0 ? 100.0 * static_cast<double>(overlap_ns) / static_cast<double>(communication_ns)
                                    : 0.0;
    }
};

/// One stream's idle time by cause (HTA's idle time breakdown): each gap between the stream's work
/// (from the end of all earlier work to the next start) is host wait when the next work's launch call
/// began after the gap began (nothing was queued: the GPU waited for the CPU), else kernel wait when
/// shorter than kernel_wait_ns, else other.
struct stream_idle {
    std::string device;
    std::int64_t stream = 0;
    std::uint64_t gaps = 0;
    std::int64_t idle_ns = 0;
    std::int64_t host_wait_ns = 0;
    std::int64_t kernel_wait_ns = 0;
    std::int64_t other_ns = 0;
};

/// A kernel name's durations on one device, or on all ("all").
struct kernel_summary {
    std::string name;
    std::string device;
    duration_stats durations;
};

/// Launch statistics from the launch-to-kernel correlation (args "correlation": torch's and stint's
/// traces both carry it on the API call and on the work it launched).
struct launch_statistics {
    std::uint64_t matched = 0;              ///< device work whose launch is in the trace
    std::uint64_t unmatched = 0;            ///< device work with no launch found
    /// work's start - its launch call's end (HTA's launch delay, which HTA clips at 0; stint keeps a
    /// negative delay: a synchronous call, cudaMemcpy, that returned after its work began)
    duration_stats delay;
    std::int64_t short_threshold_ns = 0;
    std::uint64_t short_kernels = 0;        ///< kernels shorter than short_threshold_ns
    std::int64_t short_kernels_ns = 0;      ///< their total time
    /// kernels that ran shorter than their launch call took (HTA's "short kernels")
    std::uint64_t launch_longer = 0;
};

/// One point of a stream's queue-length counter track.
struct queue_sample {
    std::int64_t time_ns = 0;
    std::int64_t length = 0;
};

/// A stream's queue length over time: launched-but-unfinished work, +1 at a launch call's start and -1
/// at the work's end (decrements first at equal times).
struct stream_queue {
    std::string device;
    std::int64_t stream = 0;
    std::int64_t max_length = 0;
    double mean_length = 0;          ///< time-weighted, from the first sample to the last
    std::vector<queue_sample> samples;
};

/// One CPU thread's time: span from its first op's start to its last op's end, busy = |union of its
/// ops|, idle = span - busy.
struct thread_breakdown {
    std::int64_t pid = 0;
    std::int64_t tid = 0;
    std::int64_t span_ns = 0;
    std::int64_t busy_ns = 0;
    std::int64_t idle_ns = 0;
};

/// An op name's (and, when grouped so, input shapes') count and times. Self time: a CPU event's
/// duration minus its direct children's on its thread (children: events inside it); device work's self
/// time is its duration.
struct op_stat {
    std::string name;
    std::string shapes;       ///< "" unless grouped by input shape
    std::uint64_t count = 0;
    std::int64_t total_ns = 0;
    std::int64_t self_ns = 0;
    bool on_device = false;
};

/// The intervals of one trace that the analyses need, collected from a file or a session.
///
///     auto p = stint::trace_profile::from_file("run.pt.trace.json.gz");
///     for (const auto& d : p.breakdown()) fmt::print("{} idle {:.1f}%\n", d.device, d.percent(d.idle_ns));
class trace_profile {
public:
    explicit trace_profile(trace_analysis_options options = {}) : options_(options) {}

    /// Reads a Chrome/Kineto JSON trace or stint's Perfetto trace (plain or gzip) in one streaming pass.
    [[nodiscard]] STINT_DECL static trace_profile from_file(const std::string& path,
                                                            trace_analysis_options options = {});
    /// The same over JSON text in memory.
    [[nodiscard]] STINT_DECL static trace_profile from_text(std::string_view json, trace_analysis_options options = {});
    /// The same over a Perfetto trace's bytes in memory.
    [[nodiscard]] STINT_DECL static trace_profile from_perfetto_bytes(std::string_view bytes,
                                                                      trace_analysis_options options = {});
    /// A session's events (prof.events()).
    [[nodiscard]] STINT_DECL static trace_profile from_events(const event_list& list,
                                                              trace_analysis_options options = {});

    /// Adds one event (the reader's callback); call finish() after the last.
    STINT_DECL void add(const trace_record& r);
    /// Ends the collection: `rank` is the trace's distributedInfo rank, if any.
    STINT_DECL void finish(std::optional<std::int32_t> rank);

    [[nodiscard]] const trace_read_stats& read_stats() const noexcept { return stats_; }
    [[nodiscard]] const trace_analysis_options& options() const noexcept { return options_; }
    [[nodiscard]] bool has_device_work() const noexcept { return !work_.empty(); }

    [[nodiscard]] STINT_DECL std::vector<device_breakdown> breakdown() const;
    [[nodiscard]] STINT_DECL std::vector<stream_idle> idle_time() const;
    /// Kernel names by total time: per device (top `limit` each), then over all devices (top `limit`).
    [[nodiscard]] STINT_DECL std::vector<kernel_summary> kernels(std::size_t limit) const;
    [[nodiscard]] STINT_DECL launch_statistics launches() const;
    [[nodiscard]] STINT_DECL std::vector<stream_queue> queue_lengths() const;
    [[nodiscard]] STINT_DECL std::vector<thread_breakdown> threads() const;
    /// Per op name (and shapes): count, total and self time; CPU ops, annotations and API calls, and
    /// device work. Sorted by self time, most first.
    [[nodiscard]] STINT_DECL std::vector<op_stat> op_stats() const;

private:
    enum class work_kind : std::uint8_t { compute, communication, memory };
    struct device_key {
        std::int64_t pid = 0;
        std::int32_t index = 0;
        std::int32_t rank = -1;
        std::string label;
    };
    struct stream_key {
        std::uint32_t device = 0;
        std::int64_t stream = 0;
    };
    struct work {
        std::int64_t start = 0;
        std::int64_t end = 0;
        std::int64_t correlation = -1;
        std::uint32_t name = 0;
        std::uint32_t stream = 0;
        work_kind kind = work_kind::compute;
    };
    struct launch {
        std::int64_t start = 0;
        std::int64_t end = 0;
        std::int64_t correlation = -1;
        std::int64_t pid = 0;
    };
    struct cpu_span {
        std::int64_t start = 0;
        std::int64_t end = 0;
        std::uint32_t name = 0;
        std::uint32_t shapes = 0;
        std::uint32_t thread = 0;
    };

    STINT_DECL std::uint32_t intern(std::string_view text);
    STINT_DECL std::uint32_t device_of(std::int64_t pid, std::int32_t index);
    STINT_DECL std::uint32_t stream_of(std::uint32_t device, std::int64_t stream);
    STINT_DECL std::uint32_t thread_of(std::int64_t pid, std::int64_t tid);
    STINT_DECL void add_work(std::uint32_t stream, work_kind kind, std::int64_t start, std::int64_t end,
                             std::int64_t correlation, std::string_view name);
    // The launch matched to each work item (index into launches_, or -1), by (rank, correlation).
    [[nodiscard]] STINT_DECL std::vector<std::int64_t> match_launches() const;

    trace_analysis_options options_;
    trace_read_stats stats_{};
    std::deque<std::string> names_;
    std::unordered_map<std::string_view, std::uint32_t> name_ids_;
    std::vector<device_key> devices_;
    std::vector<stream_key> streams_;
    std::vector<std::pair<std::int64_t, std::int64_t>> threads_;
    std::vector<work> work_;
    std::vector<launch> launches_;
    std::vector<cpu_span> cpu_;
    bool merged_ = false;  // a stint-merge job trace: device pids 1000000 + 1000 rank + device
};

namespace detail {
using interval = std::pair<std::int64_t, std::int64_t>;
/// Sorts and merges intervals into disjoint ones, in order.
STINT_DECL void merge_intervals(std::vector<interval>& v);
/// The total length of disjoint intervals.
[[nodiscard]] STINT_DECL std::int64_t length_of(const std::vector<interval>& disjoint);
/// |a ∩ b| of two disjoint, ordered interval lists.
[[nodiscard]] STINT_DECL std::int64_t intersection_length(const std::vector<interval>& a, const std::vector<interval>& b);
/// Whitespace-free text of "Input Dims", so that stint's and torch's spellings group together.
[[nodiscard]] STINT_DECL std::string compact_shapes(std::string_view text);
}  // namespace detail

/// Whether a kernel's name says it is communication: NCCL, RCCL or a collective's name.
[[nodiscard]] STINT_DECL bool is_communication_kernel(std::string_view name);

/// The nearest-rank statistics of `durations` (sorted in place).
[[nodiscard]] STINT_DECL duration_stats summarize_durations(std::vector<std::int64_t>& durations);

}  // namespace stint

#if defined(STINT_HEADER_ONLY)
#include "stint/analysis/impl/trace_analysis.ipp"
#endif
