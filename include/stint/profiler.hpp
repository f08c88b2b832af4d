#pragma once
// stint::profiler: recording sessions driven by start()/stop() or by a step schedule (torch.profiler
// .profile's start/step/stop), their results, and what their traces carry besides events.

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <ostream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "stint/analysis/event_list.hpp"
#include "stint/analysis/key_averages.hpp"
#include "stint/analysis/table.hpp"
#include "stint/config.hpp"
#include "stint/detail/deferred.hpp"
#include "stint/detail/platform.hpp"
#include "stint/device/device_link.hpp"
#include "stint/drain/session.hpp"
#include "stint/capture/native_stack.hpp"
#include "stint/policies.hpp"
#include "stint/profiler/activities.hpp"
#include "stint/profiler/distributed.hpp"
#include "stint/profiler/execution_trace_observer.hpp"
#include "stint/profiler/exit_trace.hpp"
#include "stint/profiler/crash_dump.hpp"
#include "stint/profiler/flight_recorder.hpp"
#include "stint/export/chrome_trace.hpp"
#include "stint/export/chrome_trace_records.hpp"
#include "stint/export/trace_stream.hpp"
#include "stint/export/memory_timeline.hpp"
#include "stint/export/perfetto_trace.hpp"
#include "stint/export/collapsed_stacks.hpp"
#include "stint/export/json_validate.hpp"
#include "stint/export/json_writer.hpp"
#include "stint/schedule.hpp"
#include "stint/scope.hpp"
#include "stint/profiler/step_tracker.hpp"
#include "stint/profiler/warning.hpp"

namespace stint {

template <configuration Config = config<>>
class profiler;

/// Options of a `profiler<Config>`; name only what differs from the defaults.
///
///     stint::profiler<> prof({
///         .schedule = stint::schedule({.wait = 1, .warmup = 1, .active = 2, .repeat = 1}),
///         .on_trace_ready = [](stint::profiler<>& p) { std::cout << p.key_averages().table(); },
///     });
template <configuration Config = config<>>
struct profiler_options {
    /// What each step does, from the profiler's step number (0 at construction, +1 per step()):
    /// `stint::schedule(...)` or any callable. Empty: record from start() to stop(), one window.
    std::function<profiler_action(std::int64_t)> schedule{};
    /// Called with the profiler when a window is saved: at the end of a RECORD_AND_SAVE step, and at
    /// stop() in a record step (or without a schedule). Inside it, events(), key_averages(), stats()
    /// and export_chrome_trace() give that window. What it throws propagates from step() or stop().
    std::function<void(profiler<Config>&)> on_trace_ready{};
    /// Keep earlier windows in events() and key_averages() (torch's acc_events). Exports and stats()
    /// still give the last window.
    bool accumulate_events = false;
    /// false: every call is a no-op that records nothing and costs one branch.
    bool enabled = true;
    /// Bytes of record buffers a window may use, over all threads. Records beyond it are dropped and
    /// counted exactly, per window (stats().dropped, every export's "stint" block).
    std::size_t buffer_budget_bytes = std::size_t{512} << 20;
    /// Bytes of record buffers allocated and faulted in before recording (at start(), or during a
    /// schedule's warmup). Rarely needed: while a session records, a thread of stint's faults buffers
    /// in ahead of the recording threads; a reserve also covers a burst faster than that thread. With
    /// a schedule, each window keeps the buffers the previous one used; all of them go back to the
    /// system with the profiler.
    std::size_t reserve_buffer_bytes = 0;
    /// What sessions profile (torch's `activities`). A config with stint::cuda_activities records the CPU
    /// and the devices by default; {activity::cpu} leaves the devices alone, {activity::cuda} records
    /// only device activity and the CUDA calls that launched it (no scopes: the device events are then
    /// linked to no op). A config without the policy records the CPU whatever this says.
    activity_set activities = {activity::cpu, activity::cuda};
    /// Device sessions: wait at stop for the work queued on every device, so that kernels still
    /// running are captured whole (torch synchronises the device at exit too).
    bool sync_device_on_stop = true;
    /// Device sessions: bytes of CUPTI buffers held at once; CUPTI drops (and stint counts) records
    /// beyond them.
    std::size_t device_buffer_budget_bytes = std::size_t{128} << 20;
    /// Device sessions: collect CUDA synchronisations (stream, event, context syncs) as device events,
    /// charged to the op that waited (torch's `enable_cuda_sync_events`, off by default as there).
    /// stint's own synchronisation at stop is never collected.
    bool enable_cuda_sync_events = false;
    /// Device sessions that synchronise at stop: detach CUPTI afterwards (cuptiFinalize), so that the
    /// program's launches cost what they cost before profiling (CUPTI left attached slows them down);
    /// the next session attaches it again. Kept attached while another CUPTI client shares the process.
    bool teardown_cupti_on_stop = true;
    /// An execution trace to record the active windows into (torch's `execution_trace_observer`):
    /// registered (register_callback) before the profiler is made, and living longer than it or
    /// destroyed first (the profiler then forgets it). Each node's rf_id is the "Record function id" of
    /// the same op in this profiler's Chrome trace. The profiler's destruction finishes the file.
    stint::execution_trace_observer* execution_trace_observer = nullptr;
    /// Streams the session to this Chrome trace file (".json", or ".json.gz" for gzip) while it records:
    /// a thread of stint's writes the records threads have filled and gives their buffers back, so a
    /// session of any length records within `buffer_budget_bytes` (a record is dropped, and counted,
    /// only when recording outruns the writer and the budget is spent). At stop() the file is
    /// completed; the events are in it, not kept: events(), key_averages() and the exports then throw.
    /// One window from start() to stop(): no schedule, no accumulate_events, no execution trace, and a
    /// config that captures nothing (values that sites of other configs capture are left out of the
    /// stream, and counted in the trace's "stint" block as "values_not_streamed").
    /// When a write fails (a full disk), a warning says so at once and the session records on into its
    /// budget, keeping its records; stop() then throws the error (std::system_error, with the OS reason),
    /// leaves what was written at "<stream_to>.partial", cut off where the write failed, and keeps the
    /// records not written as the window: events() and the exports read them.
    std::string stream_to{};
    /// Records all the time into a bounded ring from start() to stop() (stint::flight_recorder_options):
    /// each thread overwrites its oldest records when the ring's budget is spent, and dump() writes the
    /// window it holds while recording continues; triggers write it when a step runs slow. Its budget
    /// replaces `buffer_budget_bytes`. No schedule, stream or accumulate_events with it.
    std::optional<flight_recorder_options> flight_recorder{};
};

/// Records the events of every thread, and gives them as events, tables and traces; one profiler
/// records at a time in a process. Its calls (start, stop, step, the exports and queries) may come
/// from several threads: they take turns on the profiler's lock (on_trace_ready runs under it, and
/// may call back into the profiler). A reference that events() returns stays valid until the next
/// start(), stop() or step() of the profiler.
///
/// Without a schedule it records from start() to stop():
///
///     stint::profiler<> prof;
///     prof.start();
///     work();
///     prof.stop();
///     prof.export_chrome_trace("work.pt.trace.json");
///
/// With a schedule, step() at the end of each iteration moves through torch's actions, whether or
/// not start() was called: wait steps (NONE) do nothing, warmup steps prepare a session without
/// recording, record steps record, and the last step of each active window saves it: the session is
/// drained and `on_trace_ready` gets the profiler. Each step is annotated as `ProfilerStep#N`.
///
///     stint::profiler<> prof({.schedule = stint::schedule({.wait = 1, .warmup = 1, .active = 2}),
///                             .on_trace_ready = stint::tensorboard_trace_handler("./log")});
///     for (int i = 0; i < 8; ++i) { train_step(); prof.step(); }   // two windows, two files
template <configuration Config>
class profiler {
public:
    // Types named through Config (detail/deferred.hpp): a file that includes this header but never
    // makes a profiler does not instantiate what the bodies below do with values of them.
    template <class T>
    using later = detail::deferred_t<T, Config>;

