#pragma once
// stint::flight_recorder_options and stint::flight_dump: what a flight recorder is asked, and what a dump wrote.

#include <chrono>   // std::chrono::nanoseconds, std::chrono::milliseconds, std::chrono::seconds
#include <cstddef>  // std::size_t
#include <cstdint>  // std::uint64_t
#include <string>   // std::string

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
