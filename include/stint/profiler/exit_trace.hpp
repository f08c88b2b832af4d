#pragma once
// STINT_TRACE_ON_EXIT=path: the trace of a session still recording when the process exits normally
// (return from main, exit()) is written to `path`, so a program that never reaches its stop() still
// leaves its trace. Read once per process; without it, nothing is registered and nothing costs.
// quick_exit(), _exit(), a signal or a crash write nothing: no exit handler runs.

#include <algorithm>
#include <condition_variable>
#include <cstdlib>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "stint/detail/deferred.hpp"
#include "stint/detail/export_macros.hpp"

namespace stint::detail {
inline namespace STINT_DETAIL_ABI_NAMESPACE {

template <class = void>
class basic_exit_trace;
/// basic_exit_trace's one form: a template, so that only a file that makes a profiler compiles it.
using exit_trace = basic_exit_trace<>;
/// The process's exit-trace registry (see export_macros.hpp for how shared objects agree on it).
template <class = void>
STINT_DETAIL_EXPORT exit_trace& the_exit_trace();

/// The profilers that write their unfinished session at exit. A profiler arms itself at construction
/// and disarms at destruction; the exit handler calls each armed profiler's writer without holding
/// this registry's lock, so no lock order links it with the profilers' own locks.
template <class Unused>
class basic_exit_trace {
public:
    /// Stops the profiler if it still records and writes its trace to `path`; never throws.
    using writer = void (*)(void* profiler, const std::string& path) noexcept;

    basic_exit_trace() {
        if (const char* value = std::getenv("STINT_TRACE_ON_EXIT"); value != nullptr) path_ = value;
        if (!path_.empty()) std::atexit([] { the_exit_trace().write_unfinished(); });
    }

    /// The path STINT_TRACE_ON_EXIT named; empty when it is unset or empty.
    [[nodiscard]] const std::string& path() const noexcept { return path_; }

    void arm(void* profiler, writer write) {
        if (path_.empty()) return;
        const std::lock_guard lock(mutex_);
        armed_.emplace_back(profiler, write);
    }
    /// Forgets `profiler`; when the exit handler is writing it on another thread, waits until it is done.
    void disarm(void* profiler) noexcept {
        if (path_.empty()) return;
        std::unique_lock lock(mutex_);
        std::erase_if(armed_, [&](const auto& entry) { return entry.first == profiler; });
        idle_.wait(lock, [&] { return busy_ != profiler || busy_thread_ == std::this_thread::get_id(); });
    }

private:
    // Writes each armed profiler without holding the lock while it does (a writer takes the profiler's
    // lock, and on_trace_ready may construct or destroy other profilers, which arm and disarm).
    void write_unfinished() noexcept {
        std::unique_lock lock(mutex_);
        while (!armed_.empty()) {
            const auto [profiler, write] = armed_.back();
            armed_.pop_back();
            busy_ = profiler;
            busy_thread_ = std::this_thread::get_id();
            lock.unlock();
            write(profiler, path_);
            lock.lock();
            busy_ = nullptr;
            idle_.notify_all();
        }
    }

    std::mutex mutex_;
    std::condition_variable idle_;
    std::string path_;
    deferred_t<std::vector<std::pair<void*, writer>>, Unused> armed_;
    void* busy_ = nullptr;            // the profiler the exit handler is writing
    std::thread::id busy_thread_;     // ... on this thread
};

/// Leaked: the exit handler may run after static destructors.
template <class>
STINT_DETAIL_EXPORT exit_trace& the_exit_trace() {
    static exit_trace* const instance = new exit_trace();
    return *instance;
}

}  // namespace STINT_DETAIL_ABI_NAMESPACE
}  // namespace stint::detail