    using config_type = Config;
    using options_type = profiler_options<Config>;

    /// Registers the profiler with the step tracker as "ProfilerStep" (torch's KinetoStepTracker).
    explicit profiler(options_type options = {}) : options_(std::move(options)) {
        if (!active()) return;
        detail::install_registry_slow_path();  // threads named from now on are named in the registry
        const bool records_device = has_device && options_.activities.contains(activity::cuda);
        if (!options_.activities.contains(activity::cpu) && !records_device) {
            throw std::invalid_argument(
                "stint: profiler_options::activities names nothing this config records; give activity::cpu, or "
                "activity::cuda with stint::cuda_activities in the config");
        }
        if (!options_.stream_to.empty()) refuse_streaming_with_options();
        if (options_.flight_recorder) refuse_flight_recorder_with_options();
        if (options_.execution_trace_observer != nullptr) {
            options_.execution_trace_observer->attach(this, &forget_execution_trace_observer);
        }
        try {
            session_.keep_buffers_between_sessions(static_cast<bool>(options_.schedule));
            if (options_.schedule) current_action_ = options_.schedule(0);
            step_tracker::init_step_count(step_tracker::profiler_step_name);
            detail::the_exit_trace().arm(this, &write_unfinished_trace);
        } catch (...) {
            // No destructor will run: the observer must not keep pointing here.
            if (options_.execution_trace_observer != nullptr) options_.execution_trace_observer->release(this);
            throw;
        }
    }
    profiler(const profiler&) = delete;
    profiler& operator=(const profiler&) = delete;

    /// A profiler destroyed while recording stops first (a window in progress is delivered to
    /// on_trace_ready), then leaves the step tracker. What stop() throws here becomes a warning. Under
    /// STINT_TRACE_ON_EXIT=path, the unfinished session's trace is also written to `path`.
    ~profiler() {
        if (!active()) return;
        detail::the_running_flight_recorder().clear(this);  // before the lock: a dump from outside holds its own first
        if (in_callback_) {
            // The step() or stop() that called on_trace_ready is still running on this profiler: it
            // would touch freed memory when the callback returns. Stop here rather than corrupt.
            detail::warn("a profiler was destroyed inside its own on_trace_ready; destroy it after the step() or "
                         "stop() that called the callback returns");
            std::terminate();
        }
        detail::the_exit_trace().disarm(this);
        write_unfinished_trace(this, detail::the_exit_trace().path());
        finish_execution_trace();
        try {
            step_tracker::erase_step_count(step_tracker::profiler_step_name);
        } catch (...) {
            // Out of memory while locking or erasing: the tracker keeps a stale count, nothing worse.
        }
    }

    /// Starts profiling: without a schedule, recording begins; with one, the current step's action
    /// takes effect (torch's start()). Throws std::logic_error if this profiler already started, or
    /// when it must record while another profiler records.
    void start() {
        if (!active()) return;
        const detail::own_allocation_scope own;  // the profiler's own memory is not the program's
        {
            const std::lock_guard lock(mutex_);
            refuse_in_callback("start()");
            if (started_ || session_.is_open()) throw std::logic_error("stint: start(): this profiler is already recording");
            std::exception_ptr error;
            transit(profiler_action::none, current_action_, error);
            if (error) std::rethrow_exception(error);
            started_ = true;
            open_step_annotation();
        }
        // A flight recorder answers dumps asked from outside (on_demand.hpp), outside its lock (see there).
        if (options_.flight_recorder) detail::the_running_flight_recorder().set(this, &dump_for);
    }

    /// Stops profiling: a window being recorded is drained and delivered to on_trace_ready (a
    /// partial one too); a warmup in progress is dropped. Stopping a stopped profiler does nothing.
    void stop() {
        if (!active()) return;
        const detail::own_allocation_scope own;  // the profiler's own memory is not the program's
        detail::the_running_flight_recorder().clear(this);
        const std::lock_guard lock(mutex_);
        refuse_in_callback("stop()");
        close_step_annotation();
        started_ = false;
        std::exception_ptr error;
        transit(current_action_, std::nullopt, error);
        if (error) std::rethrow_exception(error);
    }

