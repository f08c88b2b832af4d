#pragma once
// stint::profiler: recording sessions driven by start()/stop() or by a step schedule (torch.profiler
// .profile's start/step/stop), their results, and what their traces carry besides events.

#include <cstddef>      // std::size_t
#include <cstdint>      // std::int64_t
#include <functional>   // std::function
#include <optional>     // std::optional
#include <ostream>      // std::ostream
#include <string>       // std::string
#include <string_view>  // std::string_view
#include <utility>      // std::move
#include <vector>       // std::vector

#include <fmt/core.h>  // fmt::formatter, fmt::formatter<std::string_view>

#include "stint/analysis/detail/call_stacks.hpp"        // with_stack's builder, named by the config
#include "stint/analysis/detail/module_hierarchy.hpp"   // with_modules's
#include "stint/drain/device_join.hpp"                  // a device backend's join
#include "stint/analysis/event_list.hpp"
#include "stint/analysis/key_averages.hpp"
#include "stint/analysis/table.hpp"
#include "stint/config.hpp"
#include "stint/detail/separate_compilation.hpp"
#include "stint/device/device_link.hpp"
#include "stint/drain/profiler_stats.hpp"
#include "stint/export/collapsed_stacks.hpp"
#include "stint/export/json_validate.hpp"
#include "stint/export/memory_timeline.hpp"
#include "stint/export/perfetto_trace_info.hpp"
#include "stint/policies.hpp"
#include "stint/common/activities.hpp"
#include "stint/profiler/execution_trace_observer.hpp"
#include "stint/profiler/flight_recorder_options.hpp"
#include "stint/export/stream_target.hpp"
#include "stint/profiler/profiler_core.hpp"
#include "stint/schedule.hpp"

