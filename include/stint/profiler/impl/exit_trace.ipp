#pragma once
// The bodies of profiler/exit_trace.hpp: the registry of profilers whose trace is written at exit.
#include "stint/profiler/exit_trace.hpp"

#include <cstdlib>  // std::atexit, std::getenv

namespace stint::detail {
inline namespace STINT_DETAIL_ABI_NAMESPACE {

exit_trace::exit_trace() {
    if (const char* value = std::getenv("STINT_TRACE_ON_EXIT"); value != nullptr) path_ = value;
    if (!path_.empty()) std::atexit([] { the_exit_trace().write_unfinished(); });
}

void exit_trace::arm(void* profiler, writer write) {
    if (path_.empty()) return;
    const std::lock_guard lock(mutex_);
    armed_.emplace_back(profiler, write);
}

void exit_trace::disarm(void* profiler) noexcept {
    if (path_.empty()) return;
    std::unique_lock lock(mutex_);
    std::erase_if(armed_, [&](const auto& entry) { return entry.first == profiler; });
    idle_.wait(lock, [&] { return busy_ != profiler || busy_thread_ == std::this_thread::get_id(); });
}

// Writes each armed profiler without holding the lock while it does (a writer takes the profiler's
// lock, and on_trace_ready may construct or destroy other profilers, which arm and disarm).
void exit_trace::write_unfinished() noexcept {
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

/// Leaked: the exit handler may run after static destructors.
exit_trace& the_exit_trace() {
    static exit_trace* const instance = new exit_trace();
    return *instance;
}

}  // namespace STINT_DETAIL_ABI_NAMESPACE
}  // namespace stint::detail
