#pragma once
// stint::flight_recorder_options and stint::flight_dump: what a flight recorder is asked, and what a dump wrote.

#include <chrono>   // std::chrono::nanoseconds, std::chrono::milliseconds, std::chrono::seconds
#include <cstddef>  // std::size_t
#include <cstdint>  // std::int64_t, std::uint64_t
#include <optional>  // std::optional
#include <string>   // std::string

#include "stint/detail/separate_compilation.hpp"

namespace stint {

struct flight_recorder_options;

/// What a flight recorder's dump wrote.
struct flight_dump {
    std::string path;             ///< the trace
    std::string table_path;       ///< the key_averages table beside it
    std::uint64_t events = 0;     ///< events in the trace
    std::uint64_t overwritten = 0;  ///< records overwritten before the window, over all threads
};

namespace detail {

class session;                 // drain/session.hpp
class record_store;            // drain/record_store.hpp
class flight_mode;             // profiler/flight_recorder.hpp
class flight_host;             // profiler/flight_session.hpp
struct flight_window_summary;  // profiler/flight_session.hpp

/// The flight recorder's code as the profiler's core calls it: plain function pointers, never virtual
/// calls (a compiler that sees the one implementation of an interface calls it directly, and so emits
/// it). The core reaches this table only through the pointer a flight_recorder_options carries, so a
/// program that never makes one emits none of the flight recorder (design §16, "pay for what you name").
struct flight_recorder_code {
    /// Refuses, with std::invalid_argument, what a flight recorder cannot be combined with or set to.
    void (*check_options)(const flight_recorder_options& options, bool schedule, bool stream, bool accumulate_events,
                          bool execution_trace);
    /// Opens the ring on `ring` and starts its triggers (flight_mode's constructor says what it refuses);
    /// the caller owns the result and gives it to `destroy`.
    flight_mode* (*open)(const flight_recorder_options& options, session& ring, std::size_t reserve_bytes, bool memory,
                         bool shapes, std::int64_t step, flight_host& host);
    std::optional<flight_dump> (*observe_step)(flight_mode& mode, std::int64_t step_num);
    flight_dump (*dump)(flight_mode& mode, const std::string& path);
    flight_dump (*dump_hang)(flight_mode& mode, std::int64_t step, std::int64_t silent_ns);
    void (*finish)(flight_mode& mode) noexcept;
    flight_window_summary (*summary)(const flight_mode& mode, const record_store& records);
    void (*destroy)(flight_mode* mode) noexcept;
};

/// The table a flight_recorder_options points to (profiler/impl/flight_recorder.ipp): taking its
/// address is what emits the flight recorder.
STINT_DECL const flight_recorder_code& flight_recorder_code_table() noexcept;

}  // namespace detail

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
    /// stint-crashdump (tools/stint_crashdump.cpp) turns the file into a trace.
    std::string crash_dump_path{};
    /// The flight recorder's code: set here, where the program makes its options, so that only a program
    /// that makes them emits it. Leave it as it is.
    const detail::flight_recorder_code* code = &detail::flight_recorder_code_table();
};


}  // namespace stint

#if defined(STINT_HEADER_ONLY)
#include "stint/profiler/flight_recorder.hpp"  // the bodies the table points to
#endif