    /// Ends the current step and begins the next (torch's step()): the schedule's next action takes
    /// effect (a window may be saved and on_trace_ready called), the global step of
    /// `stint::step_tracker` advances, and the new step's `ProfilerStep#N` annotation opens. Works
    /// whether or not start() was called. When on_trace_ready throws, the step still completes
    /// (the next window opens on schedule) and the exception then propagates.
    void step() {
        if (!active()) return;
        const detail::own_allocation_scope own;  // the profiler's own memory is not the program's
        const std::lock_guard lock(mutex_);
        refuse_in_callback("step()");
        const profiler_action next = options_.schedule ? options_.schedule(step_num_ + 1) : profiler_action::record;
        close_step_annotation();
        const profiler_action previous = current_action_;
        ++step_num_;
        current_action_ = next;
        if (options_.schedule) checker_.observe(previous, next);
        std::exception_ptr error;
        transit(previous, next, error);
        step_tracker::increment_step(step_tracker::profiler_step_name);
        if (flight_) observe_flight_step();
        open_step_annotation();
        if (error) std::rethrow_exception(error);
    }

    /// The dumps a flight recorder's triggers wrote (slow steps, hangs), oldest first.
    [[nodiscard]] std::vector<flight_dump> triggered_dumps() const {
        const std::lock_guard lock(mutex_);
        return triggered_dumps_;
    }

    /// A flight recorder's window, written now while recording continues: the trace (Chrome JSON for
    /// ".json" or ".json.gz", Perfetto for ".pftrace") and the key_averages table beside it (the path's
    /// ending replaced by ".txt"), each saying how many records every thread had overwritten and from
    /// when it is complete. Callable from any thread. Throws std::logic_error unless a flight recorder
    /// records, std::invalid_argument for another ending, std::system_error when a file cannot be written.
    ///
    ///     stint::flight_dump d = prof.dump("dumps/now.pt.trace.json");   // and dumps/now.pt.trace.txt
    flight_dump dump(const std::string& path) {
        detail::require_dump_format("dump", path);
        const detail::own_allocation_scope own;
        const std::lock_guard lock(mutex_);
        if (!options_.flight_recorder || !flight_) {
            throw std::logic_error(options_.flight_recorder
                                       ? "stint: dump(): the flight recorder is not recording; call start() first"
                                       : "stint: dump(): this profiler is not a flight recorder; set "
                                         "profiler_options::flight_recorder");
        }
        return dump_window(path, 0, "request", {});
    }

    /// The profiler's step number: 0 at construction, +1 per step() (torch's step_num).
    [[nodiscard]] std::int64_t step_num() const noexcept { return step_num_.load(std::memory_order_relaxed); }

    /// What the current step does (always RECORD without a schedule).
    [[nodiscard]] profiler_action current_action() const noexcept {
        return current_action_.load(std::memory_order_relaxed);
    }

    /// Whether this profiler's session is recording now (a record step, or between start and stop
    /// without a schedule).
    [[nodiscard]] bool is_running() const noexcept { return running_.load(std::memory_order_relaxed); }

    /// The events of the last saved window, or of every window with `accumulate_events` (torch's
    /// `prof.events()`). Without a schedule, reading while recording is an error.
    ///
    ///     for (const stint::event& e : prof.events()) fmt::print("{}\n", e.name);
    [[nodiscard]] const event_list& events() const {
        const std::lock_guard lock(mutex_);
        require_finished("events()");
        require_kept("events()");
        return options_.accumulate_events ? all_events_ : window_events();
    }

    /// events() grouped by name (and by shapes or stack frames when asked), as torch's
    /// `prof.key_averages()`; every `ProfilerStep#N` joins one `ProfilerStep*` row.
    ///
    ///     std::cout << prof.key_averages().table({.sort_by = "self_cpu_time_total", .row_limit = 10});
    [[nodiscard]] averaged_event_list key_averages(key_averages_options options = {}) const {
        const detail::own_allocation_scope own;
        const std::lock_guard lock(mutex_);
        require_finished("key_averages()");
        return stint::key_averages(events(), options);
    }

    /// Sum of every event's self time in events(), in microseconds (torch's
    /// `prof.self_cpu_time_total`).
    [[nodiscard]] double self_cpu_time_total() const {
        const std::lock_guard lock(mutex_);
        require_finished("self_cpu_time_total()");
        std::int64_t total = 0;
        for (const event& e : events()) total += e.self_ns;
        return static_cast<double>(total) / 1e3;
    }

    /// The profiler's own timings and the record accounting (kept, dropped) of the last window.
    [[nodiscard]] profiler_stats stats() const {
        const std::lock_guard lock(mutex_);
        require_finished("stats()");
        return window_stats_;
    }

    /// Writes the last window as Chrome/Perfetto trace JSON (gzip if `path` ends in ".gz"), with the
    /// metadata added so far and, in a distributed job, "distributedInfo".
    ///
    ///     prof.export_chrome_trace("run.pt.trace.json.gz");
    void export_chrome_trace(const std::string& path) const {
        const detail::own_allocation_scope own;
        const std::lock_guard lock(mutex_);
        require_finished("export_chrome_trace()");
        require_kept("export_chrome_trace()");
        const detail::chrome_trace_info info = trace_info(window_stats_.truncated_names);
        if (window_records_ && !has_stacks && !has_modules && detail::chrome_trace_from_records(*window_records_)) {
            detail::write_chrome_trace_file(path, *window_records_, window_first_id_, info);
        } else {
            detail::write_chrome_trace_file(path, window_events(), info);
        }
    }

    /// Writes the last window as Perfetto's native protobuf trace (gzip if `path` ends in ".gz"):
    /// thread tracks, interned names, stint's counts on a "stint stats" instant and a counter track.
    /// About a fifth of the JSON's size; ui.perfetto.dev and trace_processor open it.
    ///
    ///     prof.export_perfetto_trace("run.pftrace");
    void export_perfetto_trace(const std::string& path) const {
        const detail::own_allocation_scope own;
        const std::lock_guard lock(mutex_);
        require_finished("export_perfetto_trace()");
        require_kept("export_perfetto_trace()");
        detail::perfetto_trace_info info;
        info.pid = detail::current_pid();
        info.truncated_names = window_stats_.truncated_names;
        if (window_flight_) info = window_flight_->perfetto_info(info.pid, info.truncated_names);
        detail::write_perfetto_trace_file(path, window_events(), info);
    }

