#pragma once
// STINT_TRACE_ON_EXIT=path: the trace of a session still recording when the process exits normally
// (return from main, exit()) is written to `path`, so a program that never reaches its stop() still
// leaves its trace. Read once per process; without it, nothing is registered and nothing costs.
// quick_exit(), _exit(), a signal or a crash write nothing: no exit handler runs.

#include <condition_variable>  // std::condition_variable
#include <mutex>               // std::mutex
#include <string>              // std::string
#include <thread>              // std::thread::id
#include <utility>             // std::pair
#include <vector>              // std::vector

#include "stint/detail/export_macros.hpp"
#include "stint/detail/separate_compilation.hpp"

namespace stint::detail {
inline namespace STINT_DETAIL_ABI_NAMESPACE {

class exit_trace;
/// The process's exit-trace registry (see export_macros.hpp for how shared objects agree on it).
STINT_DECL STINT_DETAIL_EXPORT exit_trace& the_exit_trace();

/// The profilers that write their unfinished session at exit. A profiler arms itself at construction
/// and disarms at destruction; the exit handler calls each armed profiler's writer without holding
/// this registry's lock, so no lock order links it with the profilers' own locks.
class exit_trace {
public:
    /// Stops the profiler if it still records and writes its trace to `path`; never throws.
    using writer = void (*)(void* profiler, const std::string& path) noexcept;

    STINT_DECL exit_trace();

    /// The path STINT_TRACE_ON_EXIT named; empty when it is unset or empty.
    [[nodiscard]] const std::string& path() const noexcept { return path_; }

    STINT_DECL void arm(void* profiler, writer write);
    /// Forgets `profiler`; when the exit handler is writing it on another thread, waits until it is done.
    STINT_DECL void disarm(void* profiler) noexcept;

private:
    STINT_DECL void write_unfinished() noexcept;

    std::mutex mutex_;
    std::condition_variable idle_;
    std::string path_;
    std::vector<std::pair<void*, writer>> armed_;
    void* busy_ = nullptr;            // the profiler the exit handler is writing
    std::thread::id busy_thread_;     // ... on this thread
};

}  // namespace STINT_DETAIL_ABI_NAMESPACE
}  // namespace stint::detail

#if defined(STINT_HEADER_ONLY)
#include "stint/profiler/impl/exit_trace.ipp"
#endif
