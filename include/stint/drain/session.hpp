#pragma once
// One recording session from start to drain: the untemplated core behind stint::profiler.

#include <cstddef>  // std::byte, std::size_t
#include <cstdint>  // std::int64_t, std::uint32_t, std::uint64_t
#include <span>  // std::span
#include <string>  // std::string
#include <string_view>  // std::string_view
#include <unordered_map>  // std::unordered_map
#include <vector>  // std::vector

#include "stint/analysis/event.hpp"
#include "stint/analysis/event_list.hpp"
#include "stint/analysis/event_tree.hpp"
#include "stint/capture/detail/input_decoding.hpp"  // decode_inputs, append_real: the drain's decoding, declared with it
#include "stint/capture/flops.hpp"
#include "stint/capture/op_inputs.hpp"
#include "stint/detail/separate_compilation.hpp"
#include "stint/device/device_capture.hpp"
#include "stint/drain/device_join.hpp"
#include "stint/drain/profiler_stats.hpp"
#include "stint/drain/record_store.hpp"
#include "stint/recording/clock.hpp"
#include "stint/recording/registry.hpp"
#include "stint/recording/ring.hpp"

namespace stint::detail {

inline double microseconds_between(std::int64_t from_ns, std::int64_t to_ns) noexcept {
    return static_cast<double>(to_ns - from_ns) / 1e3;
}

/// What a drain builds beyond the event tree (from the profiler's policies). The builders are pointers the
/// profiler's config fills, so that a program emits them only where its config names their policy.
struct drain_options {
    event_list_builder::call_stack_builder call_stacks = nullptr;  ///< with_stack: &assign_call_stacks
    event_list_builder::module_hierarchy_builder module_hierarchy = nullptr;  ///< with_modules: &assign_module_hierarchy
    bool input_values = false;  ///< keep each op's inputs whole in event_args::inputs (an execution trace)
    /// What joins device activity to the scopes (cuda_activities: &join_device_activity); needed when
    /// build_events() is given a device capture.
    void (*join_device)(event_list_builder& builder, device_capture& capture,
                        const std::unordered_map<std::uint64_t, event_index>& links, const device_join_window& window,
                        thread_of_tid_ref thread_of_tid) = nullptr;
};

/// What a session's captured ops keep besides their inputs (capture/inputs.hpp's capture_switches).
struct capture_options {
    bool outputs = false;            ///< stint::record_outputs records (record_shapes, or an execution trace)
    bool tensor_identities = false;  ///< tensors carry their identity (an execution trace)
};

/// A session's life: prepare (set-up without recording, a schedule's WARMUP), open (enable), close
/// (disable + drain + build), and the result.
class session {
public:
    session() = default;
    session(const session&) = delete;
    session& operator=(const session&) = delete;
    /// The buffers kept warm for this session's successors go back to the system with it.
    STINT_DECL ~session();

    /// Does the set-up that opening needs without recording anything: the process's tick calibration
    /// (10 ms of spinning the first time), a first clock anchor (open() re-takes it), and
    /// `reserve_bytes` of record buffers faulted in (at most the budget). Preparing twice does
    /// nothing.
    STINT_DECL void prepare(std::size_t budget_bytes, std::size_t reserve_bytes = 0);

    /// Forgets a preparation that will not be opened (a warmup that never reaches a record step).
    void discard_preparation() noexcept { prepared_ = false; }

    [[nodiscard]] bool is_prepared() const noexcept { return prepared_; }

    /// Opens a session recording into at most `budget_bytes` of buffers, preparing first if needed.
    /// Throws std::logic_error if another session records in this process.
    /// `record_cpu` false: a device-only session (profiler_options::activities without cpu): no scope
    /// records, only the device activity that close() is given.
    /// `track_memory`: report_alloc / report_free / report_oom record into it (profile_memory).
    /// `capture`: what captured ops keep besides their inputs while it records.
    /// `streamed`: a writer gives chunks back while it records (registry::begin_session).
    /// `ring`: a flight recorder's session (records on within its budget; copy_records() reads it).
    STINT_DECL void open(std::size_t budget_bytes, std::size_t reserve_bytes = 0, bool record_cpu = true,
                         bool track_memory = false, capture_options capture = {}, bool streamed = false,
                         ring_options ring = {});

