#pragma once
// STINT_TRACE_ON_EXIT=path: the trace of a session still recording when the process exits normally
// (return from main, exit()) is written to `path`, so a program that never reaches its stop() still
// leaves its trace. Read once per process; without it, nothing is registered and nothing costs.
// quick_exit(), _exit(), a signal or a crash write nothing: no exit handler runs.

#include <algorithm>
#include <cstdlib>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "stint/detail/export_macros.hpp"

namespace stint::detail {
inline namespace STINT_DETAIL_ABI_NAMESPACE {

class exit_trace;
/// The process's exit-trace registry (see export_macros.hpp for how shared objects agree on it).
STINT_DETAIL_EXPORT inline exit_trace& the_exit_trace();

/// The profilers that write their unfinished session at exit. A profiler arms itself at construction
/// and disarms at destruction (not under its own lock, so that the exit handler, which holds this
/// registry's lock and then takes a profiler's, cannot deadlock with it).
class exit_trace {
public:
    /// Stops the profiler if it still records and writes its trace to `path`; never throws.
    using writer = void (*)(void* profiler, const std::string& path) noexcept;

    exit_trace() {
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
    void disarm(void* profiler) noexcept {
        if (path_.empty()) return;
        const std::lock_guard lock(mutex_);
        std::erase_if(armed_, [&](const auto& entry) { return entry.first == profiler; });
    }

private:
    void write_unfinished() noexcept {
        const std::lock_guard lock(mutex_);
        for (const auto& [profiler, write] : armed_) write(profiler, path_);
        armed_.clear();
    }

    std::mutex mutex_;
    std::string path_;
    std::vector<std::pair<void*, writer>> armed_;
};

/// Leaked: the exit handler may run after static destructors.
STINT_DETAIL_EXPORT inline exit_trace& the_exit_trace() {
    static exit_trace* const instance = new exit_trace();
    return *instance;
}

}  // namespace STINT_DETAIL_ABI_NAMESPACE
}  // namespace stint::detail
