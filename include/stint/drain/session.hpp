#pragma once
// One recording session from start to drain: the untemplated core behind stint::profiler.

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "stint/analysis/event_list.hpp"
#include "stint/annotations/recording_hook.hpp"
#include "stint/analysis/event_tree.hpp"
#include "stint/annotations/event_args.hpp"
#include "stint/capture/detail/input_decoding.hpp"
#include "stint/capture/detail/input_encoding.hpp"
#include "stint/capture/flops.hpp"
#include "stint/capture/native_stack.hpp"
#include "stint/detail/deferred.hpp"
#include "stint/device/device_capture.hpp"
#include "stint/drain/device_join.hpp"
#include "stint/drain/record_store.hpp"
#include "stint/memory/report.hpp"
#include "stint/recording/clock.hpp"
#include "stint/recording/registry.hpp"

namespace stint {

/// Self-measurement of a session, with one field for each of torch's profiler stats (durations of
/// the profiler's own phases) plus stint's record accounting.
struct profiler_stats {
    double profiling_window_duration_sec = 0;          ///< from enable to disable
    std::uint64_t number_of_events = 0;                ///< events in the event list
    double profiler_prepare_call_duration_us = 0;      ///< calibration and set-up before enabling
    double profiler_enable_call_duration_us = 0;       ///< opening the session
    double profiler_disable_call_duration_us = 0;      ///< closing the session
    double parse_kineto_call_duration_us = 0;          ///< taking the records out of the thread buffers
    /// Ordering and linking the tree; 0 until the event list is built (stop() builds it only when
    /// something needs it then; events() and the exporters that read it build it when first asked).
    double function_events_build_tree_call_duration_us = 0;
    std::uint64_t recorded = 0;                        ///< records kept
    std::uint64_t dropped = 0;                         ///< records lost to the budget, counted exactly
    /// Records of earlier sessions that reached their buffers after those sessions were drained (a
    /// thread preempted between a scope's end and its append), found during this one. Never silent:
    /// every export shows them.
    std::uint64_t late_records = 0;
    std::uint64_t overhead_events = 0;                 ///< stint's own events (cat "overhead"), not in recorded
    std::uint64_t truncated_names = 0;                 ///< runtime names cut to 4096 bytes
    std::uint64_t truncated_inputs = 0;                ///< ops whose input capture hit a bound
    std::uint64_t buffer_bytes = 0;                    ///< record buffers the session used (chunks of 1 to 64 KiB)
    /// The device collection (cuda_activities): "off", "active" or "unavailable: <reason>".
    std::string device_status = "off";
    std::uint64_t device_events = 0;                   ///< kernels, copies, memsets and syncs kept
    std::uint64_t device_api_calls = 0;                ///< CUDA runtime and driver calls kept
    stint::device_loss device_loss = {};               ///< what the device collection lost, by cause
    /// profile_memory: the highest live bytes of each device that had memory events, and what ran then.
    std::vector<memory_peak> memory_peaks;
    std::uint64_t memory_events = 0;                   ///< [memory] and [OutOfMemory] events kept
    std::uint64_t memory_dropped = 0;                  ///< memory events lost to the budget (also in dropped)
};

}  // namespace stint

namespace stint::detail {

inline double microseconds_between(std::int64_t from_ns, std::int64_t to_ns) noexcept {
    return static_cast<double>(to_ns - from_ns) / 1e3;
}

/// What a drain builds beyond the event tree (from the profiler's policies).
struct drain_options {
    bool call_stacks = false;       ///< with_stack
    bool module_hierarchy = false;  ///< with_modules
    bool input_values = false;      ///< keep each op's inputs whole in event_args::inputs (an execution trace)
};

/// What a session's captured ops keep besides their inputs (capture/inputs.hpp's capture_switches).
struct capture_options {
    bool outputs = false;            ///< stint::record_outputs records (record_shapes, or an execution trace)
    bool tensor_identities = false;  ///< tensors carry their identity (an execution trace)
};

/// A session's life: prepare (set-up without recording, a schedule's WARMUP), open (enable), close
/// (disable + drain + build), and the result.
template <class Unused = void>
class basic_session {
    template <class T>
    using later = deferred_t<T, Unused>;  // checked when used (detail/deferred.hpp)

public:
    basic_session() = default;
    basic_session(const basic_session&) = delete;
    basic_session& operator=(const basic_session&) = delete;
    /// The buffers kept warm for this session's successors go back to the system with it.
    ~basic_session() {
        if (opened_) the_registry().release_buffers();
    }