namespace stint {
// The build namespace (detail/separate_compilation.hpp): a program that mixes header-only files with
// separately compiled ones fails to link where they share a profiler.
inline namespace STINT_DETAIL_BUILD_NAMESPACE {

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
    stream_target stream_to{};
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
    using config_type = Config;
    using options_type = profiler_options<Config>;

    /// A profiler destroyed while recording stops first (a window in progress is delivered to
    /// on_trace_ready), then leaves the step tracker. What stop() throws here becomes a warning. Under
    /// STINT_TRACE_ON_EXIT=path, the unfinished session's trace is also written to `path`.
    explicit profiler(options_type options = {})
        : on_trace_ready_(std::move(options.on_trace_ready)),
          core_(settings_of(std::move(options)), traits(), this, on_trace_ready_ ? &call_on_trace_ready : nullptr) {
        STINT_DETAIL_REQUIRE_COMPILED_SESSION_SIDE();
    }
    profiler(const profiler&) = delete;
    profiler& operator=(const profiler&) = delete;
    /// A profiler destroyed while recording stops first (a window in progress is delivered to
    /// on_trace_ready), then leaves the step tracker. What stop() throws here becomes a warning. Under
    /// STINT_TRACE_ON_EXIT=path, the unfinished session's trace is also written to `path`.
    ~profiler() = default;

    /// Starts profiling: without a schedule, recording begins; with one, the current step's action
    /// takes effect (torch's start()). Throws std::logic_error if this profiler already started, or
    /// when it must record while another profiler records.
    void start() { core_.start(); }

    /// Stops profiling: a window being recorded is drained and delivered to on_trace_ready (a
    /// partial one too); a warmup in progress is dropped. Stopping a stopped profiler does nothing.
    void stop() { core_.stop(); }

    /// Ends the current step and begins the next (torch's step()): the schedule's next action takes
    /// effect (a window may be saved and on_trace_ready called), the global step of
    /// `stint::step_tracker` advances, and the new step's `ProfilerStep#N` annotation opens. Works
    /// whether or not start() was called. When on_trace_ready throws, the step still completes
    /// (the next window opens on schedule) and the exception then propagates.
    void step() { core_.step(); }

    /// The dumps a flight recorder's triggers wrote (slow steps, hangs), oldest first.
    [[nodiscard]] std::vector<flight_dump> triggered_dumps() const { return core_.triggered_dumps(); }

    /// A flight recorder's window, written now while recording continues: the trace (Chrome JSON for
    /// ".json" or ".json.gz", Perfetto for ".pftrace") and the key_averages table beside it (the path's
    /// ending replaced by ".txt"), each saying how many records every thread had overwritten and from
    /// when it is complete. Callable from any thread. Throws std::logic_error unless a flight recorder
    /// records, std::invalid_argument for another ending, std::system_error when a file cannot be written.
    ///
    ///     stint::flight_dump d = prof.dump("dumps/now.pt.trace.json");   // and dumps/now.pt.trace.txt
    flight_dump dump(const std::string& path) { return core_.dump(path); }

    /// The profiler's step number: 0 at construction, +1 per step() (torch's step_num).
    [[nodiscard]] std::int64_t step_num() const noexcept { return core_.step_num(); }

    /// What the current step does (always RECORD without a schedule).
    [[nodiscard]] profiler_action current_action() const noexcept { return core_.current_action(); }

    /// Whether this profiler's session is recording now (a record step, or between start and stop
    /// without a schedule).
    [[nodiscard]] bool is_running() const noexcept { return core_.is_running(); }

    /// The events of the last saved window, or of every window with `accumulate_events` (torch's
    /// `prof.events()`). Without a schedule, reading while recording is an error.
    ///
    ///     for (const stint::event& e : prof.events()) fmt::print("{}\n", e.name);
    [[nodiscard]] const event_list& events() const { return core_.events(); }

    /// events() grouped by name (and by shapes or stack frames when asked), as torch's
    /// `prof.key_averages()`; every `ProfilerStep#N` joins one `ProfilerStep*` row.
    ///
    ///     std::cout << prof.key_averages().table({.sort_by = "self_cpu_time_total", .row_limit = 10});
    [[nodiscard]] averaged_event_list key_averages(key_averages_options options = {}) const {
        return core_.key_averages(options);
    }

    /// Sum of every event's self time in events(), in microseconds (torch's
    /// `prof.self_cpu_time_total`).
    [[nodiscard]] double self_cpu_time_total() const { return core_.self_cpu_time_total(); }

    /// The profiler's own timings and the record accounting (kept, dropped) of the last window.
    [[nodiscard]] profiler_stats stats() const { return core_.stats(); }

    /// Writes the last window as Chrome/Perfetto trace JSON (gzip if `path` ends in ".gz"), with the
    /// metadata added so far and, in a distributed job, "distributedInfo".
    ///
    ///     prof.export_chrome_trace("run.pt.trace.json.gz");
    void export_chrome_trace(const std::string& path) const { core_.export_chrome_trace(path); }

    /// Writes the last window as Perfetto's native protobuf trace (gzip if `path` ends in ".gz"):
    /// thread tracks, interned names, stint's counts on a "stint stats" instant and a counter track.
    /// About a fifth of the JSON's size; ui.perfetto.dev and trace_processor open it.
    ///
    ///     prof.export_perfetto_trace("run.pftrace");
    void export_perfetto_trace(const std::string& path) const {
        core_.export_perfetto_trace(path, &detail::write_perfetto_trace_file);
    }

    /// Writes the last window's live memory of `device` (the CPU unless said) over time, as torch's
    /// export_memory_timeline: `.json` / `.json.gz` in torch's `[times, sizes]` shape, or `.html`, a
    /// self-contained plot with the peak and the op that was running then. Needs profile_memory.
    ///
    ///     prof.export_memory_timeline("memory.html");
    ///     prof.export_memory_timeline("gpu0.json.gz", {stint::device_type::cuda, 0});
    void export_memory_timeline(const std::string& path, stint::device device = {}) const {
        static_assert(Config::template has<profile_memory>,
                      "stint: export_memory_timeline() needs memory events. Fix: add stint::profile_memory to the "
                      "profiler's config");
        core_.export_memory_timeline(path, device, &stint::export_memory_timeline);
    }

    /// Adds `"key": "value"` at the top level of every trace this profiler exports from now on; a key
    /// added again takes the new value. Keys the trace format uses ("traceEvents", ...) are refused
    /// with std::invalid_argument.
    ///
    ///     prof.add_metadata("run", "baseline");    // "run": "baseline"
    void add_metadata(std::string_view key, std::string_view value) { core_.add_metadata(key, value); }

    /// Adds `"key": <json>` at the top level of every trace this profiler exports from now on. Text
    /// that is not exactly one valid JSON value (RFC 8259, nesting at most 512 deep, no number past a
    /// double's range) is refused with std::invalid_argument, and never written.
    ///
    ///     prof.add_metadata_json("layers", "[1, 2, 3]");   // "layers": [1, 2, 3]
    void add_metadata_json(std::string_view key, std::string_view json) {
        core_.add_metadata_json(key, json, &detail::validate_json);
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
        static_assert(Config::template has<with_stack<>>,
                      "stint: export_stacks() needs stacks. Fix: add stint::with_stack<> to the profiler's config, "
                      "e.g. stint::profiler<stint::config<stint::with_stack<>>>.");
        core_.export_stacks(path, metric, frames, &detail::write_collapsed_stacks_file);
    }

private:
    /// What the config decides, for the core.
    static detail::profiler_traits traits() noexcept {
        detail::profiler_traits t;
        t.enabled = Config::enabled;
        if constexpr (Config::template has<with_stack<>>) t.call_stacks = &detail::assign_call_stacks;
        if constexpr (Config::template has<with_modules>) t.module_hierarchy = &detail::assign_module_hierarchy;
        t.has_memory = Config::template has<profile_memory>;
        t.has_shapes = Config::template has<record_shapes>;
        if constexpr (detail::has_device_backend<Config>) {
            using backend = detail::device_backend_t<Config>;
            t.has_device = true;
            t.device_start = &backend::start;
            t.device_stop = &backend::stop;
            t.device_unavailable = &backend::unavailable;
            t.join_device = &detail::join_device_activity;
        }
        return t;
    }

    static detail::profiler_settings settings_of(options_type&& o) {
        return {.schedule = std::move(o.schedule),
                .accumulate_events = o.accumulate_events,
                .enabled = o.enabled,
                .buffer_budget_bytes = o.buffer_budget_bytes,
                .reserve_buffer_bytes = o.reserve_buffer_bytes,
                .activities = o.activities,
                .sync_device_on_stop = o.sync_device_on_stop,
                .device_buffer_budget_bytes = o.device_buffer_budget_bytes,
                .enable_cuda_sync_events = o.enable_cuda_sync_events,
                .teardown_cupti_on_stop = o.teardown_cupti_on_stop,
                .execution_trace_observer = o.execution_trace_observer,
                .stream_to = std::move(o.stream_to),
                .flight_recorder = std::move(o.flight_recorder)};
    }

    static void call_on_trace_ready(void* self) {
        auto& prof = *static_cast<profiler*>(self);
        prof.on_trace_ready_(prof);
    }

    std::function<void(profiler&)> on_trace_ready_;  // before core_: alive while the core closes
    detail::profiler_core core_;
};

}  // namespace STINT_DETAIL_BUILD_NAMESPACE

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
