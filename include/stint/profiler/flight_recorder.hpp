#pragma once
// The flight recorder (design §7 "Flight recorder"): a session that records all the time into a bounded
// ring and writes the window it holds when asked, when a step runs slow, or when the program hangs.
// Here: its options, the slow-step detector, and a dump's files (a trace chosen by the path's
// extension, the key_averages table beside it, and what was overwritten, shown in both).

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>
#include <stdexcept>
#include <string>
#include <mutex>
#include <string_view>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "stint/analysis/event_list.hpp"
#include "stint/analysis/key_averages.hpp"
#include "stint/drain/record_store.hpp"
#include "stint/export/chrome_trace.hpp"
#include "stint/export/json_writer.hpp"
#include "stint/export/output_file.hpp"
#include "stint/export/perfetto_trace.hpp"
#include "stint/recording/clock.hpp"
#include "stint/recording/ticks.hpp"
#include "stint/detail/export_macros.hpp"
#include "stint/detail/platform.hpp"
#include "stint/profiler/warning.hpp"

namespace stint {

/// When a step runs slow, dump the steps before it: a step that takes more than `factor` times the
/// running median of the steps before it (and at least `min_duration`) writes the last `steps` steps,
/// at most once per `interval`, so a program that slows down for good writes one file, not one per step.
struct slow_step_trigger {
    double factor = 0;  ///< 0: off
    std::chrono::nanoseconds min_duration{std::chrono::milliseconds{1}};
    std::size_t steps = 10;  ///< the slow step included
    std::chrono::nanoseconds interval{std::chrono::seconds{60}};
};

/// A profiler that records all the time into a bounded amount of memory (profiler_options::flight_recorder):
/// each thread overwrites its own oldest records once the budget is spent (or, with `span`, once they
/// ended that long ago), so recording never stops and never grows. `dump(path)` writes what it holds.
///
///     stint::profiler<> prof({.flight_recorder = stint::flight_recorder_options{
///         .budget_bytes = 64 << 20, .dump_dir = "dumps", .slow_step = {.factor = 3}}});
///     prof.start();   // then prof.step() per iteration; prof.dump("now.pt.trace.json") at any time
struct flight_recorder_options {
    /// Bytes of record buffers over all threads (at least one 64 KiB chunk per recording thread).
    std::size_t budget_bytes = std::size_t{256} << 20;
    /// Also overwrite a thread's records once they ended this long ago (0: keep what the budget holds).
    std::chrono::nanoseconds span{0};
    /// Where triggered dumps go, checked writable at start(); empty: the current directory.
    std::string dump_dir{};
    /// The triggered dumps' trace format: ".pt.trace.json", ".pt.trace.json.gz" or ".pftrace".
    std::string dump_extension = ".pt.trace.json";
    slow_step_trigger slow_step{};
    /// A thread of stint's dumps the whole ring when no step() came for this long (0: off), once per
    /// step, to hang_step_<n> in dump_dir, with the step still open and each thread's last record.
    std::chrono::nanoseconds hang_timeout{0};
    /// On SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT and std::terminate, the raw records and their sites
    /// are written here (checked writable at start()), then the previous handler runs; empty: off.
    /// tools/stint-crashdump turns the file into a trace.
    std::string crash_dump_path{};
};

/// What a flight recorder's dump wrote.
struct flight_dump {
    std::string path;             ///< the trace
    std::string table_path;       ///< the key_averages table beside it
    std::uint64_t events = 0;     ///< events in the trace
    std::uint64_t overwritten = 0;  ///< records overwritten before the window, over all threads
};

}  // namespace stint

namespace stint::detail {

template <class = void>
class basic_slow_step_detector;
/// basic_slow_step_detector's one form (a template only so that a file that does not use it does not compile it).
using slow_step_detector = basic_slow_step_detector<>;

/// Decides which steps are slow: more than `factor` times the median of the last `window` steps before
/// them, at least `min_ns`, and no earlier slow step within `interval_ns`. Fed durations, not clocks,
/// so that its decisions are tested exactly.
template <class Unused>
class basic_slow_step_detector {
public:
    static constexpr std::size_t window = 101;   ///< steps the median is taken over
    static constexpr std::size_t min_steps = 8;  ///< steps seen before any is called slow