    /// Writes the last window's live memory of `device` (the CPU unless said) over time, as torch's
    /// export_memory_timeline: `.json` / `.json.gz` in torch's `[times, sizes]` shape, or `.html`, a
    /// self-contained plot with the peak and the op that was running then. Needs profile_memory.
    ///
    ///     prof.export_memory_timeline("memory.html");
    ///     prof.export_memory_timeline("gpu0.json.gz", {stint::device_type::cuda, 0});
    void export_memory_timeline(const std::string& path, stint::device device = {}) const {
        static_assert(has_memory, "stint: export_memory_timeline() needs memory events. Fix: add stint::profile_memory "
                                  "to the profiler's config");
        const detail::own_allocation_scope own;
        const std::lock_guard lock(mutex_);
        require_finished("export_memory_timeline()");
        require_kept("export_memory_timeline()");
        stint::export_memory_timeline(window_events(), path, device);
    }

    /// Adds `"key": "value"` at the top level of every trace this profiler exports from now on; a key
    /// added again takes the new value. Keys the trace format uses ("traceEvents", ...) are refused
    /// with std::invalid_argument.
    ///
    ///     prof.add_metadata("run", "baseline");    // "run": "baseline"
    void add_metadata(std::string_view key, std::string_view value) {
        if (!active()) return;
        refuse_reserved("add_metadata", key);
        const std::lock_guard lock(mutex_);
        fmt::memory_buffer json;
        detail::append_json_string(json, value);
        set_metadata(key, fmt::to_string(json));
    }

    /// Adds `"key": <json>` at the top level of every trace this profiler exports from now on. Text
    /// that is not exactly one valid JSON value (RFC 8259, nesting at most 512 deep, no number past a
    /// double's range) is refused with std::invalid_argument, and never written.
    ///
    ///     prof.add_metadata_json("layers", "[1, 2, 3]");   // "layers": [1, 2, 3]
    void add_metadata_json(std::string_view key, std::string_view json) {
        if (!active()) return;
        refuse_reserved("add_metadata_json", key);
        const std::lock_guard lock(mutex_);
        if (std::optional<std::string> reason = detail::validate_json(json)) {
            throw std::invalid_argument(
                fmt::format("stint: add_metadata_json(\"{}\"): the value is not valid JSON: {}", key, *reason));
        }
        set_metadata(key, std::string(json));
    }

    /// Writes collapsed stacks for flame graphs (flamegraph.pl, speedscope): one line per event with
    /// a stack, `root;...;innermost <metric>`, the metric an integer number of microseconds, rows
    /// that round to 0 left out (torch's export_stacks). Needs with_stack in the config. `metric`:
    /// "self_cpu_time_total" or "self_cuda_time_total"; another throws std::invalid_argument listing
    /// them. `frames`: source locations `file(line): function` (torch's form), or the names of the
    /// scopes and ops. An unwritable path throws std::system_error and leaves nothing behind.
    ///
    ///     prof.export_stacks("cpu.stacks");   // flamegraph.pl cpu.stacks > cpu.svg
    ///     prof.export_stacks("names.stacks", "self_cpu_time_total", stint::stack_frames::names);
    void export_stacks(const std::string& path, std::string_view metric = "self_cpu_time_total",
                       stack_frames frames = stack_frames::locations) const {
        static_assert(has_stacks,
                      "stint: export_stacks() needs stacks. Fix: add stint::with_stack<> to the profiler's config, "
                      "e.g. stint::profiler<stint::config<stint::with_stack<>>>.");
        const std::lock_guard lock(mutex_);
        require_finished("export_stacks()");
        require_kept("export_stacks()");
        detail::write_collapsed_stacks_file(path, events(), metric, frames);
    }

private:
    using device_backend = detail::device_backend_t<Config>;
    static constexpr bool has_device = detail::has_device_backend<Config>;
    static constexpr bool has_stacks = Config::template has<with_stack<>>;
    static constexpr bool has_modules = Config::template has<with_modules>;
    static constexpr bool has_memory = Config::template has<profile_memory>;
    static constexpr bool has_shapes = Config::template has<record_shapes>;

    [[nodiscard]] bool active() const noexcept {
        if constexpr (Config::enabled) {
            return options_.enabled;
        } else {
            return false;
        }
    }

    /// Runs torch's action_map entry for `previous` -> `next` (nullopt: stopping). Every operation
    /// runs even when an earlier one threw; the first exception is left in `error`.
    void transit(profiler_action previous, std::optional<profiler_action> next, std::exception_ptr& error) {
        const detail::session_ops ops = detail::transition_actions(previous, next);
        bool saved = false;
        for (std::size_t i = 0; i < ops.size(); ++i) {
            try {
                switch (ops[i]) {
                    case detail::session_op::prepare_trace:
                        if constexpr (has_stacks) detail::warm_native_stacks();
                        session_.prepare(options_.buffer_budget_bytes, options_.reserve_buffer_bytes);
                        break;
                    case detail::session_op::start_trace:
                        // A warmup that ends without recording: torch starts and stops an empty trace
                        // (replacing its results); stint drops the preparation and keeps the last window.
                        if (i + 1 < ops.size() && ops[i + 1] == detail::session_op::stop_trace) {
                            session_.discard_preparation();
                            ++i;
                        } else {
                            if (session_.is_open()) {
                                throw std::logic_error("stint: start(): this profiler is already recording");
                            }
                            if constexpr (has_stacks) detail::warm_native_stacks();
                            settle_last_window();
                            open_session();
                        }
                        break;
                    case detail::session_op::stop_trace:
                        saved = close_window();
                        break;
                    case detail::session_op::trace_ready:
                        if (saved) trace_ready();
                        break;
                }
            } catch (...) {
                if (!error) error = std::current_exception();
            }
            running_.store(session_.is_open(), std::memory_order_relaxed);
        }
    }