    /// Does the set-up that opening needs without recording anything: the process's tick calibration
    /// (10 ms of spinning the first time), a first clock anchor (open() re-takes it), and
    /// `reserve_bytes` of record buffers faulted in (at most the budget). Preparing twice does
    /// nothing.
    void prepare(std::size_t budget_bytes, std::size_t reserve_bytes = 0) {
        if (prepared_) return;
        registry& reg = the_registry();
        const std::int64_t t0 = steady_now_ns();
        calibration_ = reg.calibration();
        calibration_.anchor = take_clock_anchor();
        if (reserve_bytes > 0) {
            reg.reserve_buffers(std::min(reserve_bytes, budget_bytes));
            opened_ = true;  // the reserve is released with the session
        }
        prepare_us_ = microseconds_between(t0, steady_now_ns());
        prepared_ = true;
    }

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
    void open(std::size_t budget_bytes, std::size_t reserve_bytes = 0, bool record_cpu = true,
              bool track_memory = false, capture_options capture = {}, bool streamed = false,
              ring_options ring = {}) {
        registry& reg = the_registry();
        prepare(budget_bytes, record_cpu ? reserve_bytes : 0);
        const std::int64_t t1 = steady_now_ns();
        // Re-anchored here, not at prepare(): a warmup may have prepared steps ago, and time 0 is the
        // window's start.
        calibration_.anchor = take_clock_anchor();
        state_ = record_cpu ? reg.begin_session(budget_bytes, streamed, ring) : device_only_state;
        opened_ = true;
        const std::int64_t t2 = steady_now_ns();
        prepared_ = false;
        if (track_memory && record_cpu) {
            memory_events_dropped.store(0, std::memory_order_relaxed);
            memory_state.store(state_, std::memory_order_relaxed);
        }
        capture_state.outputs.store(capture.outputs && record_cpu, std::memory_order_relaxed);
        capture_state.identities.store(capture.tensor_identities && record_cpu, std::memory_order_relaxed);
        stats_ = {};
        stats_.profiler_prepare_call_duration_us = prepare_us_;
        stats_.profiler_enable_call_duration_us = microseconds_between(t1, t2);
        if (record_cpu) run_recording_hooks(true);  // last: a framework's first op finds all set
    }

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
    bool close_records(record_store& out) {
        if (state_ == 0) return false;
        if (state_ != device_only_state) run_recording_hooks(false);  // a framework stops feeding it first
        // First: the drain below allocates, and no report may land in a session being drained.
        if (memory_state.load(std::memory_order_relaxed) == state_) memory_state.store(0, std::memory_order_relaxed);
        capture_state.outputs.store(false, std::memory_order_relaxed);
        capture_state.identities.store(false, std::memory_order_relaxed);
        registry& reg = the_registry();
        later<record_store> store;
        const std::int64_t disable_start = steady_now_ns();
        std::int64_t disabled_at = 0;
        const auto on_disabled = [&](std::uint64_t stop_ticks) {
            store.stop_ticks = stop_ticks;
            disabled_at = steady_now_ns();
            store.buffer_bytes = reg.session_buffer_bytes();
            store.late = reg.late_records_found();
            // Before the chunks are given back: the next window reuses them, resident.
            if (keep_buffers_) reg.retain_buffers(store.buffer_bytes);
            calibration_ = refine_calibration(calibration_, take_clock_anchor());
        };
        const auto on_taken = [&](taken_records&& t) { store.add(std::move(t)); };
        const bool closed = state_ == device_only_state ? (on_disabled(read_ticks()), true)
                                                        : reg.end_session(state_, on_disabled, on_taken);
        state_ = 0;
        if (!closed) return false;
        store.calibration = calibration_;
        store.memory_dropped = memory_events_dropped.exchange(0, std::memory_order_relaxed);
        const std::int64_t taken_at = steady_now_ns();
        stats_.profiling_window_duration_sec =
            static_cast<double>(disabled_at - calibration_.anchor.steady_ns) / 1e9;
        stats_.profiler_disable_call_duration_us = microseconds_between(disable_start, disabled_at);
        stats_.parse_kineto_call_duration_us = microseconds_between(disabled_at, taken_at);
        count_records(store, stats_);
        stats_.late_records = store.late;
        stats_.buffer_bytes = store.buffer_bytes;
        stats_.memory_dropped = store.memory_dropped;  // a window kept unbuilt reports it too
        out = std::move(store);
        return true;
    }

