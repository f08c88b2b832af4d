#pragma once
// profiler_core's bodies, and profiler_state: the profiler's sessions, windows and results. Inline in a
// header-only build; compiled once by <stint/impl/src.hpp> under STINT_SEPARATE_COMPILATION.

#include <atomic>        // std::atomic
#include <chrono>        // std::chrono::milliseconds
#include <exception>     // std::exception_ptr, std::terminate
#include <memory>        // std::unique_ptr, std::make_unique
#include <mutex>         // std::recursive_mutex, std::lock_guard, std::unique_lock
#include <optional>      // std::optional
#include <stdexcept>     // std::logic_error, std::invalid_argument, std::runtime_error
#include <string>        // std::string
#include <string_view>   // std::string_view
#include <thread>        // std::this_thread::sleep_for
#include <utility>       // std::move, std::exchange, std::pair
#include <vector>        // std::vector

#include <fmt/format.h>  // fmt::format, fmt::memory_buffer, fmt::to_string

#include "stint/profiler/profiler_core.hpp"
#include "stint/analysis/key_averages.hpp"
#include "stint/analysis/table.hpp"
#include "stint/capture/native_stack.hpp"
#include "stint/detail/platform.hpp"
#include "stint/device/device_capture.hpp"
#include "stint/device/device_link.hpp"
#include "stint/drain/session.hpp"
#include "stint/export/chrome_trace.hpp"
#include "stint/export/chrome_trace_records.hpp"
#include "stint/export/collapsed_stacks.hpp"
#include "stint/export/json_validate.hpp"
#include "stint/export/json_writer.hpp"
#include "stint/export/memory_timeline.hpp"
#include "stint/export/perfetto_trace.hpp"
#include "stint/export/trace_stream.hpp"
#include "stint/profiler/distributed.hpp"
#include "stint/profiler/execution_trace_observer.hpp"
#include "stint/profiler/exit_trace.hpp"
#include "stint/profiler/running_flight_recorder.hpp"
#include "stint/profiler/flight_session.hpp"
#include "stint/profiler/step_tracker.hpp"
#include "stint/common/number_text.hpp"
#include "stint/common/warning.hpp"
#include "stint/recording/registry.hpp"
#include "stint/scope.hpp"