    /// Opens the CPU session and, when asked for and compiled in, the device session beside it; with
    /// stream_to, the stream first (a path it cannot write opens nothing).
    void open_session() {
        if (!options_.stream_to.empty()) {
            stream_ = std::make_unique<later<detail::trace_stream>>(options_.stream_to, detail::current_pid());
            try {
                session_.open(options_.buffer_budget_bytes, options_.reserve_buffer_bytes, true, false, {}, true);
            } catch (...) {
                stream_.reset();  // nothing opened; the unfinished file is removed
                throw;
            }
            try {
                stream_->start(session_.recording_state(), session_.calibration(), next_id_);
            } catch (...) {
                detail::record_store discarded;  // no writer: the session closes unrecorded
                (void)session_.close_records(discarded);
                stream_.reset();
                throw;
            }
            return;
        }
        if (options_.flight_recorder) {
            open_flight_session();
            return;
        }
        const bool device = has_device && options_.activities.contains(activity::cuda);
        stint::execution_trace_observer* et = options_.execution_trace_observer;
        execution_trace_window_ = et != nullptr && et->wants_window();
        session_.open(options_.buffer_budget_bytes, options_.reserve_buffer_bytes,
                      options_.activities.contains(activity::cpu) || !device, has_memory,
                      {.outputs = has_shapes || execution_trace_window_, .tensor_identities = execution_trace_window_});
        if (execution_trace_window_) et->set_window_running(true);
        if constexpr (has_device) {
            if (device) {
                device_requested_ = true;
                device_started_ = device_backend::start({.budget_bytes = options_.device_buffer_budget_bytes,
                                                        .sync_events = options_.enable_cuda_sync_events,
                                                        .teardown = options_.teardown_cupti_on_stop});
            }
        }
    }

    /// Opens a flight recorder's session: refuses a budget that cannot hold a chunk per thread and a dump
    /// directory that cannot be written, now rather than when a dump is due.
    void open_flight_session() {
        const flight_recorder_options& flight = *options_.flight_recorder;
        const std::size_t threads = std::max<std::size_t>(detail::the_registry().live_threads(), 1);
        const std::size_t minimum = threads * detail::chunk::total_bytes;
        if (flight.budget_bytes < minimum) {
            throw std::invalid_argument(fmt::format(
                "stint: flight_recorder.budget_bytes = {} is too small: the ring needs one {} KiB chunk for each "
                "of the {} threads that record, at least {} bytes",
                flight.budget_bytes, detail::chunk::total_bytes / 1024, threads, minimum));
        }
        if (flight.slow_step.factor > 0 || flight.hang_timeout.count() > 0) detail::check_dump_dir(flight.dump_dir);
        session_.prepare(flight.budget_bytes, options_.reserve_buffer_bytes);
        const double ns_per_tick = session_.calibration().ns_per_tick;
        const auto span_ns = static_cast<double>(flight.span.count());
        const detail::ring_options ring{
            .on = true, .span_ticks = span_ns > 0 ? static_cast<std::uint64_t>(span_ns / ns_per_tick) : 0};
        session_.open(flight.budget_bytes, options_.reserve_buffer_bytes, true, has_memory,
                      {.outputs = has_shapes, .tensor_identities = false}, false, ring);
        flight_.emplace(flight);
        if (!flight.crash_dump_path.empty()) {
            try {
                detail::crash_dump::install(flight.crash_dump_path, session_.calibration());
            } catch (...) {
                detail::record_store discarded;  // refused at start: the session closes unrecorded
                (void)session_.close_records(discarded);
                flight_.reset();
                throw;
            }
            crash_dump_installed_ = true;
        }
        if (flight.hang_timeout.count() > 0) {
            watchdog_ = std::make_unique<detail::hang_watchdog>(
                flight.hang_timeout, step_num_.load(),
                [this](std::int64_t step, std::int64_t silent_ns, const std::atomic<bool>& stopping) {
                    dump_hang(step, silent_ns, stopping);
                });
        }
    }

    static flight_dump dump_for(void* self, const std::string& path) { return static_cast<profiler*>(self)->dump(path); }

    /// The watchdog saw no step() for the timeout: the whole ring, with the step still open. The
    /// profiler's lock may be held by a stop() that is joining the watchdog: try it, never wait on it.
    void dump_hang(std::int64_t step, std::int64_t silent_ns, const std::atomic<bool>& stopping) {
        std::unique_lock lock(mutex_, std::try_to_lock);
        while (!lock.owns_lock()) {
            if (stopping.load(std::memory_order_relaxed)) return;
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
            (void)lock.try_lock();
        }
        if (!flight_) return;
        const detail::own_allocation_scope own;
        const flight_recorder_options& flight = *options_.flight_recorder;
        const std::string path = fmt::format("{}{}hang_step_{}{}", flight.dump_dir, flight.dump_dir.empty() ? "" : "/",
                                             step, flight.dump_extension);
        // Every thread's open scopes (the step's annotation among them), as the threads noted them.
        std::uint64_t not_kept = 0;
        const auto& clock = session_.calibration();
        later<std::vector<detail::flight_window::open_scope>> open;
        for (const detail::registry::open_scope& o : detail::the_registry().open_scopes(clock.anchor.ticks, not_kept)) {
            open.push_back({o.os_tid, o.name, clock.to_ns_since_anchor(o.begin_ticks), o.depth});
        }
        std::string why = fmt::format("no step() for {:.3f} ms during step {}", static_cast<double>(silent_ns) / 1e6, step);
        if (not_kept != 0) why += fmt::format("; {} open scopes deeper than {} not kept", not_kept, detail::open_scope_stack::capacity);
        triggered_dumps_.push_back(dump_window(path, 0, "hang", std::move(why), std::move(open)));
    }

