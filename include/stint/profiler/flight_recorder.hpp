#pragma once
// The flight recorder (design §7 "Flight recorder"): a session that records all the time into a bounded
// ring and writes the window it holds when asked, when a step runs slow, or when the program hangs.
// Here: the slow-step detector, and a dump's files (a trace chosen by the path's
// extension, the key_averages table beside it, and what was overwritten, shown in both); its options
// are in profiler/flight_recorder_options.hpp.

#include <atomic>              // std::atomic
#include <chrono>              // std::chrono::nanoseconds
#include <condition_variable>  // std::condition_variable
#include <cstddef>             // std::size_t
#include <cstdint>             // std::int64_t, std::uint64_t
#include <deque>               // std::deque
#include <functional>          // std::function
#include <memory>              // std::unique_ptr
#include <mutex>               // std::mutex
#include <optional>            // std::optional
#include <string>              // std::string
#include <string_view>         // std::string_view
#include <thread>              // std::thread
#include <vector>              // std::vector

#include "stint/analysis/event_list.hpp"
#include "stint/detail/export_macros.hpp"
#include "stint/detail/separate_compilation.hpp"
#include "stint/drain/record_store.hpp"
#include "stint/drain/session.hpp"
// What a dump writes, and what stint.hpp has always given through this header (tests use them).
#include "stint/export/chrome_trace.hpp"
#include "stint/export/perfetto_trace.hpp"
// The flight recorder's crash dump (flight_recorder_options::crash_dump_path) and its public
// check_crash_handlers(), which stint.hpp gives through this header.
#include "stint/profiler/crash_dump.hpp"
#include "stint/profiler/flight_recorder_options.hpp"
#include "stint/profiler/flight_session.hpp"
#include "stint/profiler/running_flight_recorder.hpp"
#include "stint/recording/clock.hpp"

namespace stint::detail {

/// Decides which steps are slow: more than `factor` times the median of the last `window` steps before
/// them, at least `min_ns`, and no earlier slow step within `interval_ns`. Fed durations, not clocks,
/// so that its decisions are tested exactly.
class slow_step_detector {
public:
    static constexpr std::size_t window = 101;   ///< steps the median is taken over
    static constexpr std::size_t min_steps = 8;  ///< steps seen before any is called slow

    slow_step_detector() = default;
    STINT_DECL slow_step_detector(double factor, std::int64_t min_ns, std::int64_t interval_ns);

    /// One step of `duration_ns` that ended at `now_ns`: true when it is slow and a dump is due.
    STINT_DECL bool observe(std::int64_t duration_ns, std::int64_t now_ns);

    /// The median of the steps seen (the last `window`), 0 before any.
    [[nodiscard]] STINT_DECL std::int64_t median_ns();

private:
    double factor_ = 0;
    std::int64_t min_ns_ = 0;
    std::int64_t interval_ns_ = 0;
    std::vector<std::int64_t> durations_;
    std::vector<std::int64_t> scratch_;
    std::size_t next_ = 0;
    std::optional<std::int64_t> last_fired_ns_;
};

/// A flight recorder's steps while it records: when the last began, the beginnings of the last
/// `slow_step.steps`, the detector, and the dumps the trigger wrote.
/// A dump's window: why it was written, the times it spans, and what each thread lost before it.
struct flight_window {
    struct thread {
        std::uint64_t os_tid = 0;
        std::string name;
        std::uint64_t overwritten = 0;
        /// From when the thread's records are complete (ns on the trace's clock): the latest end among
        /// its overwritten records, or the window's start. Every event that began after it is kept.
        std::int64_t complete_from_ns = 0;
    };
    std::string trigger;  ///< "request", "slow step", "hang", "stop"
    std::int64_t from_ns = 0;
    std::int64_t to_ns = 0;
    std::uint64_t overwritten = 0;
    std::vector<thread> threads;
    std::string detail;  ///< a line about the trigger (the slow step's time and the median)
    /// Scopes still open when the dump was written (a hang's): the program was inside them. Outermost
    /// first on each thread; `depth` is the scope's nesting depth on its thread.
    struct open_scope {
        std::uint64_t os_tid = 0;
        std::string thread_name;  ///< a thread with no record in the window is named only here
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
    STINT_DECL void note_last_records(const event_list& events);

    /// From a store of copied (or drained) records that ended in [from_ticks, store.stop_ticks].
    STINT_DECL static flight_window of(const record_store& store, std::uint64_t from_ticks, std::string trigger);

    /// The trace's "flightRecorder" metadata: every loss shown, per thread.
    [[nodiscard]] STINT_DECL std::string json() const;

    /// The same as lines above the table.
    [[nodiscard]] STINT_DECL std::string text() const;