    /// A flight recorder's dump: copies the open session's records that ended since `from_ticks` into
    /// `out` while the session records on (registry::copy_ring), on the session's clock with its rate
    /// measured over the whole session so far. Each thread's records run until its copy was made: a
    /// common end would cut off the newest records of the threads copied last, while their oldest
    /// were being overwritten. False (and nothing copied) when no session records.
    bool copy_records(record_store& out, std::uint64_t from_ticks = 0) {
        if (state_ == 0 || state_ == device_only_state) return false;
        later<record_store> store;
        const bool copied = the_registry().copy_ring(state_, [&](taken_records&& t) {
            if (from_ticks != 0) keep_records_ending_between(t.tail, from_ticks, ~std::uint64_t{0});
            store.add(std::move(t));
        });
        if (!copied) return false;
        store.stop_ticks = read_ticks();
        store.calibration = refine_calibration(calibration_, take_clock_anchor());
        out = std::move(store);
        return true;
    }

    /// Fills the counts of `stats` that a store of records gives before any event is built.
    static void count_records(const later<record_store>& store, profiler_stats& stats) noexcept {
        stats.number_of_events = store.events();
        stats.recorded = stats.dropped = stats.overhead_events = stats.truncated_names = 0;
        for (const record_store::thread_records& t : store.threads()) {
            stats.recorded += t.counts.recorded;
            stats.dropped += t.counts.dropped;
            stats.overhead_events += t.counts.overhead;
            stats.truncated_names += t.counts.truncated;
        }
    }

    /// Closes the session and turns its records into an event list whose ids start at `first_id`.
    /// Returns false (and changes nothing) when the session was not open or a fork ended it.
    /// `device`: the session's device activity (cuda_activities), joined to the scopes that launched it.
    bool close(event_list& out, std::uint64_t first_id = 0, const drain_options& options = {},
               device_capture* device = nullptr) {
        later<record_store> records;
        if (!close_records(records)) return false;
        build_events(records, out, first_id, options, device, stats_);
        return true;
    }