    /// A flight recorder's step: noted for the last-steps window, and a slow one dumps them.
    void observe_flight_step() {
        detail::flight_steps& steps = *flight_;
        const std::uint64_t now_ticks = stint::read_ticks();
        const std::int64_t now_ns = detail::steady_now_ns();
        const std::int64_t duration = now_ns - steps.last_step_ns;
        const std::uint64_t began = steps.last_step_ticks;
        steps.last_step_ns = now_ns;
        steps.last_step_ticks = now_ticks;
        if (watchdog_) watchdog_->note_step(step_num_);
        steps.begins.push_back(began);
        const slow_step_trigger& trigger = options_.flight_recorder->slow_step;
        while (steps.begins.size() > std::max<std::size_t>(trigger.steps, 1)) steps.begins.pop_front();
        if (!steps.detector.observe(duration, now_ns)) return;
        const std::int64_t step = step_num_ - 1;  // the step that just ended
        const flight_recorder_options& flight = *options_.flight_recorder;
        const std::string path = fmt::format("{}{}slow_step_{}{}", flight.dump_dir, flight.dump_dir.empty() ? "" : "/",
                                             step, flight.dump_extension);
        const std::string why = fmt::format("step {} took {:.3f} ms, {:.1f} x the median {:.3f} ms", step,
                                            static_cast<double>(duration) / 1e6,
                                            static_cast<double>(duration) / static_cast<double>(std::max<std::int64_t>(steps.detector.median_ns(), 1)),
                                            static_cast<double>(steps.detector.median_ns()) / 1e6);
        try {
            triggered_dumps_.push_back(dump_window(path, steps.begins.front(), "slow step", why));
        } catch (const std::exception& e) {
            // The program's step must not fail for a dump: say it instead.
            detail::warn(fmt::format("flight recorder: the slow step's dump failed: {}", e.what()));
        }
    }

    /// Copies the flight recorder's records that ended since `from_ticks` (0: all) and writes them.
    flight_dump dump_window(const std::string& path, std::uint64_t from_ticks, std::string trigger, std::string why,
                            later<std::vector<detail::flight_window::open_scope>> open = {}) {
        later<detail::record_store> records;
        if (!session_.copy_records(records, from_ticks)) {
            throw std::logic_error("stint: dump(): the flight recorder is not recording; call start() first");
        }
        later<detail::flight_window> window = detail::flight_window::of(records, from_ticks, std::move(trigger));
        window.detail = std::move(why);
        window.open_scopes = std::move(open);
        event_list events;
        profiler_stats stats;
        detail::session::build_events(records, events, 1, drain_options(false), nullptr, stats);
        if (!window.open_scopes.empty()) window.note_last_records(events);
        return detail::write_flight_dump(path, events, trace_info(stats.truncated_names), window);
    }

    /// Drains the session into the window's results; false when none was recording. The event list is
    /// built now when something needs it at once (earlier windows kept, an execution trace, device
    /// activity to join, captured values whose counts stats() gives); otherwise the records are kept
    /// and built into events when first asked for, and a timing-only trace is written from them.
    bool close_window() {
        later<std::optional<detail::device_capture>> device;
        if constexpr (has_device) {
            // The device session ends first: its records must all be in before the CPU side is drained.
            if (device_requested_) {
                device = device_started_ ? device_backend::stop(options_.sync_device_on_stop)
                                         : device_backend::unavailable();
                device_requested_ = device_started_ = false;
            }
        }
        if (stream_) return close_streamed_window();
        watchdog_.reset();  // joined before the drain: a hang's dump reads the ring
        if (std::exchange(crash_dump_installed_, false)) {
            for (const std::string& line : detail::crash_dump::overridden()) {
                detail::warn(fmt::format("flight recorder: {}; a crash during the session would have left no dump", line));
            }
            detail::crash_dump::uninstall();
        }
        const bool et_window = std::exchange(execution_trace_window_, false);
        later<detail::record_store> records;
        const bool closed = session_.close_records(records);
        if (et_window && options_.execution_trace_observer != nullptr) {
            options_.execution_trace_observer->set_window_running(false);
        }
        if (!closed) return false;
        window_stats_ = session_.stats();
        window_first_id_ = next_id_;
        forget_window();
        if (flight_) {
            window_flight_ = detail::flight_window::of(records, 0, "stop");
            flight_.reset();
        }
        bool timing_only = true;
        for (const auto& t : records.threads()) timing_only = timing_only && t.timing_only;
        if (timing_only && !options_.accumulate_events && !et_window && !device) {
            next_id_ += records.events();
            window_records_.emplace(std::move(records));
            return true;
        }
        try {
            detail::session::build_events(records, window_events_, window_first_id_, drain_options(et_window),
                                          device ? &*device : nullptr, window_stats_);
        } catch (const std::exception& e) {
            lose_window(e.what());  // its records went back to the pool as they were read
            throw;
        } catch (...) {
            lose_window("an exception of unknown type");
            throw;
        }
        next_id_ += window_events_.size();
        if (options_.accumulate_events) all_events_.append(window_events_);
        if (et_window && options_.execution_trace_observer != nullptr) {
            options_.execution_trace_observer->append_window(window_events_);
        }
        return true;
    }

    /// Closes a streamed window: the stream writes what the buffers still hold and completes its file.
    bool close_streamed_window() {
        later<detail::record_store> records;
        if (stream_->inherited()) {
            // A forked child: the writer thread and the file are the parent's. Abandon both.
            (void)stream_.release();
            (void)session_.close_records(records);
            return false;
        }
        struct reset_stream {
            later<std::unique_ptr<detail::trace_stream>>& stream;
            ~reset_stream() { stream.reset(); }  // the file is discarded unless it was completed
        } reset{stream_};
        stream_->stop();
        if (!session_.close_records(records)) return false;
        window_stats_ = session_.stats();
        forget_window();
        streamed_window_ = false;
        detail::streamed_totals totals;
        try {
            totals = stream_->finish(records, trace_info(window_stats_.truncated_names));
        } catch (...) {
            // Writing failed: the records the stream had not written are the window, as a stop without
            // a stream would keep them, and stop() throws what failed.
            window_first_id_ = stream_->next_id();
            detail::session::count_records(records, window_stats_);
            next_id_ = window_first_id_ + records.events();
            window_records_.emplace(std::move(records));
            throw;
        }
        streamed_window_ = true;
        window_stats_.number_of_events = totals.events;
        window_stats_.recorded = totals.recorded;
        window_stats_.overhead_events = totals.overhead;
        window_stats_.dropped = totals.dropped;
        next_id_ += totals.events;
        return true;
    }

    static constexpr detail::drain_options drain_options(bool input_values) noexcept {
        return {.call_stacks = has_stacks, .module_hierarchy = has_modules, .input_values = input_values};
    }