namespace stint::detail {
inline namespace STINT_DETAIL_BUILD_NAMESPACE {

class profiler_state final : public flight_host {
public:
    profiler_state(profiler_settings settings, const profiler_traits& traits, void* owner, void (*on_trace_ready)(void*))
        : options_(std::move(settings)), traits_(traits), owner_(owner), on_trace_ready_(on_trace_ready) {
        if (!active()) return;
        install_registry_slow_path();  // threads named from now on are named in the registry
        const bool records_device = traits_.has_device && options_.activities.contains(activity::cuda);
        if (!options_.activities.contains(activity::cpu) && !records_device) {
            throw std::invalid_argument(
                "stint: profiler_options::activities names nothing this config records; give activity::cpu, or "
                "activity::cuda with stint::cuda_activities in the config");
        }
        if (!options_.stream_to.empty()) refuse_streaming_with_options();
        if (options_.flight_recorder) {
            options_.flight_recorder->code->check_options(
                *options_.flight_recorder, static_cast<bool>(options_.schedule), !options_.stream_to.empty(),
                options_.accumulate_events, options_.execution_trace_observer != nullptr);
        }
        if (options_.execution_trace_observer != nullptr) {
            options_.execution_trace_observer->attach(this, &forget_execution_trace_observer);
        }
        try {
            session_.keep_buffers_between_sessions(static_cast<bool>(options_.schedule));
            if (options_.schedule) current_action_ = options_.schedule(0);
            step_tracker::init_step_count(step_tracker::profiler_step_name);
            the_exit_trace().arm(this, &write_unfinished_trace);
        } catch (...) {
            // No destructor will run: the observer must not keep pointing here.
            if (options_.execution_trace_observer != nullptr) options_.execution_trace_observer->release(this);
            throw;
        }
    }
    profiler_state(const profiler_state&) = delete;
    profiler_state& operator=(const profiler_state&) = delete;

    ~profiler_state() = default;

    /// What destroying a profiler does, while the profiler and its callback are still whole (its core
    /// calls it before it frees this state).
    void close() noexcept {
        if (!active()) return;
        // Before the lock: a dump from outside holds its own first.
        if (options_.flight_recorder) the_running_flight_recorder().clear(this);
        if (in_callback_) {
            // The step() or stop() that called on_trace_ready is still running on this profiler: it
            // would touch freed memory when the callback returns. Stop here rather than corrupt.
            warn("a profiler was destroyed inside its own on_trace_ready; destroy it after the step() or "
                         "stop() that called the callback returns");
            std::terminate();
        }
        the_exit_trace().disarm(this);
        write_unfinished_trace(this, the_exit_trace().path());
        finish_execution_trace();
        try {
            step_tracker::erase_step_count(step_tracker::profiler_step_name);
        } catch (...) {
            // Out of memory while locking or erasing: the tracker keeps a stale count, nothing worse.
        }
    }

    void start() {
        if (!active()) return;
        const own_allocation_scope own;  // the profiler's own memory is not the program's
        {
            const std::lock_guard lock(mutex_);
            refuse_in_callback("start()");
            if (started_ || session_.is_open()) throw std::logic_error("stint: start(): this profiler is already recording");
            std::exception_ptr error;
            transit(profiler_action::none, current_action_, error);
            if (error) std::rethrow_exception(error);
            started_ = true;
            ever_started_ = true;
            open_step_annotation();
        }
        // A flight recorder answers dumps asked from outside (on_demand.hpp), outside its lock (see there).
        if (options_.flight_recorder) the_running_flight_recorder().set(this, &dump_for);
    }

    /// `asked`: the program's stop(), not the one a destructor or the process's exit runs.
    void stop(bool asked = true) {
        if (!active()) return;
        const own_allocation_scope own;  // the profiler's own memory is not the program's
        if (options_.flight_recorder) the_running_flight_recorder().clear(this);
        const std::lock_guard lock(mutex_);
        refuse_in_callback("stop()");
        if (asked && !ever_started_ && step_num_.load(std::memory_order_relaxed) == 0 && !warned_stop_without_start_) {
            // A stop() whose start() was forgotten would print and export an empty result without a
            // word; say so once per profiler (torch's Python warnings show a text once, too). A
            // schedule's step() opens windows without start(): a profiler that stepped is not warned.
            warned_stop_without_start_ = true;
            warn("stop() without start(): the profiler didn't run, so its results (table, trace, events) are "
                 "empty; call start() before the code to profile");
        }
        close_step_annotation();
        started_ = false;
        std::exception_ptr error;
        transit(current_action_, std::nullopt, error);
        if (error) std::rethrow_exception(error);
    }

    void step() {
        if (!active()) return;
        const own_allocation_scope own;  // the profiler's own memory is not the program's
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
        if (flight_) {
            if (std::optional<flight_dump> written = flight_->observe_step(step_num_)) {
                triggered_dumps_.push_back(std::move(*written));
            }
        }
        open_step_annotation();
        if (error) std::rethrow_exception(error);
    }

    [[nodiscard]] std::vector<flight_dump> triggered_dumps() const {
        const std::lock_guard lock(mutex_);
        return triggered_dumps_;
    }

    flight_dump dump(const std::string& path) {
        require_dump_format("dump", path);
        const own_allocation_scope own;
        const std::lock_guard lock(mutex_);
        if (!options_.flight_recorder || !flight_) {
            throw std::logic_error(options_.flight_recorder
                                       ? "stint: dump(): the flight recorder is not recording; call start() first"
                                       : "stint: dump(): this profiler is not a flight recorder; set "
                                         "profiler_options::flight_recorder");
        }
        return flight_->dump(path);
    }

    [[nodiscard]] std::int64_t step_num() const noexcept { return step_num_.load(std::memory_order_relaxed); }

    [[nodiscard]] profiler_action current_action() const noexcept {
        return current_action_.load(std::memory_order_relaxed);
    }

    [[nodiscard]] bool is_running() const noexcept { return running_.load(std::memory_order_relaxed); }

    [[nodiscard]] const event_list& events() const {
        const std::lock_guard lock(mutex_);
        require_finished("events()");
        require_kept("events()");
        return options_.accumulate_events ? all_events_ : window_events();
    }

    [[nodiscard]] averaged_event_list key_averages(const key_averages_options& options) const {
        const own_allocation_scope own;
        const std::lock_guard lock(mutex_);
        require_finished("key_averages()");
        return stint::key_averages(events(), options);
    }

    [[nodiscard]] double self_cpu_time_total() const {
        const std::lock_guard lock(mutex_);
        require_finished("self_cpu_time_total()");
        std::int64_t total = 0;
        for (const event& e : events()) total += e.self_ns;
        return static_cast<double>(total) / 1e3;
    }

    [[nodiscard]] profiler_stats stats() const {
        const std::lock_guard lock(mutex_);
        require_finished("stats()");
        return window_stats_;
    }

    void export_chrome_trace(const std::string& path) const {
        const own_allocation_scope own;
        const std::lock_guard lock(mutex_);
        require_finished("export_chrome_trace()");
        require_kept("export_chrome_trace()");
        const chrome_trace_info info = trace_info(window_stats_.truncated_names);
        if (window_records_ && traits_.call_stacks == nullptr && traits_.module_hierarchy == nullptr &&
            chrome_trace_from_records(*window_records_)) {
            write_chrome_trace_file(path, *window_records_, window_first_id_, info);
        } else {
            write_chrome_trace_file(path, window_events(), info);
        }
    }

    void export_perfetto_trace(const std::string& path, profiler_core::perfetto_writer_fn writer) const {
        const own_allocation_scope own;
        const std::lock_guard lock(mutex_);
        require_finished("export_perfetto_trace()");
        require_kept("export_perfetto_trace()");
        perfetto_trace_info info;
        info.pid = current_pid();
        info.truncated_names = window_stats_.truncated_names;
        if (window_flight_) {
            info.overwritten = window_flight_->perfetto.overwritten;
            info.overwritten_threads = window_flight_->perfetto.overwritten_threads;
        }
        writer(path, window_events(), info);
    }

    void export_memory_timeline(const std::string& path, stint::device device,
                                profiler_core::memory_timeline_fn writer) const {
        const own_allocation_scope own;
        const std::lock_guard lock(mutex_);
        require_finished("export_memory_timeline()");
        require_kept("export_memory_timeline()");
        writer(window_events(), path, device);
    }

    void add_metadata(std::string_view key, std::string_view value) {
        if (!active()) return;
        refuse_reserved("add_metadata", key);
        const std::lock_guard lock(mutex_);
        fmt::memory_buffer json;
        append_json_string(json, value);
        set_metadata(key, fmt::to_string(json));
    }

    void add_metadata_json(std::string_view key, std::string_view json, profiler_core::json_validator_fn validate) {
        if (!active()) return;
        refuse_reserved("add_metadata_json", key);
        const std::lock_guard lock(mutex_);
        if (std::optional<std::string> reason = validate(json)) {
            throw std::invalid_argument(
                fmt::format("stint: add_metadata_json(\"{}\"): the value is not valid JSON: {}", key, *reason));
        }
        set_metadata(key, std::string(json));
    }

    void export_stacks(const std::string& path, std::string_view metric, stack_frames frames,
                       profiler_core::stacks_writer_fn writer) const {
        const std::lock_guard lock(mutex_);
        require_finished("export_stacks()");
        require_kept("export_stacks()");
        writer(path, events(), metric, frames);
    }

private:
    [[nodiscard]] bool active() const noexcept { return traits_.enabled && options_.enabled; }

    /// Runs torch's action_map entry for `previous` -> `next` (nullopt: stopping). Every operation
    /// runs even when an earlier one threw; the first exception is left in `error`.
    void transit(profiler_action previous, std::optional<profiler_action> next, std::exception_ptr& error) {
        const session_ops ops = transition_actions(previous, next);
        bool saved = false;
        for (std::size_t i = 0; i < ops.size(); ++i) {
            try {
                switch (ops[i]) {
                    case session_op::prepare_trace:
                        if (traits_.call_stacks != nullptr) warm_native_stacks();
                        session_.prepare(options_.buffer_budget_bytes, options_.reserve_buffer_bytes);
                        break;
                    case session_op::start_trace:
                        // A warmup that ends without recording: torch starts and stops an empty trace
                        // (replacing its results); stint drops the preparation and keeps the last window.
                        if (i + 1 < ops.size() && ops[i + 1] == session_op::stop_trace) {
                            session_.discard_preparation();
                            ++i;
                        } else {
                            if (session_.is_open()) {
                                throw std::logic_error("stint: start(): this profiler is already recording");
                            }
                            if (traits_.call_stacks != nullptr) warm_native_stacks();
                            settle_last_window();
                            open_session();
                        }
                        break;
                    case session_op::stop_trace:
                        saved = close_window();
                        break;
                    case session_op::trace_ready:
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
            stream_ = std::make_unique<streaming_session>(options_.stream_to, current_pid());
            try {
                session_.open(options_.buffer_budget_bytes, options_.reserve_buffer_bytes, true, false, {}, true);
            } catch (...) {
                stream_.reset();  // nothing opened; the unfinished file is removed
                throw;
            }
            try {
                stream_->start(session_.recording_state(), session_.calibration(), next_id_);
            } catch (...) {
                record_store discarded;  // no writer: the session closes unrecorded
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
        const bool device = traits_.has_device && options_.activities.contains(activity::cuda);
        stint::execution_trace_observer* et = options_.execution_trace_observer;
        execution_trace_window_ = et != nullptr && et->wants_window();
        session_.open(options_.buffer_budget_bytes, options_.reserve_buffer_bytes,
                      options_.activities.contains(activity::cpu) || !device, traits_.has_memory,
                      {.outputs = traits_.has_shapes || execution_trace_window_, .tensor_identities = execution_trace_window_});
        if (execution_trace_window_) et->set_window_running(true);
        if (traits_.has_device) {
            if (device) {
                device_requested_ = true;
                device_started_ = traits_.device_start({.budget_bytes = options_.device_buffer_budget_bytes,
                                                        .sync_events = options_.enable_cuda_sync_events,
                                                        .teardown = options_.teardown_cupti_on_stop});
            }
        }
    }

    /// Opens a flight recorder's session: the ring, its triggers, its crash dump.
    void open_flight_session() {
        flight_ = std::make_unique<flight_session>(*options_.flight_recorder, session_, options_.reserve_buffer_bytes,
                                                   traits_.has_memory, traits_.has_shapes, step_num_.load(), *this);
    }

    static flight_dump dump_for(void* self, const std::string& path) { return static_cast<profiler_state*>(self)->dump(path); }

    /// The watchdog saw no step() for the timeout: the whole ring, with the step still open. The
    /// profiler's lock may be held by a stop() that is joining the watchdog: try it, never wait on it.
    void on_hang(std::int64_t step, std::int64_t silent_ns, const std::atomic<bool>& stopping) override {
        std::unique_lock lock(mutex_, std::try_to_lock);
        while (!lock.owns_lock()) {
            if (stopping.load(std::memory_order_relaxed)) return;
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
            (void)lock.try_lock();
        }
        if (!flight_) return;
        const own_allocation_scope own;
        triggered_dumps_.push_back(flight_->dump_hang(step, silent_ns));
    }

    /// A flight recorder's dump: records built as a window of this profiler is.
    void build_events(record_store& records, event_list& events, std::uint64_t& truncated_names) const override {
        profiler_stats stats;
        session::build_events(records, events, 1, what_to_drain(false), nullptr, stats);
        truncated_names = stats.truncated_names;
    }

    /// Drains the session into the window's results; false when none was recording. The event list is
    /// built now when something needs it at once (earlier windows kept, an execution trace, device
    /// activity to join, captured values whose counts stats() gives); otherwise the records are kept
    /// and built into events when first asked for, and a timing-only trace is written from them.
    bool close_window() {
        std::optional<device_capture> device;
        if (traits_.has_device) {
            // The device session ends first: its records must all be in before the CPU side is drained.
            if (device_requested_) {
                device = device_started_ ? traits_.device_stop(options_.sync_device_on_stop)
                                         : traits_.device_unavailable();
                device_requested_ = device_started_ = false;
            }
        }
        if (stream_) return close_streamed_window();
        if (flight_) flight_->finish();  // the watchdog joined, the crash dump uninstalled, before the drain
        const bool et_window = std::exchange(execution_trace_window_, false);
        record_store records;
        const bool closed = session_.close_records(records);
        if (et_window && options_.execution_trace_observer != nullptr) {
            options_.execution_trace_observer->set_window_running(false);
        }
        if (!closed) return false;
        window_stats_ = session_.stats();
        window_first_id_ = next_id_;
        forget_window();
        if (flight_) {
            window_flight_ = flight_->summary(records);
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
            session::build_events(records, window_events_, window_first_id_, what_to_drain(et_window),
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
        record_store records;
        if (stream_->inherited()) {
            // A forked child: the writer thread and the file are the parent's. Abandon both.
            stream_->abandon();
            stream_.reset();
            (void)session_.close_records(records);
            return false;
        }
        struct reset_stream {
            std::unique_ptr<streaming_session>& stream;
            ~reset_stream() { stream.reset(); }  // the file is discarded unless it was completed
        } reset{stream_};
        stream_->stop();
        if (!session_.close_records(records)) return false;
        window_stats_ = session_.stats();
        forget_window();
        streamed_window_ = false;
        streamed_totals totals;
        try {
            totals = stream_->finish(records, trace_info(window_stats_.truncated_names));
        } catch (...) {
            // Writing failed: the records the stream had not written are the window, as a stop without
            // a stream would keep them, and stop() throws what failed.
            window_first_id_ = stream_->next_id();
            session::count_records(records, window_stats_);
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

    [[nodiscard]] drain_options what_to_drain(bool input_values) const noexcept {
        return {.call_stacks = traits_.call_stacks,
                .module_hierarchy = traits_.module_hierarchy,
                .input_values = input_values,
                .join_device = traits_.join_device};
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
                session::build_events(*window_records_, window_events_, window_first_id_,
                                              what_to_drain(false), nullptr, window_stats_);
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
        auto& prof = *static_cast<profiler_state*>(self);
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
            warn(fmt::format("the profiler's execution trace could not be finished: {}", e.what()));
        } catch (...) {
            warn("the profiler's execution trace could not be finished");
        }
    }

    /// Stops `self` if it still records and, when `path` is not empty, writes the session's trace
    /// there (STINT_TRACE_ON_EXIT). Failures become warnings: it runs in a destructor or at exit.
    static void write_unfinished_trace(void* self, const std::string& path) noexcept {
        auto& prof = *static_cast<profiler_state*>(self);
        const bool unfinished = prof.is_running();
        try {
            prof.stop(false);
        } catch (const std::exception& e) {
            warn(fmt::format("stopping an unfinished session (profiler destroyed, or process exit): stop() "
                                     "threw and cannot rethrow: {}", e.what()));
        } catch (...) {
            warn("stopping an unfinished session (profiler destroyed, or process exit): stop() threw and "
                         "cannot rethrow");
        }
        if (!unfinished || path.empty()) return;
        try {
            prof.export_chrome_trace(path);
        } catch (const std::exception& e) {
            warn(fmt::format("STINT_TRACE_ON_EXIT: cannot write the unfinished session's trace: {}", e.what()));
        } catch (...) {
            warn("STINT_TRACE_ON_EXIT: cannot write the unfinished session's trace");
        }
    }

    void trace_ready() {
        if (on_trace_ready_ == nullptr) return;
        struct in_callback_guard {
            bool& flag;
            explicit in_callback_guard(bool& f) : flag(f) { flag = true; }
            ~in_callback_guard() { flag = false; }
            in_callback_guard(const in_callback_guard&) = delete;
            in_callback_guard& operator=(const in_callback_guard&) = delete;
        } guard(in_callback_);
        on_trace_ready_(owner_);
    }

    /// Opens `ProfilerStep#<step_num>` while this profiler records with a schedule (torch's
    /// record_steps); it ends at the next step() or stop(), so it spans the step.
    void open_step_annotation() {
        if ((!options_.schedule && !options_.flight_recorder) || !session_.is_open()) return;
        std::string name = "ProfilerStep#";
        append_integer(name, step_num_.load());
        step_annotation_.emplace(name);
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
                                               call, options_.stream_to.path()));
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
        if (traits_.has_device || traits_.has_memory || traits_.has_shapes || traits_.call_stacks != nullptr ||
            traits_.module_hierarchy != nullptr) {
            refuse("this config captures values (inputs, stacks, modules, memory or device activity) that only "
                   "the event list writes; stream with stint::config<>");
        }
        const std::string& path = options_.stream_to.path();
        if (path.ends_with(".pftrace") || path.ends_with(".perfetto-trace")) {
            refuse("it writes a Chrome trace (.json or .json.gz); export_perfetto_trace() writes Perfetto's "
                   "format after a normal stop");
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
        if (is_reserved_trace_key(key)) {
            throw std::invalid_argument(
                fmt::format("stint: {}(\"{}\"): the trace format uses this key; choose another", call, key));
        }
    }

    /// What a Chrome trace of this profiler carries besides events: the metadata added so far and, in a
    /// distributed job, "distributedInfo".
    [[nodiscard]] chrome_trace_info trace_info(std::uint64_t truncated_names) const override {
        chrome_trace_info info;
        info.pid = current_pid();
        info.truncated_names = truncated_names;
        info.metadata_json = metadata_;
        if (window_flight_ && !session_.is_open()) info.metadata_json.emplace_back("flightRecorder", window_flight_->json);
        if (find_metadata("distributedInfo") == nullptr) {
            if (std::optional<distributed_info> dist = current_distributed_info()) {
                info.metadata_json.emplace_back("distributedInfo", distributed_info_json(*dist));
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
        append_json_string(json, key);
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
    profiler_settings options_;
    profiler_traits traits_;
    void* owner_;                          // the profiler<Config> that on_trace_ready receives
    void (*on_trace_ready_)(void* owner);  // null: no callback
    session session_;
    schedule_checker checker_;
    // Atomic so that the queries that return them need no lock; written under the lock.
    std::atomic<profiler_action> current_action_{profiler_action::record};
    std::atomic<std::int64_t> step_num_{0};
    std::atomic<bool> running_{false};
    bool started_ = false;
    bool ever_started_ = false;               // start() was called once: a stop() before it warns
    bool warned_stop_without_start_ = false;  // ... once
    bool in_callback_ = false;
    bool device_requested_ = false;  // the open session asked for device activity
    bool device_started_ = false;    // ... and the device collector started
    bool execution_trace_window_ = false;  // the open session records for the execution trace observer
    std::optional<record_function> step_annotation_;
    // The last window: its records until its events are asked for, then its events (mutable: built by
    // the const queries, under the lock).
    mutable std::optional<record_store> window_records_;
    mutable event_list window_events_;
    mutable bool window_lost_ = false;  // its events could not be built and its records are gone
    mutable std::string window_lost_reason_;
    std::uint64_t window_first_id_ = 0;
    event_list all_events_;
    mutable profiler_stats window_stats_;
    std::unique_ptr<flight_session> flight_;    // while a flight recorder records
    std::vector<flight_dump> triggered_dumps_;  // what its triggers wrote
    mutable std::optional<flight_window_summary> window_flight_;  // the last window was a flight recorder's
    std::unique_ptr<streaming_session> stream_;  // while a streamed window records
    bool streamed_window_ = false;                 // the last window was streamed: nothing kept
    std::vector<std::pair<std::string, std::string>> metadata_;
    // Ids start at 1, as torch's record-function handles do: 0 means "no op" in a trace's External id.
    std::uint64_t next_id_ = 1;
};

profiler_core::profiler_core(profiler_settings settings, const profiler_traits& traits, void* owner,
                             void (*on_trace_ready)(void* owner))
    : state_(std::make_unique<profiler_state>(std::move(settings), traits, owner, on_trace_ready)) {}

profiler_core::~profiler_core() { state_->close(); }

void profiler_core::start() { state_->start(); }
void profiler_core::stop() { state_->stop(); }
void profiler_core::step() { state_->step(); }
std::vector<flight_dump> profiler_core::triggered_dumps() const { return state_->triggered_dumps(); }
flight_dump profiler_core::dump(const std::string& path) { return state_->dump(path); }
std::int64_t profiler_core::step_num() const noexcept { return state_->step_num(); }
profiler_action profiler_core::current_action() const noexcept { return state_->current_action(); }
bool profiler_core::is_running() const noexcept { return state_->is_running(); }
const event_list& profiler_core::events() const { return state_->events(); }
averaged_event_list profiler_core::key_averages(const key_averages_options& options) const {
    return state_->key_averages(options);
}
double profiler_core::self_cpu_time_total() const { return state_->self_cpu_time_total(); }
profiler_stats profiler_core::stats() const { return state_->stats(); }
void profiler_core::export_chrome_trace(const std::string& path) const { state_->export_chrome_trace(path); }
void profiler_core::export_perfetto_trace(const std::string& path, perfetto_writer_fn writer) const {
    state_->export_perfetto_trace(path, writer);
}
void profiler_core::export_memory_timeline(const std::string& path, device where, memory_timeline_fn writer) const {
    state_->export_memory_timeline(path, where, writer);
}
void profiler_core::add_metadata(std::string_view key, std::string_view value) { state_->add_metadata(key, value); }
void profiler_core::add_metadata_json(std::string_view key, std::string_view json, json_validator_fn validate) {
    state_->add_metadata_json(key, json, validate);
}
void profiler_core::export_stacks(const std::string& path, std::string_view metric, stack_frames frames,
                                  stacks_writer_fn writer) const {
    state_->export_stacks(path, metric, frames, writer);
}

}  // namespace STINT_DETAIL_BUILD_NAMESPACE
}  // namespace stint::detail