    /// Turns a closed session's records into an event list whose ids start at `first_id` (each record's
    /// id is first_id + its place in the order the records are stored: thread buffer by buffer, each in
    /// the order its thread wrote them), giving each buffer's chunks back once read. Completes `stats`
    /// with what only the event list knows.
    static void build_events(later<record_store>& records, event_list& out, std::uint64_t first_id,
                             const drain_options& options, device_capture* device, later<profiler_stats>& stats) {
        const tick_calibration& calibration = records.calibration;
        later<event_list_builder> builder;
        builder.set_first_id(first_id);
        builder.reserve(records.events());
        if (options.call_stacks) builder.build_call_stacks();
        if (options.module_hierarchy) builder.build_module_hierarchy();
        later<std::unordered_map<std::uint64_t, std::uint32_t>> thread_index;
        const auto thread_for = [&](const drained_thread& t) {
            auto [it, added] = thread_index.try_emplace(t.os_tid, 0);
            if (added) it->second = builder.add_thread({t.os_tid, t.name, 0, 0});
            return it->second;
        };
        later<std::unordered_map<std::uint64_t, event_index>> links;
        event_index last_scope = no_index;
        std::uint64_t last_scope_end = 0;
        std::uint16_t last_scope_depth = 0;
        pending_attachments outputs;  // record_outputs and add_args records waiting for their event
        std::uint64_t truncated_inputs = 0;
        flop_cache flops;
        std::uint32_t thread = 0;
        const auto on_record = [&](const record& r, const record_payload& payload) {
            if (r.where()->payload == payload_kind::outputs) {
                truncated_inputs += outputs.add(r.depth(), payload);
                return;
            }
            if (r.where()->payload == payload_kind::args) {
                outputs.add_args(r.depth(), payload);
                return;
            }
            if (r.where()->payload == payload_kind::device_link) {
                // The link names the scope record just before it: same depth, same end. Anything else
                // (that record was dropped over budget) leaves the id unlinked, counted at the join.
                if (last_scope != no_index && last_scope_depth == r.depth() && last_scope_end == r.end_ticks) {
                    links.emplace(r.begin_ticks, last_scope);
                }
                last_scope = no_index;
                return;
            }
            const std::int64_t start = calibration.to_ns_since_anchor(r.begin_ticks);
            const std::int64_t end = calibration.to_ns_since_anchor(r.end_ticks);
            const site& where = *r.where();
            const source_location* at = where.location.line != 0 ? &where.location : nullptr;
            std::span<const std::byte> bytes = payload.bytes;
            later<std::vector<std::uint64_t>> frames;
            if (where.payload == payload_kind::native_stack || where.payload == payload_kind::native_stack_inputs) {
                frames = take_native_frames(bytes);
            }
            event_index i = no_index;
            switch (where.payload) {
                case payload_kind::none:
                case payload_kind::device_link:  // handled above
                case payload_kind::native_stack: i = builder.add(where.kind, where.name, thread, start, end, at); break;
                case payload_kind::runtime_name:
                    i = builder.add_copy(where.kind, runtime_name_of(payload), thread, start, end, at);
                    break;
                case payload_kind::inputs:
                case payload_kind::native_stack_inputs:
                    i = builder.add(where.kind, where.name, thread, start, end, at);
                    truncated_inputs += add_inputs(builder, i, where, bytes, payload.aux, flops, options.input_values);
                    break;
                case payload_kind::outputs:
                case payload_kind::args: break;  // handled above
                case payload_kind::memory: {
                    memory_payload m{};
                    std::memcpy(&m, bytes.data(), std::min(bytes.size(), sizeof(m)));
                    const memory_record record{.addr = m.addr,
                                               .bytes = m.bytes,
                                               .total_allocated = m.total_allocated,
                                               .total_reserved = m.total_reserved,
                                               .device = {static_cast<device_type>(m.device_type), m.device_index}};
                    i = builder.add_memory_event(where.kind, thread, start, record, m.sequence,
                                                 {.free = (m.flags & memory_free) != 0,
                                                  .size_known = (m.flags & memory_size_known) != 0,
                                                  .totals_given = (m.flags & memory_totals_given) != 0},
                                                 at);
                    break;
                }
                case payload_kind::point: {
                    const point_payload point = read_point(payload);
                    i = point.name.empty() ? builder.add(where.kind, where.name, thread, start, start, at)
                                           : builder.add_copy(where.kind, point.name, thread, start, start, at);
                    builder.set_point_id(i, point.id);
                    break;
                }
                case payload_kind::counter:
                    i = builder.add(where.kind, where.name, thread, start, start, at);
                    builder.set_counter_value(i, read_counter(payload));
                    break;
                case payload_kind::runtime_name_inputs: {
                    const std::string_view name = runtime_name_of(payload);
                    i = builder.add_copy(where.kind, name, thread, start, end, at);
                    const std::size_t at = (name.size() + 7) & ~std::size_t{7};
                    std::uint32_t aux = 0;
                    std::uint32_t used = 0;
                    if (bytes.size() < at + 8) break;
                    std::memcpy(&aux, bytes.data() + at, 4);
                    std::memcpy(&used, bytes.data() + at + 4, 4);
                    const std::span<const std::byte> inputs =
                        bytes.subspan(at + 8, std::min<std::size_t>(used, bytes.size() - at - 8));
                    truncated_inputs += add_inputs(builder, i, where, inputs, aux, flops, options.input_values, true);
                    break;
                }
            }
            builder.set_record_depth(i, r.depth());
            if (where.kind != event_kind::overhead && !is_memory_kind(where.kind) && !is_point_kind(where.kind) &&
                where.kind != event_kind::counter) {
                last_scope = i;
                last_scope_end = r.end_ticks;
                last_scope_depth = r.depth();
                if (where.kind != event_kind::instant) outputs.enclosed_by(builder, i, r.depth());
            }
            if (!frames.empty()) builder.set_native_frames(i, std::move(frames));
        };
        std::uint64_t recorded = 0;
        std::uint64_t dropped = 0;
        for (record_store::thread_records& t : records.threads()) {
            thread = thread_for(t.counts);
            last_scope = no_index;
            records.for_each_record(t, on_record);
            thread_info& info = builder.thread(thread);
            // Several buffers (one per shared object) of one OS thread merge into one thread.
            info.recorded += t.counts.recorded;
            info.dropped += t.counts.dropped;
            if (info.name.empty()) info.name = t.counts.name;
            recorded += t.counts.recorded;
            dropped += t.counts.dropped;
            outputs.finish_run(builder);
            builder.begin_run();  // the next buffer's records are a run of their own
            records.release(t);
        }
        if (device != nullptr) {
            const auto thread_of_tid = [&](std::uint64_t tid) {
                auto [it, added] = thread_index.try_emplace(tid, 0);
                if (added) it->second = builder.add_thread({tid, {}, 0, 0});
                return it->second;
            };
            join_device_activity(builder, *device, links,
                                 {calibration.anchor.ticks, records.stop_ticks, calibration}, thread_of_tid);
            stats.device_status = device->report.status;
            stats.device_loss = device->report.loss;
        }
        const std::int64_t parsed_at = steady_now_ns();
        builder.set_totals(recorded, dropped, records.late);
        builder.set_memory_dropped(records.memory_dropped);
        builder.set_base_time_ns(calibration.anchor.system_ns);
        builder.set_base_steady_ns(calibration.anchor.steady_ns);
        out = std::move(builder).build();
        const std::int64_t built_at = steady_now_ns();

        stats.function_events_build_tree_call_duration_us = microseconds_between(parsed_at, built_at);
        stats.number_of_events = out.size();
        stats.truncated_inputs = truncated_inputs;
        stats.memory_peaks.assign(out.memory_peaks().begin(), out.memory_peaks().end());
        stats.memory_dropped = out.memory_dropped();
        stats.memory_events = stats.device_events = stats.device_api_calls = 0;
        if (out.has_memory_events() || device != nullptr) {
            for (const event& e : out) {
                if (is_memory_kind(e.kind)) ++stats.memory_events;
                if (e.on_device()) ++stats.device_events;
                if (e.kind == event_kind::cuda_runtime || e.kind == event_kind::cuda_driver) ++stats.device_api_calls;
            }
        }
    }