    /// The last window's events, built from its records the first time they are asked for. A build that
    /// fails (out of memory) before giving any record back leaves the records for a retry; one that
    /// fails after loses the window, and every later call throws rather than return part of it.
    const event_list& window_events() const {
        if (window_lost_) {
            throw std::runtime_error(fmt::format("stint: the last window's events are lost: building them failed "
                                                 "({}) after its records had begun to go back to the pool; stats() "
                                                 "still counts them",
                                                 window_lost_reason_));
        }
        if (window_records_) {
            try {
                detail::session::build_events(*window_records_, window_events_, window_first_id_,
                                              drain_options(false), nullptr, window_stats_);
            } catch (const std::exception& e) {
                if (window_records_->partly_released()) lose_window(e.what());
                throw;
            } catch (...) {
                if (window_records_->partly_released()) lose_window("an exception of unknown type");
                throw;
            }
            window_records_.reset();
        }
        return window_events_;
    }

    /// Forgets the last window: a new one replaces it.
    void forget_window() const noexcept {
        window_flight_.reset();
        window_records_.reset();
        window_events_ = event_list{};
        window_lost_ = false;
    }

    /// The last window's events cannot be built: its records are gone (given back as they were read).
    void lose_window(const char* why) const noexcept {
        forget_window();
        window_lost_ = true;
        try {
            window_lost_reason_ = why;
        } catch (...) {
            window_lost_reason_.clear();  // out of memory: the error says less, but still says it
        }
    }

    /// Before a new window records: the last one's records go back to the pool (the new window reuses
    /// the chunks). With a schedule its events stay readable, so they are built first; without one
    /// they can no longer be read (the next stop replaces them).
    void settle_last_window() {
        if (!window_records_) return;
        if (options_.schedule) {
            (void)window_events();
        } else {
            forget_window();
        }
    }

    /// The observer went first: stop using it.
    static void forget_execution_trace_observer(void* self) noexcept {
        auto& prof = *static_cast<profiler*>(self);
        const std::lock_guard lock(prof.mutex_);
        prof.options_.execution_trace_observer = nullptr;
    }

    /// At destruction: the attached observer's file is finished (torch's cleanup at profile.__exit__);
    /// a failure becomes a warning.
    void finish_execution_trace() noexcept {
        stint::execution_trace_observer* et = std::exchange(options_.execution_trace_observer, nullptr);
        if (et == nullptr) return;
        try {
            et->detach(this);
        } catch (const std::exception& e) {
            detail::warn(fmt::format("the profiler's execution trace could not be finished: {}", e.what()));
        } catch (...) {
            detail::warn("the profiler's execution trace could not be finished");
        }
    }

    /// Stops `self` if it still records and, when `path` is not empty, writes the session's trace
    /// there (STINT_TRACE_ON_EXIT). Failures become warnings: it runs in a destructor or at exit.
    static void write_unfinished_trace(void* self, const std::string& path) noexcept {
        auto& prof = *static_cast<profiler*>(self);
        const bool unfinished = prof.is_running();
        try {
            prof.stop();
        } catch (const std::exception& e) {
            detail::warn(fmt::format("stopping an unfinished session (profiler destroyed, or process exit): stop() "
                                     "threw and cannot rethrow: {}", e.what()));
        } catch (...) {
            detail::warn("stopping an unfinished session (profiler destroyed, or process exit): stop() threw and "
                         "cannot rethrow");
        }
        if (!unfinished || path.empty()) return;
        try {
            prof.export_chrome_trace(path);
        } catch (const std::exception& e) {
            detail::warn(fmt::format("STINT_TRACE_ON_EXIT: cannot write the unfinished session's trace: {}", e.what()));
        } catch (...) {
            detail::warn("STINT_TRACE_ON_EXIT: cannot write the unfinished session's trace");
        }
    }

    void trace_ready() {
        if (!options_.on_trace_ready) return;
        struct in_callback_guard {
            bool& flag;
            explicit in_callback_guard(bool& f) : flag(f) { flag = true; }
            ~in_callback_guard() { flag = false; }
            in_callback_guard(const in_callback_guard&) = delete;
            in_callback_guard& operator=(const in_callback_guard&) = delete;
        } guard(in_callback_);
        options_.on_trace_ready(*this);
    }

    /// Opens `ProfilerStep#<step_num>` while this profiler records with a schedule (torch's
    /// record_steps); it ends at the next step() or stop(), so it spans the step.
    void open_step_annotation() {
        if ((!options_.schedule && !options_.flight_recorder) || !session_.is_open()) return;
        std::array<char, 48> name{};  // "ProfilerStep#" and at most 20 digits
        const auto written = fmt::format_to_n(name.data(), name.size(), "ProfilerStep#{}", step_num_.load());
        step_annotation_.emplace(std::string_view(name.data(), written.size));
    }
    void close_step_annotation() noexcept { step_annotation_.reset(); }

    void refuse_in_callback(std::string_view call) const {
        if (in_callback_) {
            throw std::logic_error("stint: " + std::string(call) +
                                   ": called from on_trace_ready; return from the callback first");
        }
    }

    void require_kept(std::string_view call) const {
        if (streamed_window_) {
            throw std::logic_error(fmt::format("stint: {}: the window was streamed to \"{}\" "
                                               "(profiler_options::stream_to); its events are in that file, not kept",
                                               call, options_.stream_to));
        }
    }

    void refuse_streaming_with_options() const {
        const auto refuse = [](std::string_view why) {
            throw std::invalid_argument(fmt::format("stint: profiler_options::stream_to streams one window of "
                                                    "timing-only records; {}", why));
        };
        if (options_.schedule) refuse("it takes no schedule (each window would need a file of its own)");
        if (options_.accumulate_events) refuse("accumulate_events keeps events, which a stream does not");
        if (options_.execution_trace_observer != nullptr) refuse("an execution trace needs the event list");
        if (has_device || has_memory || has_shapes || has_stacks || has_modules) {
            refuse("this config captures values (inputs, stacks, modules, memory or device activity) that only "
                   "the event list writes; stream with stint::config<>");
        }
        if (options_.stream_to.ends_with(".pftrace") || options_.stream_to.ends_with(".perfetto-trace")) {
            refuse("it writes a Chrome trace (.json or .json.gz); export_perfetto_trace() writes Perfetto's "
                   "format after a normal stop");
        }
    }