    [[nodiscard]] STINT_DECL perfetto_trace_info perfetto_info(std::uint64_t pid, std::uint64_t truncated_names) const;
};

/// The flight recorder's hang watchdog: a thread of stint's, only while a flight recorder with a
/// hang_timeout records, that calls `on_hang(step, silent_ns, stopping)` once when no step() came for
/// the timeout (once per step: a program stuck for good writes one file). It wakes 4 times per timeout.
class hang_watchdog {
public:
    using callback = std::function<void(std::int64_t step, std::int64_t silent_ns, const std::atomic<bool>& stopping)>;
    STINT_DECL hang_watchdog(std::chrono::nanoseconds timeout, std::int64_t step, callback on_hang);
    STINT_DECL ~hang_watchdog();
    hang_watchdog(const hang_watchdog&) = delete;
    hang_watchdog& operator=(const hang_watchdog&) = delete;

    /// step() began step `step` now. Relaxed: the watchdog reads them as hints, a timeout apart.
    STINT_DECL void note_step(std::int64_t step) noexcept;

private:
    STINT_DECL void run();

    std::int64_t timeout_ns_;
    callback on_hang_;
    std::atomic<std::int64_t> last_step_ns_{0};
    std::atomic<std::int64_t> step_{0};
    std::atomic<bool> stopping_{false};
    std::mutex mutex_;
    std::condition_variable wake_;
    std::thread thread_;
};

/// A profiler's flight-recorder mode from start() to stop(): the ring's session, the steps it saw, the
/// slow-step and hang triggers and the crash dump. It decides when a dump is due and what it is called,
/// and writes it: a copy of the ring, built into events and given the metadata by the profiler (its host).
class flight_mode {
public:
    /// Refuses, with std::invalid_argument, what a flight recorder cannot be combined with or set to; the
    /// flags say what else the profiler's options ask for.
    STINT_DECL static void check_options(const flight_recorder_options& options, bool schedule, bool stream,
                                         bool accumulate_events, bool execution_trace);

    /// Opens the ring's session on `ring` (a budget that cannot hold a chunk per thread, or a dump
    /// directory that cannot be written, is refused now rather than when a dump is due), installs the
    /// crash dump and starts the hang watchdog. On failure the session is closed unrecorded.
    STINT_DECL flight_mode(const flight_recorder_options& options, session& ring, std::size_t reserve_bytes,
                           bool memory, bool shapes, std::int64_t step, flight_host& host);
    /// finish() if not done yet.
    STINT_DECL ~flight_mode();
    flight_mode(const flight_mode&) = delete;
    flight_mode& operator=(const flight_mode&) = delete;

    /// A step ended and `step_num` began: noted for the last-steps window; a slow step writes the steps
    /// the trigger keeps, then that step begins anew, so that the dump's own time is never a step's (it
    /// would make the next step slow, and its dump the next: a dump per step for good).
    STINT_DECL std::optional<flight_dump> observe_step(std::int64_t step_num);
    STINT_DECL flight_dump dump(const std::string& path);
    /// The whole ring, with every thread's open scopes as the threads noted them.
    STINT_DECL flight_dump dump_hang(std::int64_t step, std::int64_t silent_ns);
    /// Before the ring is drained: the watchdog is joined (a hang's dump reads the ring) and the crash
    /// dump uninstalled, with a warning for each handler the program had put over it meanwhile.
    STINT_DECL void finish() noexcept;
    [[nodiscard]] STINT_DECL flight_window_summary summary(const record_store& records) const;

private:
    /// A dump a trigger or a request asks for.
    struct dump_request {
        std::string path;
        std::uint64_t from_ticks = 0;  ///< records that ended since then; 0: the whole ring
        std::string trigger;           ///< "request", "slow step", "hang"
        std::string why;
        std::vector<flight_window::open_scope> open_scopes;  ///< a hang's: every thread's open scopes
    };
    /// Copies the ring's records that ended since the request's `from_ticks` (0: all) and writes them.
    STINT_DECL flight_dump write(dump_request request);

    flight_recorder_options options_;
    session& ring_;
    flight_host& host_;
    slow_step_detector detector_;
    std::int64_t last_step_ns_;
    std::uint64_t last_step_ticks_;
    std::deque<std::uint64_t> begins_;  // the kept steps' first ticks
    std::unique_ptr<hang_watchdog> watchdog_;
    bool crash_dump_installed_ = false;
};

/// Where a dump's table goes: the trace's path with its format's ending replaced by ".txt"
/// ("x.pt.trace.json" -> "x.pt.trace.txt").
STINT_DECL std::string table_path_for(std::string_view path);

/// Refuses a dump directory that cannot be written, when the mode starts rather than when a dump is due:
/// a file is created in it and removed.
STINT_DECL void check_dump_dir(const std::string& dir);

/// Writes a dump's trace (by `path`'s ending) and its table, both through temporaries renamed into place.
STINT_DECL flight_dump write_flight_dump(const std::string& path, const event_list& events, chrome_trace_info info,
                                         const flight_window& window);

}  // namespace stint::detail

#if defined(STINT_HEADER_ONLY)
#include "stint/profiler/impl/flight_recorder.ipp"
#endif
