#pragma once
// The flight recorder as the profiler's core sees it while it records, and what the core offers the
// recorder in turn. The code behind it is reached only through the table a flight_recorder_options points
// to (profiler/flight_recorder_options.hpp).

#include <atomic>   // std::atomic
#include <cstddef>  // std::size_t
#include <cstdint>  // std::int64_t, std::uint64_t
#include <optional> // std::optional
#include <string>   // std::string

#include "stint/export/perfetto_trace_info.hpp"
#include "stint/profiler/flight_recorder_options.hpp"

namespace stint {
class event_list;  // analysis/event_list.hpp
}  // namespace stint

namespace stint::detail {

class record_store;        // drain/record_store.hpp
class session;             // drain/session.hpp
struct chrome_trace_info;  // export/chrome_trace.hpp

/// What a flight recorder asks of the profiler that runs it.
class flight_host {
public:
    /// Records built into events as the profiler's config drains them; the names cut short, counted.
    virtual void build_events(record_store& records, event_list& events, std::uint64_t& truncated_names) const = 0;
    /// What the profiler's traces carry besides events.
    [[nodiscard]] virtual chrome_trace_info trace_info(std::uint64_t truncated_names) const = 0;
    /// From the hang watchdog's thread: no step() came for the hang timeout. The profiler takes its lock
    /// (giving up when `stopping` is set) and calls flight_session::dump_hang.
    virtual void on_hang(std::int64_t step, std::int64_t silent_ns, const std::atomic<bool>& stopping) = 0;

protected:
    flight_host() = default;
    flight_host(const flight_host&) = default;
    flight_host& operator=(const flight_host&) = default;
    ~flight_host() = default;
};

/// What a flight recorder's last window adds to the exports after stop(): the "flightRecorder" metadata of
/// a Chrome trace, and the losses a Perfetto trace shows.
struct flight_window_summary {
    std::string json;
    perfetto_trace_info perfetto;
};

/// A flight recorder from start() to stop(), as the profiler's core holds it: the flight_mode its
/// options' code opened (profiler/flight_recorder.hpp), called through that code. The core calls it under
/// its lock.
class flight_session {
public:
    flight_session(const flight_recorder_options& options, session& ring, std::size_t reserve_bytes, bool memory,
                   bool shapes, std::int64_t step, flight_host& host)
        : code_(options.code), mode_(code_->open(options, ring, reserve_bytes, memory, shapes, step, host)) {}
    ~flight_session() { code_->destroy(mode_); }
    flight_session(const flight_session&) = delete;
    flight_session& operator=(const flight_session&) = delete;

    /// A step ended and `step_num` began: a slow step's dump, written (nullopt: none due). A dump that
    /// fails is a warning: the program's step must not fail for it.
    std::optional<flight_dump> observe_step(std::int64_t step_num) { return code_->observe_step(*mode_, step_num); }
    /// The ring's window, written now while recording continues (prof.dump(path)).
    flight_dump dump(const std::string& path) { return code_->dump(*mode_, path); }
    /// The watchdog saw no step() for `silent_ns` during `step`: the whole ring, with the scopes still open.
    flight_dump dump_hang(std::int64_t step, std::int64_t silent_ns) { return code_->dump_hang(*mode_, step, silent_ns); }
    /// Before the ring is drained: the watchdog joined, the crash dump uninstalled.
    void finish() noexcept { code_->finish(*mode_); }
    /// The window that stop() drained out of the ring (`records`).
    [[nodiscard]] flight_window_summary summary(const record_store& records) const {
        return code_->summary(*mode_, records);
    }

private:
    const flight_recorder_code* code_;
    flight_mode* mode_;
};

}  // namespace stint::detail