    basic_slow_step_detector() = default;
    basic_slow_step_detector(double factor, std::int64_t min_ns, std::int64_t interval_ns)
        : factor_(factor), min_ns_(min_ns), interval_ns_(interval_ns) {
        durations_.reserve(window);
        scratch_.reserve(window);
    }

    /// One step of `duration_ns` that ended at `now_ns`: true when it is slow and a dump is due.
    bool observe(std::int64_t duration_ns, std::int64_t now_ns) {
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

    /// The median of the steps seen (the last `window`), 0 before any.
    [[nodiscard]] std::int64_t median_ns() {
        if (durations_.empty()) return 0;
        scratch_.assign(durations_.begin(), durations_.end());
        const auto middle = scratch_.begin() + static_cast<std::ptrdiff_t>(scratch_.size() / 2);
        std::nth_element(scratch_.begin(), middle, scratch_.end());
        return *middle;
    }

private:
    double factor_ = 0;
    std::int64_t min_ns_ = 0;
    std::int64_t interval_ns_ = 0;
    deferred_t<std::vector<std::int64_t>, Unused> durations_;
    deferred_t<std::vector<std::int64_t>, Unused> scratch_;
    std::size_t next_ = 0;
    std::optional<std::int64_t> last_fired_ns_;
};

template <class = void>
struct basic_flight_steps;
/// basic_flight_steps's one form (a template only so that a file that does not use it does not compile it).
using flight_steps = basic_flight_steps<>;

/// A flight recorder's steps while it records: when the last began, the beginnings of the last
/// `slow_step.steps`, the detector, and the dumps the trigger wrote.
template <class>
struct basic_flight_steps {
    explicit basic_flight_steps(const flight_recorder_options& options)
        : detector(options.slow_step.factor, options.slow_step.min_duration.count(),
                   options.slow_step.interval.count()),
          last_step_ns(steady_now_ns()), last_step_ticks(read_ticks()) {}
    slow_step_detector detector;
    std::int64_t last_step_ns;
    std::uint64_t last_step_ticks;
    std::deque<std::uint64_t> begins;
};

template <class = void>
struct basic_flight_window;
/// basic_flight_window's one form (a template only so that a file that does not use it does not compile it).
using flight_window = basic_flight_window<>;

/// A dump's window: why it was written, the times it spans, and what each thread lost before it.
template <class Unused>
struct basic_flight_window {
    // Named through Unused (detail/deferred.hpp): a file that never dumps does not instantiate the
    // bodies' string and formatting code.
    template <class T>
    using later = deferred_t<T, Unused>;

    struct thread {
        std::uint64_t os_tid = 0;
        std::string name;
        std::uint64_t overwritten = 0;
        /// From when the thread's records are complete (ns on the trace's clock): the latest end among
        /// its overwritten records, or the window's start. Every event that began after it is kept.
        std::int64_t complete_from_ns = 0;
    };
    later<std::string> trigger;  ///< "request", "slow step", "hang", "stop"
    std::int64_t from_ns = 0;
    std::int64_t to_ns = 0;
    std::uint64_t overwritten = 0;
    std::vector<thread> threads;
    later<std::string> detail;  ///< a line about the trigger (the slow step's time and the median)
    /// Scopes still open when the dump was written (a hang's): the program was inside them. Outermost
    /// first on each thread; `depth` is the scope's nesting depth on its thread.
    struct open_scope {
        std::uint64_t os_tid = 0;
        std::string name;
        std::int64_t start_ns = 0;
        std::uint32_t depth = 0;
    };
    std::vector<open_scope> open_scopes;
    /// Each thread's newest record in the window: where it was last seen (a hang's dump).
    struct last_seen {
        std::uint64_t os_tid = 0;
        std::string name;
        std::int64_t end_ns = 0;
    };
    std::vector<last_seen> last_records;