    [[nodiscard]] const profiler_stats& stats() const noexcept { return stats_; }

private:
    // Flop formulas resolved once per site and session (a registry lookup takes a lock).
    using flop_cache = later<std::unordered_map<const site*, flop_callable>>;

    // The native frames at the front of a with_stack<native> payload; `bytes` keeps what follows.
    static std::vector<std::uint64_t> take_native_frames(std::span<const std::byte>& bytes) {
        std::vector<std::uint64_t> frames;
        if (bytes.size() < native_stack_header_bytes) return frames;
        std::uint32_t count = 0;
        std::memcpy(&count, bytes.data(), sizeof(count));
        const std::size_t fit = (bytes.size() - native_stack_header_bytes) / sizeof(std::uint64_t);
        frames.resize(std::min<std::size_t>(count, fit));
        if (!frames.empty()) {
            std::memcpy(frames.data(), bytes.data() + native_stack_header_bytes, frames.size() * sizeof(std::uint64_t));
        }
        bytes = bytes.subspan(native_stack_header_bytes + frames.size() * sizeof(std::uint64_t));
        return frames;
    }

    static std::string_view runtime_name_of(const record_payload& payload) noexcept {
        const std::size_t n = std::min<std::size_t>(payload.aux, payload.bytes.size());
        return {reinterpret_cast<const char*>(payload.bytes.data()), n};
    }