    [[nodiscard]] bool is_open() const noexcept { return state_ != 0; }
    /// The open session's recording state (registry::begin_session's), for a streaming writer.
    [[nodiscard]] std::uint32_t recording_state() const noexcept { return state_; }
    /// Ticks to ns since the open session's start, as measured when it opened.
    [[nodiscard]] const tick_calibration& calibration() const noexcept { return calibration_; }

    /// Whether a closed session's buffers stay cached for the next (a schedule's next window).
    void keep_buffers_between_sessions(bool keep) noexcept { keep_buffers_ = keep; }

    /// Closes the session and takes its records out of the thread buffers into `out` (built into events
    /// later by build_events, or written by an exporter directly). Returns false (and changes nothing)
    /// when the session was not open or a fork ended it. Fills stats() but for what only the event
    /// list knows (number_of_events counts the records that become events).
    STINT_DECL bool close_records(record_store& out);

    /// A flight recorder's dump: copies the open session's records that ended since `from_ticks` into
    /// `out` while the session records on (registry::copy_ring), on the session's clock with its rate
    /// measured over the whole session so far. Each thread's records run until its copy was made: a
    /// common end would cut off the newest records of the threads copied last, while their oldest
    /// were being overwritten. False (and nothing copied) when no session records.
    STINT_DECL bool copy_records(record_store& out, std::uint64_t from_ticks = 0);

    /// Fills the counts of `stats` that a store of records gives before any event is built.
    STINT_DECL static void count_records(const record_store& store, profiler_stats& stats) noexcept;

    /// Closes the session and turns its records into an event list whose ids start at `first_id`.
    /// Returns false (and changes nothing) when the session was not open or a fork ended it.
    /// `device`: the session's device activity (cuda_activities), joined to the scopes that launched it.
    STINT_DECL bool close(event_list& out, std::uint64_t first_id = 0, const drain_options& options = {},
                          device_capture* device = nullptr);

    /// Turns a closed session's records into an event list whose ids start at `first_id` (each record's
    /// id is first_id + its place in the order the records are stored: thread buffer by buffer, each in
    /// the order its thread wrote them), giving each buffer's chunks back once read. Completes `stats`
    /// with what only the event list knows.
    STINT_DECL static void build_events(record_store& records, event_list& out, std::uint64_t first_id,
                                        const drain_options& options, device_capture* device, profiler_stats& stats);

    [[nodiscard]] const profiler_stats& stats() const noexcept { return stats_; }

private:
    // Flop formulas resolved once per site and session (a registry lookup takes a lock).
    using flop_cache = std::unordered_map<const site*, flop_callable>;

    // The native frames at the front of a with_stack<native> payload; `bytes` keeps what follows.
    STINT_DECL static std::vector<std::uint64_t> take_native_frames(std::span<const std::byte>& bytes);

    STINT_DECL static std::string_view runtime_name_of(const record_payload& payload) noexcept;

    // Decodes an op's captured inputs into its args, and its flops when the site names a formula.
    // Returns 1 when the capture was truncated. `keep_values`: keep the inputs whole (event_args::inputs);
    // `record_args`: the inputs are record_function's args.
    STINT_DECL static std::uint64_t add_inputs(event_list_builder& builder, event_index i, const site& where,
                                               std::span<const std::byte> bytes, std::uint32_t aux, flop_cache& flops,
                                               bool keep_values, bool record_args = false);

    // record_outputs and add_args records waiting for the event around them (drain/impl/session.ipp).
    class pending_attachments;

    STINT_DECL static std::int64_t evaluate_flops(const site& where, const op_inputs& inputs, flop_cache& cache);

    // A recording state the registry never hands out (its states have bit 0 set): a device-only session.
    static constexpr std::uint32_t device_only_state = 2;

    std::uint32_t state_ = 0;
    bool opened_ = false;  // once opened or reserved: buffers to give back at destruction
    bool prepared_ = false;
    bool keep_buffers_ = false;
    double prepare_us_ = 0;
    tick_calibration calibration_;
    profiler_stats stats_;
};

}  // namespace stint::detail

#if defined(STINT_HEADER_ONLY)
#include "stint/drain/impl/session.ipp"
#endif