    /// Notes each thread's newest event of `events` as where it was last seen.
    void note_last_records(const later<event_list>& events) {
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

    /// From a store of copied (or drained) records that ended in [from_ticks, store.stop_ticks].
    static basic_flight_window of(const later<record_store>& store, std::uint64_t from_ticks, std::string trigger) {
        basic_flight_window w;
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

    /// The trace's "flightRecorder" metadata: every loss shown, per thread.
    [[nodiscard]] std::string json() const {
        later<fmt::memory_buffer> out;
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
            fmt::format_to(std::back_inserter(out), "{}{{\"tid\": {}, \"name\": ", i == 0 ? "" : ", ",
                           open_scopes[i].os_tid);
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

    /// The same as lines above the table.
    [[nodiscard]] std::string text() const {
        later<std::string> out = fmt::format("stint flight recorder dump ({}{}{}): {:.3f} ms to {:.3f} ms of the session; "
                                      "{} records overwritten before it\n",
                                      trigger, detail.empty() ? "" : ": ", detail, static_cast<double>(from_ns) / 1e6,
                                      static_cast<double>(to_ns) / 1e6, overwritten);
        for (const thread& t : threads) {
            out += fmt::format("  thread {} ({}): complete from {:.3f} ms, {} records overwritten\n", t.os_tid,
                               t.name, static_cast<double>(t.complete_from_ns) / 1e6, t.overwritten);
        }
        for (const open_scope& o : open_scopes) {
            out += fmt::format("  still open on thread {}: {:{}}{} since {:.3f} ms\n", o.os_tid, "", 2 * o.depth,
                               o.name, static_cast<double>(o.start_ns) / 1e6);
        }
        for (const last_seen& l : last_records) {
            out += fmt::format("  thread {} last seen: {} ended at {:.3f} ms\n", l.os_tid, l.name,
                               static_cast<double>(l.end_ns) / 1e6);
        }
        return out;
    }

    [[nodiscard]] perfetto_trace_info perfetto_info(std::uint64_t pid, std::uint64_t truncated_names) const {
        perfetto_trace_info info;
        info.pid = pid;
        info.truncated_names = truncated_names;
        info.overwritten = overwritten;
        for (const thread& t : threads) info.overwritten_threads.push_back({t.os_tid, t.overwritten, t.complete_from_ns});
        return info;
    }
};

template <class = void>
class basic_hang_watchdog;
/// basic_hang_watchdog's one form (a template only so that a file that does not use it does not compile it).
using hang_watchdog = basic_hang_watchdog<>;

/// The flight recorder's hang watchdog: a thread of stint's, only while a flight recorder with a
/// hang_timeout records, that calls `on_hang(step, silent_ns, stopping)` once when no step() came for
/// the timeout (once per step: a program stuck for good writes one file). It wakes 4 times per timeout.
template <class>
class basic_hang_watchdog {
public:
    using callback = std::function<void(std::int64_t step, std::int64_t silent_ns, const std::atomic<bool>& stopping)>;
    basic_hang_watchdog(std::chrono::nanoseconds timeout, std::int64_t step, callback on_hang)
        : timeout_ns_(timeout.count()), on_hang_(std::move(on_hang)) {
        note_step(step);
        thread_ = std::thread([this] { run(); });
    }
    ~basic_hang_watchdog() {
        {
            const std::lock_guard lock(mutex_);  // the loop is waiting, or checks stopping_ before it waits
            stopping_.store(true, std::memory_order_relaxed);
        }
        wake_.notify_one();
        thread_.join();
    }
    basic_hang_watchdog(const basic_hang_watchdog&) = delete;
    basic_hang_watchdog& operator=(const basic_hang_watchdog&) = delete;

    /// step() began step `step` now. Relaxed: the watchdog reads them as hints, a timeout apart.
    void note_step(std::int64_t step) noexcept {
        last_step_ns_.store(steady_now_ns(), std::memory_order_relaxed);
        step_.store(step, std::memory_order_relaxed);
    }

private:
    void run() {
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

    std::int64_t timeout_ns_;
    callback on_hang_;
    std::atomic<std::int64_t> last_step_ns_{0};
    std::atomic<std::int64_t> step_{0};
    std::atomic<bool> stopping_{false};
    std::mutex mutex_;
    std::condition_variable wake_;
    std::thread thread_;
};

/// The flight recorder that records now, for a dump asked from outside the program (a "dump" request to
/// on_demand.hpp's socket). A profiler sets itself here when its flight recorder starts and clears itself
/// before it stops, outside its own lock: a dump holds this one's lock, then the profiler's.
class running_flight_recorder {
public:
    using dump_function = flight_dump (*)(void* profiler, const std::string& path);

    void set(void* profiler, dump_function dump) {
        const std::lock_guard lock(mutex_);
        profiler_ = profiler;
        dump_ = dump;
    }
    /// Waits for a dump of `profiler` in progress.
    void clear(const void* profiler) noexcept {
        const std::lock_guard lock(mutex_);
        if (profiler_ == profiler) profiler_ = nullptr;
    }
    /// Dumps the running flight recorder to `path`; nullopt when none records.
    std::optional<flight_dump> dump(const std::string& path) {
        const std::lock_guard lock(mutex_);
        if (profiler_ == nullptr) return std::nullopt;
        return dump_(profiler_, path);
    }

private:
    std::mutex mutex_;
    void* profiler_ = nullptr;
    dump_function dump_ = nullptr;
};
inline namespace STINT_DETAIL_ABI_NAMESPACE {
/// One per process, whichever shared object runs the profiler (export_macros.hpp); never destroyed, as a
/// profiler may stop during exit.
STINT_DETAIL_EXPORT inline running_flight_recorder& the_running_flight_recorder() {
    static auto* const running = new running_flight_recorder();
    return *running;
}
}  // namespace STINT_DETAIL_ABI_NAMESPACE

/// The kinds of trace a dump writes, by the path's ending.
enum class dump_format { chrome, perfetto };
template <class = void>
std::optional<dump_format> dump_format_of(std::string_view path) noexcept {
    if (path.ends_with(".json") || path.ends_with(".json.gz")) return dump_format::chrome;
    if (path.ends_with(".pftrace") || path.ends_with(".perfetto-trace")) return dump_format::perfetto;
    return std::nullopt;
}
template <class = void>
void require_dump_format(std::string_view call, std::string_view path) {
    if (!dump_format_of(path)) {
        throw std::invalid_argument(fmt::format("stint: {}(\"{}\"): the trace format is chosen by the path's ending; "
                                                "give .json, .json.gz or .pftrace",
                                                call, path));
    }
}

/// Where a dump's table goes: the trace's path with its format's ending replaced by ".txt"
/// ("x.pt.trace.json" -> "x.pt.trace.txt").
template <class = void>
std::string table_path_for(std::string_view path) {
    for (std::string_view ending : {".json.gz", ".json", ".pftrace", ".perfetto-trace"}) {
        if (path.ends_with(ending)) return std::string(path.substr(0, path.size() - ending.size())) + ".txt";
    }
    return std::string(path) + ".txt";
}

/// Refuses a dump directory that cannot be written, when the mode starts rather than when a dump is due:
/// a file is created in it and removed.
template <class = void>
void check_dump_dir(const std::string& dir) {
    const std::string probe = (dir.empty() ? std::string(".") : dir) + "/.stint-flight-recorder-probe";
    try {
        output_file file(probe);  // a temporary beside `probe`, removed unless committed
    } catch (const std::system_error& e) {
        throw std::system_error(e.code(), fmt::format("stint: flight_recorder.dump_dir \"{}\" cannot be written", dir));
    }
}

/// Writes a dump's trace (by `path`'s ending) and its table, both through temporaries renamed into place.
template <class Unused = void>
flight_dump write_flight_dump(const std::string& path, const deferred_t<event_list, Unused>& events,
                              deferred_t<chrome_trace_info, Unused> info, const flight_window& window) {
    flight_dump result{path, table_path_for(path), events.size(), window.overwritten};
    if (dump_format_of(path) == dump_format::perfetto) {
        write_perfetto_trace_file(path, events, window.perfetto_info(info.pid, info.truncated_names));
    } else {
        info.metadata_json.emplace_back("flightRecorder", window.json());
        write_chrome_trace_file(path, events, info);
    }
    output_file table(result.table_path);
    table.write(window.text());
    table.write(key_averages(events).table());
    table.commit();
    return result;
}

}  // namespace stint::detail