    // Decodes an op's captured inputs into its args, and its flops when the site names a formula.
    // Returns 1 when the capture was truncated. `keep_values`: keep the inputs whole (event_args::inputs);
    // `record_args`: the inputs are record_function's args.
    static std::uint64_t add_inputs(later<event_list_builder>& builder, event_index i, const site& where,
                                    std::span<const std::byte> bytes, std::uint32_t aux, flop_cache& flops,
                                    bool keep_values, bool record_args = false) {
        op_inputs inputs = decode_inputs(where.name, bytes, aux);
        if (inputs.empty() && !inputs.truncated()) return 0;  // an op without inputs has no args, as in torch
        const std::uint64_t truncated = inputs.truncated() ? 1 : 0;
        event_args args;
        inputs_to_args(inputs, (aux & inputs_aux_concrete) != 0, args);
        if (record_args && !inputs.empty()) args.record_args = inputs[0].text;
        if (!where.flops.empty()) builder.set_flops(i, evaluate_flops(where, inputs, flops));
        if (keep_values) args.inputs = std::move(inputs.mutable_inputs());
        builder.set_args(i, std::move(args));
        return truncated;
    }

    // record_outputs and add_args records waiting for the event around them. A thread's buffer holds
    // each scope's record after everything recorded inside it, so the first later record of a lower
    // depth is the scope around one. Args go to that scope. Outputs go to the innermost op: if that
    // scope is no op, the one around it is looked for, and so on; outputs no op encloses go to the
    // innermost scope around them.
    class pending_attachments {
    public:
        // Returns 1 when the capture was truncated.
        std::uint64_t add(std::uint32_t depth, const record_payload& payload) {
            op_inputs values = decode_inputs({}, payload.bytes, payload.aux);
            const std::uint64_t truncated = values.truncated() ? 1 : 0;
            waiting_.push_back({depth, no_index, std::move(values.mutable_inputs()), {}, false, false});
            return truncated;
        }
        void add_args(std::uint32_t depth, const record_payload& payload) {
            waiting_.push_back({depth, no_index, {}, decode_args(payload), (payload.aux & args_cut) != 0, true});
        }
        // Scope event i (recorded at `depth`) ended: it encloses every waiting entry deeper than it.
        void enclosed_by(later<event_list_builder>& builder, event_index i, std::uint32_t depth) {
            if (waiting_.empty()) return;
            const bool op = builder.kind_of(i) == event_kind::cpu_op;
            std::size_t kept = 0;
            for (std::size_t w = 0; w < waiting_.size(); ++w) {
                entry& e = waiting_[w];
                if (e.depth > depth) {
                    // Args belong to the event one level up; a scope further up means that event's
                    // record was dropped (and counted), and they go with it.
                    if (e.args) {
                        if (depth + 1 == e.depth) attach(builder, i, e);
                        continue;
                    }
                    if (op) {
                        attach(builder, i, e);
                        continue;
                    }
                    if (e.innermost == no_index) e.innermost = i;
                    e.depth = depth;
                }
                if (kept != w) waiting_[kept] = std::move(e);  // never onto itself: that would empty it
                ++kept;
            }
            waiting_.resize(kept);
        }
        // The end of one buffer's records: what no op enclosed goes to the innermost scope around it
        // (none: its scope's record was dropped, and counted).
        void finish_run(later<event_list_builder>& builder) {
            for (entry& e : waiting_) {
                if (e.innermost != no_index) attach(builder, e.innermost, e);
            }
            waiting_.clear();
        }