    void refuse_flight_recorder_with_options() const {
        const auto refuse = [](std::string_view why) {
            throw std::invalid_argument(
                fmt::format("stint: profiler_options::flight_recorder records one ring from start() to stop(); {}", why));
        };
        if (options_.schedule) refuse("it takes no schedule (dump() and its triggers write windows)");
        if (!options_.stream_to.empty()) refuse("it keeps the last records in memory, which stream_to writes away");
        if (options_.accumulate_events) refuse("accumulate_events keeps every window, which a ring does not");
        if (options_.execution_trace_observer != nullptr) refuse("an execution trace needs every op, which a ring overwrites");
        const slow_step_trigger& slow = options_.flight_recorder->slow_step;
        if (slow.factor < 0 || (slow.factor > 0 && slow.factor <= 1)) {
            throw std::invalid_argument(fmt::format(
                "stint: flight_recorder.slow_step.factor = {}: a slow step takes more than factor x the median; "
                "give a factor above 1 (or 0: off)", slow.factor));
        }
        if (!detail::dump_format_of(options_.flight_recorder->dump_extension)) {
            throw std::invalid_argument(fmt::format("stint: flight_recorder.dump_extension \"{}\": give .pt.trace.json, "
                                                    ".pt.trace.json.gz or .pftrace",
                                                    options_.flight_recorder->dump_extension));
        }
    }

    void require_finished(std::string_view call) const {
        // With a schedule the results are the last saved window's, readable while the next records.
        if (session_.is_open() && !options_.schedule) {
            throw std::logic_error("stint: " + std::string(call) +
                                   ": the profiler didn't finish running; call stop() first");
        }
    }

    static void refuse_reserved(std::string_view call, std::string_view key) {
        if (detail::is_reserved_trace_key(key)) {
            throw std::invalid_argument(
                fmt::format("stint: {}(\"{}\"): the trace format uses this key; choose another", call, key));
        }
    }

    /// What a Chrome trace of this profiler carries besides events: the metadata added so far and, in a
    /// distributed job, "distributedInfo".
    [[nodiscard]] detail::chrome_trace_info trace_info(std::uint64_t truncated_names) const {
        detail::chrome_trace_info info;
        info.pid = detail::current_pid();
        info.truncated_names = truncated_names;
        info.metadata_json = metadata_;
        if (window_flight_ && !session_.is_open()) info.metadata_json.emplace_back("flightRecorder", window_flight_->json());
        if (find_metadata("distributedInfo") == nullptr) {
            if (std::optional<distributed_info> dist = current_distributed_info()) {
                info.metadata_json.emplace_back("distributedInfo", detail::distributed_info_json(*dist));
            }
        }
        return info;
    }

    [[nodiscard]] const std::string* find_metadata(std::string_view key) const {
        for (const auto& [k, v] : metadata_) {
            if (k == key) return &v;
        }
        return nullptr;
    }
    /// A key as the trace writes it (invalid UTF-8 as U+FFFD): keys that read back alike are one key.
    static std::string written_key(std::string_view key) {
        fmt::memory_buffer json;
        detail::append_json_string(json, key);
        return fmt::to_string(json);
    }
    void set_metadata(std::string_view key, std::string json) {
        const std::string written = written_key(key);
        for (auto& [k, v] : metadata_) {
            if (written_key(k) == written) {
                k.assign(key);
                v = std::move(json);
                return;
            }
        }
        metadata_.emplace_back(std::string(key), std::move(json));
    }

    // Serialises the calls of several threads; recursive so that on_trace_ready, which runs under it,
    // can read and export the window.
    mutable std::recursive_mutex mutex_;
    options_type options_;
    later<detail::session> session_;
    later<schedule_checker> checker_;
    // Atomic so that the queries that return them need no lock; written under the lock.
    std::atomic<profiler_action> current_action_{profiler_action::record};
    std::atomic<std::int64_t> step_num_{0};
    std::atomic<bool> running_{false};
    bool started_ = false;
    bool in_callback_ = false;
    bool device_requested_ = false;  // the open session asked for device activity
    bool device_started_ = false;    // ... and the device collector started
    bool execution_trace_window_ = false;  // the open session records for the execution trace observer
    later<std::optional<record_function>> step_annotation_;
    // The last window: its records until its events are asked for, then its events (mutable: built by
    // the const queries, under the lock).
    mutable later<std::optional<detail::record_store>> window_records_;
    mutable later<event_list> window_events_;
    mutable bool window_lost_ = false;  // its events could not be built and its records are gone
    mutable later<std::string> window_lost_reason_;
    std::uint64_t window_first_id_ = 0;
    later<event_list> all_events_;
    mutable profiler_stats window_stats_;
    later<std::optional<detail::flight_steps>> flight_;  // while a flight recorder records
    later<std::unique_ptr<detail::hang_watchdog>> watchdog_;  // ... with a hang_timeout
    later<std::vector<flight_dump>> triggered_dumps_;  // what its triggers wrote
    bool crash_dump_installed_ = false;
    mutable later<std::optional<detail::flight_window>> window_flight_;  // the last window was a flight recorder's
    later<std::unique_ptr<detail::trace_stream>> stream_;  // while a streamed window records
    bool streamed_window_ = false;                 // the last window was streamed: nothing kept
    later<std::vector<std::pair<std::string, std::string>>> metadata_;
    // Ids start at 1, as torch's record-function handles do: 0 means "no op" in a trace's External id.
    std::uint64_t next_id_ = 1;
};

/// Prints the key-averages table, as `str(prof)` does in torch.
template <class Config>
std::ostream& operator<<(std::ostream& out, const profiler<Config>& prof) {
    return out << prof.key_averages().table();
}

}  // namespace stint

template <class Config>
struct fmt::formatter<stint::profiler<Config>> : fmt::formatter<std::string_view> {
    template <class FormatContext>
    auto format(const stint::profiler<Config>& prof, FormatContext& ctx) const {
        const std::string text = prof.key_averages().table();
        return fmt::formatter<std::string_view>::format(text, ctx);
    }
};
