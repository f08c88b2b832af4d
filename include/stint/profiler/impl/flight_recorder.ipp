#pragma once
// The bodies of profiler/flight_recorder.hpp: the slow-step detector, a dump's window and files, the hang watchdog.
#include "stint/profiler/flight_recorder.hpp"

#include <algorithm>     // std::find_if, std::max, std::nth_element
#include <climits>       // INT64_MIN
#include <exception>     // std::exception
#include <iterator>      // std::back_inserter
#include <stdexcept>     // std::invalid_argument, std::logic_error
#include <string_view>   // std::string_view
#include <system_error>  // std::system_error
#include <utility>       // std::move

#include <fmt/format.h>  // fmt::format, fmt::format_to, fmt::memory_buffer, fmt::to_string

#include "stint/analysis/key_averages.hpp"
#include "stint/detail/platform.hpp"
#include "stint/export/json_writer.hpp"
#include "stint/export/output_file.hpp"
#include "stint/export/trace_time.hpp"
#include "stint/common/warning.hpp"
#include "stint/recording/clock.hpp"
#include "stint/recording/open_scopes.hpp"
#include "stint/recording/registry.hpp"
#include "stint/recording/ticks.hpp"

namespace stint::detail {

slow_step_detector::slow_step_detector(double factor, std::int64_t min_ns, std::int64_t interval_ns)
    : factor_(factor), min_ns_(min_ns), interval_ns_(interval_ns) {
    durations_.reserve(window);
    scratch_.reserve(window);
}

bool slow_step_detector::observe(std::int64_t duration_ns, std::int64_t now_ns) {
    bool fire = false;
    if (factor_ > 0 && durations_.size() >= min_steps && duration_ns >= min_ns_ &&
        static_cast<double>(duration_ns) > factor_ * static_cast<double>(median_ns()) &&
        (!last_fired_ns_ || now_ns - *last_fired_ns_ >= interval_ns_)) {
        fire = true;
        last_fired_ns_ = now_ns;
    }
    if (durations_.size() < window) {
        durations_.push_back(duration_ns);
    } else {
        durations_[next_] = duration_ns;
        next_ = (next_ + 1) % window;
    }
    return fire;
}

std::int64_t slow_step_detector::median_ns() {
    if (durations_.empty()) return 0;
    scratch_.assign(durations_.begin(), durations_.end());
    const auto middle = scratch_.begin() + static_cast<std::ptrdiff_t>(scratch_.size() / 2);
    std::nth_element(scratch_.begin(), middle, scratch_.end());
    return *middle;
}

void flight_mode::check_options(const flight_recorder_options& options, bool schedule, bool stream,
                                bool accumulate_events, bool execution_trace) {
    const auto refuse = [](std::string_view why) {
        throw std::invalid_argument(
            fmt::format("stint: profiler_options::flight_recorder records one ring from start() to stop(); {}", why));
    };
    if (schedule) refuse("it takes no schedule (dump() and its triggers write windows)");
    if (stream) refuse("it keeps the last records in memory, which stream_to writes away");
    if (accumulate_events) refuse("accumulate_events keeps every window, which a ring does not");
    if (execution_trace) refuse("an execution trace needs every op, which a ring overwrites");
    const slow_step_trigger& slow = options.slow_step;
    if (slow.factor < 0 || (slow.factor > 0 && slow.factor <= 1)) {
        throw std::invalid_argument(fmt::format(
            "stint: flight_recorder.slow_step.factor = {}: a slow step takes more than factor x the median; "
            "give a factor above 1 (or 0: off)", slow.factor));
    }
    if (!dump_format_of(options.dump_extension)) {
        throw std::invalid_argument(fmt::format("stint: flight_recorder.dump_extension \"{}\": give .pt.trace.json, "
                                                ".pt.trace.json.gz or .pftrace",
                                                options.dump_extension));
    }
}

const flight_recorder_code& flight_recorder_code_table() noexcept {
    static constexpr flight_recorder_code table{
        .check_options = &flight_mode::check_options,
        .open = [](const flight_recorder_options& options, session& ring, std::size_t reserve_bytes, bool memory,
                   bool shapes, std::int64_t step, flight_host& host) -> flight_mode* {
            return new flight_mode(options, ring, reserve_bytes, memory, shapes, step, host);
        },
        .observe_step = [](flight_mode& mode, std::int64_t step_num) { return mode.observe_step(step_num); },
        .dump = [](flight_mode& mode, const std::string& path) { return mode.dump(path); },
        .dump_hang = [](flight_mode& mode, std::int64_t step, std::int64_t silent_ns) {
            return mode.dump_hang(step, silent_ns);
        },
        .finish = [](flight_mode& mode) noexcept { mode.finish(); },
        .summary = [](const flight_mode& mode, const record_store& records) { return mode.summary(records); },
        .destroy = [](flight_mode* mode) noexcept { delete mode; }};
    return table;
}

flight_mode::flight_mode(const flight_recorder_options& options, session& ring, std::size_t reserve_bytes, bool memory,
                         bool shapes, std::int64_t step, flight_host& host)
    : options_(options),
      ring_(ring),
      host_(host),
      detector_(options.slow_step.factor, options.slow_step.min_duration.count(), options.slow_step.interval.count()),
      last_step_ns_(0), last_step_ticks_(0) {
    const std::size_t threads = std::max<std::size_t>(the_registry().live_threads(), 1);
    const std::size_t minimum = threads * chunk::total_bytes;
    if (options.budget_bytes < minimum) {
        throw std::invalid_argument(fmt::format(
            "stint: flight_recorder.budget_bytes = {} is too small: the ring needs one {} KiB chunk for each "
            "of the {} threads that record, at least {} bytes",
            options.budget_bytes, chunk::total_bytes / 1024, threads, minimum));
    }
    if (options.slow_step.factor > 0 || options.hang_timeout.count() > 0) check_dump_dir(options.dump_dir);
    ring.prepare(options.budget_bytes, reserve_bytes);
    const double ns_per_tick = ring.calibration().ns_per_tick;
    const auto span_ns = static_cast<double>(options.span.count());
    const ring_options ring_shape{
        .on = true, .span_ticks = span_ns > 0 ? static_cast<std::uint64_t>(span_ns / ns_per_tick) : 0};
    // Asked before the ring opens: each thread that records in it gets its signal stack at its first
    // record (recording/signal_stack.hpp). The dump itself needs the session's clock: installed after.
    // This recorder's request, held with its crash dump (finish() takes it back), or taken back here.
    const bool crash_dump_asked = !options.crash_dump_path.empty();
    if (crash_dump_asked) the_registry().want_signal_stacks(true);
    try {
        ring.open(options.budget_bytes, reserve_bytes, true, memory, {.outputs = shapes, .tensor_identities = false},
                  false, ring_shape);
    } catch (...) {
        if (crash_dump_asked) the_registry().want_signal_stacks(false);
        throw;
    }
    if (crash_dump_asked) {
        try {
            crash_dump::install(options.crash_dump_path, ring.calibration());
        } catch (...) {
            the_registry().want_signal_stacks(false);
            record_store discarded;  // refused at start: the session closes unrecorded
            (void)ring.close_records(discarded);
            throw;
        }
        crash_dump_installed_ = true;
    }
    last_step_ns_ = steady_now_ns();
    last_step_ticks_ = read_ticks();
    if (options.hang_timeout.count() > 0) {
        try {
            watchdog_ = std::make_unique<hang_watchdog>(
                options.hang_timeout, step,
                [this](std::int64_t hung_step, std::int64_t silent_ns, const std::atomic<bool>& stopping) {
                    host_.on_hang(hung_step, silent_ns, stopping);
                });
        } catch (...) {
            finish();  // no destructor runs for a constructor that throws: the crash dump goes now
            throw;
        }
    }
}

flight_mode::~flight_mode() { finish(); }

std::optional<flight_dump> flight_mode::observe_step(std::int64_t step_num) {
    const std::uint64_t now_ticks = read_ticks();
    const std::int64_t now_ns = steady_now_ns();
    const std::int64_t duration = now_ns - last_step_ns_;
    const std::uint64_t began = last_step_ticks_;
    last_step_ns_ = now_ns;
    last_step_ticks_ = now_ticks;
    if (watchdog_) watchdog_->note_step(step_num);
    begins_.push_back(began);
    while (begins_.size() > std::max<std::size_t>(options_.slow_step.steps, 1)) begins_.pop_front();
    if (!detector_.observe(duration, now_ns)) return std::nullopt;
    const std::int64_t step = step_num - 1;  // the step that just ended
    const std::int64_t median = detector_.median_ns();
    dump_request request{
        .path = fmt::format("{}{}slow_step_{}{}", options_.dump_dir, options_.dump_dir.empty() ? "" : "/", step,
                            options_.dump_extension),
        .from_ticks = begins_.front(),
        .trigger = "slow step",
        .why = fmt::format("step {} took {:.3f} ms, {:.1f} x the median {:.3f} ms", step,
                           static_cast<double>(duration) / 1e6,
                           static_cast<double>(duration) / static_cast<double>(std::max<std::int64_t>(median, 1)),
                           static_cast<double>(median) / 1e6),
        .open_scopes = {}};
    std::optional<flight_dump> written;
    try {
        written = write(std::move(request));
    } catch (const std::exception& e) {
        // The program's step must not fail for a dump: say it instead.
        warn(fmt::format("flight recorder: the slow step's dump failed: {}", e.what()));
    }
    // The step begins now: the dump's time is no step's.
    last_step_ns_ = steady_now_ns();
    last_step_ticks_ = read_ticks();
    if (watchdog_) watchdog_->note_step(step_num);
    return written;
}

flight_dump flight_mode::dump(const std::string& path) {
    return write({.path = path, .from_ticks = 0, .trigger = "request", .why = {}, .open_scopes = {}});
}

flight_dump flight_mode::dump_hang(std::int64_t step, std::int64_t silent_ns) {
    const tick_calibration& clock = ring_.calibration();
    dump_request request{.path = fmt::format("{}{}hang_step_{}{}", options_.dump_dir,
                                             options_.dump_dir.empty() ? "" : "/", step, options_.dump_extension),
                         .from_ticks = 0,
                         .trigger = "hang",
                         .why = fmt::format("no step() for {:.3f} ms during step {}",
                                            static_cast<double>(silent_ns) / 1e6, step),
                         .open_scopes = {}};
    // Every thread's open scopes (the step's annotation among them), as the threads noted them.
    std::uint64_t not_kept = 0;
    for (const registry::open_scope& o : the_registry().open_scopes(clock.anchor.ticks, not_kept)) {
        request.open_scopes.push_back({o.os_tid, o.thread_name.empty() ? fmt::format("thread {}", o.os_tid) : o.thread_name,
                                        o.name, clock.to_ns_since_anchor(o.begin_ticks), o.depth});
    }
    if (not_kept != 0) {
        request.why += fmt::format("; {} open scopes deeper than {} not kept", not_kept, open_scope_stack::capacity);
    }
    return write(std::move(request));
}

flight_dump flight_mode::write(dump_request request) {
    record_store records;
    if (!ring_.copy_records(records, request.from_ticks)) {
        throw std::logic_error("stint: dump(): the flight recorder is not recording; call start() first");
    }
    flight_window window = flight_window::of(records, request.from_ticks, std::move(request.trigger));
    window.detail = std::move(request.why);
    window.open_scopes = std::move(request.open_scopes);
    event_list events;
    std::uint64_t truncated_names = 0;
    host_.build_events(records, events, truncated_names);
    if (!window.open_scopes.empty()) window.note_last_records(events);
    return write_flight_dump(request.path, events, host_.trace_info(truncated_names), window);
}

flight_window_summary flight_mode::summary(const record_store& records) const {
    const flight_window window = flight_window::of(records, 0, "stop");
    return {window.json(), window.perfetto_info(0, 0)};
}

void flight_mode::finish() noexcept {
    watchdog_.reset();  // joined before the drain: a hang's dump reads the ring
    if (!std::exchange(crash_dump_installed_, false)) return;
    try {
        for (const std::string& line : crash_dump::overridden()) {
            warn(fmt::format("flight recorder: {}; a crash during the session would have left no dump", line));
        }
    } catch (...) {
        // Out of memory while saying so: the dump is uninstalled all the same.
    }
    crash_dump::uninstall();
    the_registry().want_signal_stacks(false);  // this recorder's request (the constructor's)
}

void flight_window::note_last_records(const event_list& events) {
    for (const event& e : events) {
        if (e.kind == event_kind::overhead || e.on_device()) continue;
        const std::uint64_t tid = events.threads()[e.thread].os_tid;
        auto same = std::find_if(last_records.begin(), last_records.end(),
                                 [&](const last_seen& l) { return l.os_tid == tid; });
        if (same == last_records.end()) same = last_records.insert(last_records.end(), last_seen{tid, {}, INT64_MIN});
        if (e.end_ns >= same->end_ns) {
            same->end_ns = e.end_ns;
            same->name = e.name;
        }
    }
}

flight_window flight_window::of(const record_store& store, std::uint64_t from_ticks, std::string trigger) {
    flight_window w;
    w.trigger = std::move(trigger);
    const tick_calibration& clock = store.calibration;
    w.from_ns = from_ticks == 0 ? 0 : clock.to_ns_since_anchor(from_ticks);
    w.to_ns = clock.to_ns_since_anchor(store.stop_ticks);
    for (const record_store::thread_records& t : store.threads()) {
        w.overwritten += t.counts.overwritten;
        // Buffers of one OS thread (one per shared object) are one thread in the trace.
        auto same = std::find_if(w.threads.begin(), w.threads.end(),
                                 [&](const thread& e) { return e.os_tid == t.counts.os_tid; });
        if (same == w.threads.end()) {
            same = w.threads.insert(w.threads.end(), thread{t.counts.os_tid, t.counts.name, 0, w.from_ns});
        }
        same->overwritten += t.counts.overwritten;
        if (t.counts.overwritten_until != 0 && t.counts.overwritten_until > from_ticks) {
            same->complete_from_ns =
                std::max(same->complete_from_ns, clock.to_ns_since_anchor(t.counts.overwritten_until));
        }
    }
    return w;
}

std::string flight_window::json() const {
    fmt::memory_buffer out;
    fmt::format_to(std::back_inserter(out), "{{\"trigger\": ");
    append_json_string(out, trigger);
    fmt::format_to(std::back_inserter(out), ", \"detail\": ");
    append_json_string(out, detail);
    fmt::format_to(std::back_inserter(out), ", \"from_us\": {}, \"to_us\": {}, \"overwritten\": {}, \"threads\": [",
                   trace_microseconds(from_ns), trace_microseconds(to_ns), overwritten);
    for (std::size_t i = 0; i < threads.size(); ++i) {
        fmt::format_to(std::back_inserter(out), "{}{{\"tid\": {}, \"name\": ", i == 0 ? "" : ", ",
                       threads[i].os_tid);
        append_json_string(out, threads[i].name);
        fmt::format_to(std::back_inserter(out), ", \"overwritten\": {}, \"complete_from_us\": {}}}",
                       threads[i].overwritten, trace_microseconds(threads[i].complete_from_ns));
    }
    fmt::format_to(std::back_inserter(out), "], \"open_scopes\": [");
    for (std::size_t i = 0; i < open_scopes.size(); ++i) {
        fmt::format_to(std::back_inserter(out), "{}{{\"tid\": {}, \"thread\": ", i == 0 ? "" : ", ",
                       open_scopes[i].os_tid);
        append_json_string(out, open_scopes[i].thread_name);
        fmt::format_to(std::back_inserter(out), ", \"name\": ");
        append_json_string(out, open_scopes[i].name);
        fmt::format_to(std::back_inserter(out), ", \"start_us\": {}, \"depth\": {}, \"still_open\": true}}",
                       trace_microseconds(open_scopes[i].start_ns), open_scopes[i].depth);
    }
    fmt::format_to(std::back_inserter(out), "], \"last_seen\": [");
    for (std::size_t i = 0; i < last_records.size(); ++i) {
        fmt::format_to(std::back_inserter(out), "{}{{\"tid\": {}, \"name\": ", i == 0 ? "" : ", ",
                       last_records[i].os_tid);
        append_json_string(out, last_records[i].name);
        fmt::format_to(std::back_inserter(out), ", \"end_us\": {}}}", trace_microseconds(last_records[i].end_ns));
    }
    fmt::format_to(std::back_inserter(out), "]}}");
    return fmt::to_string(out);
}

std::string flight_window::text() const {
    std::string out = fmt::format("stint flight recorder dump ({}{}{}): {:.3f} ms to {:.3f} ms of the session; "
                                  "{} records overwritten before it\n",
                                  trigger, detail.empty() ? "" : ": ", detail, static_cast<double>(from_ns) / 1e6,
                                  static_cast<double>(to_ns) / 1e6, overwritten);
    for (const thread& t : threads) {
        out += fmt::format("  thread {} ({}): complete from {:.3f} ms, {} records overwritten\n", t.os_tid,
                           t.name, static_cast<double>(t.complete_from_ns) / 1e6, t.overwritten);
    }
    for (const open_scope& o : open_scopes) {
        out += fmt::format("  still open on thread {} ({}): {:{}}{} since {:.3f} ms\n", o.os_tid, o.thread_name, "",
                           2 * o.depth, o.name, static_cast<double>(o.start_ns) / 1e6);
    }
    for (const last_seen& l : last_records) {
        out += fmt::format("  thread {} last seen: {} ended at {:.3f} ms\n", l.os_tid, l.name,
                           static_cast<double>(l.end_ns) / 1e6);
    }
    return out;
}

perfetto_trace_info flight_window::perfetto_info(std::uint64_t pid, std::uint64_t truncated_names) const {
    perfetto_trace_info info;
    info.pid = pid;
    info.truncated_names = truncated_names;
    info.overwritten = overwritten;
    for (const thread& t : threads) info.overwritten_threads.push_back({t.os_tid, t.overwritten, t.complete_from_ns});
    return info;
}

hang_watchdog::hang_watchdog(std::chrono::nanoseconds timeout, std::int64_t step, callback on_hang)
    : timeout_ns_(timeout.count()), on_hang_(std::move(on_hang)) {
    note_step(step);
    thread_ = std::thread([this] { run(); });
}

hang_watchdog::~hang_watchdog() {
    {
        const std::lock_guard lock(mutex_);  // the loop is waiting, or checks stopping_ before it waits
        stopping_.store(true, std::memory_order_relaxed);
    }
    wake_.notify_one();
    thread_.join();
}

void hang_watchdog::note_step(std::int64_t step) noexcept {
    last_step_ns_.store(steady_now_ns(), std::memory_order_relaxed);
    step_.store(step, std::memory_order_relaxed);
}

void hang_watchdog::run() {
    name_this_thread("stint watchdog");
    std::int64_t fired_for = -1;
    std::unique_lock lock(mutex_);
    while (!stopping_.load(std::memory_order_relaxed)) {
        wake_.wait_for(lock, std::chrono::nanoseconds(std::max<std::int64_t>(timeout_ns_ / 4, 1'000'000)));
        if (stopping_.load(std::memory_order_relaxed)) break;
        const std::int64_t step = step_.load(std::memory_order_relaxed);
        const std::int64_t silent = steady_now_ns() - last_step_ns_.load(std::memory_order_relaxed);
        if (silent < timeout_ns_ || step == fired_for) continue;
        fired_for = step;
        lock.unlock();
        try {
            on_hang_(step, silent, stopping_);
        } catch (const std::exception& e) {
            warn(fmt::format("flight recorder: the hang's dump failed: {}", e.what()));
        } catch (...) {
            warn("flight recorder: the hang's dump failed");
        }
        lock.lock();
    }
}

std::string table_path_for(std::string_view path) {
    for (std::string_view ending : {".json.gz", ".json", ".pftrace", ".perfetto-trace"}) {
        if (path.ends_with(ending)) return std::string(path.substr(0, path.size() - ending.size())) + ".txt";
    }
    return std::string(path) + ".txt";
}

void check_dump_dir(const std::string& dir) {
    const std::string probe = (dir.empty() ? std::string(".") : dir) + "/.stint-flight-recorder-probe";
    try {
        output_file file(probe);  // a temporary beside `probe`, removed unless committed
    } catch (const std::system_error& e) {
        throw std::system_error(e.code(), fmt::format("stint: flight_recorder.dump_dir \"{}\" cannot be written", dir));
    }
}

flight_dump write_flight_dump(const std::string& path, const event_list& events, chrome_trace_info info,
                              const flight_window& window) {
    flight_dump result{path, table_path_for(path), events.size(), window.overwritten};
    // Both files or neither: each is written beside its place and finished (synced, closed) before
    // either is renamed into place, so a failure keeps the previous trace and table together.
    output_file table(result.table_path, 1, "flight recorder table");
    output_file trace(path);
    if (dump_format_of(path) == dump_format::perfetto) {
        write_perfetto_trace(trace, events, window.perfetto_info(info.pid, info.truncated_names));
    } else {
        info.metadata_json.emplace_back("flightRecorder", window.json());
        write_chrome_trace(trace, events, info);
    }
    table.write(window.text());
    table.write(key_averages(events).table());
    table.finish();
    trace.finish();
    trace.commit();
    table.commit();
    return result;
}

}  // namespace stint::detail