    private:
        struct entry {
            std::uint32_t depth;
            event_index innermost;  // the innermost scope found around it so far
            later<std::vector<op_input>> values;
            later<std::vector<named_arg>> named;
            bool cut;
            bool args;  // add_args' (else record_outputs')
        };
        static void attach(later<event_list_builder>& builder, event_index i, entry& e) {
            later<event_args>& to = builder.args_of(i);
            if (!e.args) {
                to.outputs.insert(to.outputs.end(), std::make_move_iterator(e.values.begin()),
                                  std::make_move_iterator(e.values.end()));
                return;
            }
            to.named_args_cut = to.named_args_cut || e.cut;
            for (named_arg& a : e.named) {
                const auto same = std::find_if(to.named_args.begin(), to.named_args.end(),
                                               [&](const named_arg& b) { return b.name == a.name; });
                if (same != to.named_args.end()) {
                    *same = std::move(a);
                } else {
                    to.named_args.push_back(std::move(a));
                }
            }
        }
        // The arguments of an add_args record (annotations/event_args.hpp's encoding).
        static std::vector<named_arg> decode_args(const record_payload& payload) {
            later<std::vector<named_arg>> out;
            const std::span<const std::byte> bytes = payload.bytes;
            std::size_t at = 0;
            for (std::uint32_t n = payload.aux & ~args_cut; n != 0; --n) {
                arg_head head{};
                if (bytes.size() - at < sizeof head) break;
                std::memcpy(&head, bytes.data() + at, sizeof head);
                at += sizeof head;
                if (bytes.size() - at < std::size_t{head.name_size} + head.value_size) break;
                named_arg& a = out.emplace_back();
                a.name.assign(reinterpret_cast<const char*>(bytes.data() + at), head.name_size);
                at += head.name_size;
                a.type = static_cast<arg_type>(head.type);
                if (a.type == arg_type::string) {
                    a.text.assign(reinterpret_cast<const char*>(bytes.data() + at), head.value_size);
                } else if (head.value_size == 8) {
                    std::memcpy(a.type == arg_type::real ? static_cast<void*>(&a.real) : static_cast<void*>(&a.integer),
                                bytes.data() + at, 8);
                }
                at += head.value_size;
            }
            return out;
        }
        later<std::vector<entry>> waiting_;
    };

    static std::int64_t evaluate_flops(const site& where, const op_inputs& inputs, flop_cache& cache) {
        if (where.flops.function != nullptr) return estimate_flops(where.flops, inputs);
        auto [it, added] = cache.try_emplace(&where);
        if (added) it->second = find_flop_formula(where.flops.name);
        if (!it->second) return -1;
        try {
            return std::max<std::int64_t>(it->second(inputs), -1);
        } catch (...) {
            return -1;
        }
    }

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
/// The one form of basic_session (a template only so that a file that never uses it does not compile it).
using session = basic_session<>;

}  // namespace stint::detail
