#pragma once
// stint::recording_hook: a framework's function, called when a session starts recording and when it
// stops, so that the framework installs its own operator observer (libtorch's RecordFunction callback,
// say) only while stint records and costs nothing in between. Never on the hot path: the session calls
// the hooks from the thread that starts or stops it, outside the registry's lock.

#include <atomic>     // std::atomic, std::atomic_flag, std::memory_order
#include <cstddef>    // std::size_t
#include <stdexcept>  // std::invalid_argument, std::length_error

#include "stint/detail/export_macros.hpp"

namespace stint {

/// `fn(true, context)` when recording starts (and at once, if a session records when the hook is
/// made), `fn(false, context)` when it stops; every start and stop of a schedule's windows counts. A
/// hook runs under a lock that making or destroying a recording_hook also takes: it must not make or
/// destroy one itself. After the destructor returns the function is never called again.
///
///     void on_recording(bool recording, void*) {
///         if (recording) install_observer(); else remove_observer();
///     }
///     static stint::recording_hook hook{&on_recording};
using recording_hook_function = void (*)(bool recording, void* context);

namespace detail {
inline namespace STINT_DETAIL_ABI_NAMESPACE {

/// The process's hooks: one table across shared objects, like the recording flag.
struct recording_hook_table {
    static constexpr std::size_t capacity = 32;
    std::atomic<recording_hook_function> functions[capacity];
    std::atomic<void*> contexts[capacity];
    std::atomic_flag busy;      // held while hooks run or a slot changes
    bool recording = false;     // what the hooks were last told (under busy)

    void lock() noexcept {
        while (busy.test_and_set(std::memory_order_acquire)) busy.wait(true, std::memory_order_relaxed);
    }
    void unlock() noexcept {
        busy.clear(std::memory_order_release);
        busy.notify_all();
    }
};
STINT_DETAIL_EXPORT inline constinit recording_hook_table recording_hooks{};

/// Tells every hook of `table` that recording started (true) or stopped (false); a repeat of the last
/// word is not passed on. Called by the session (drain/session.hpp), for this object's table and for
/// each linked object's (recording/object_links.hpp).
inline void run_recording_hooks(recording_hook_table& table, bool on) {
    table.lock();
    if (table.recording != on) {
        table.recording = on;
        for (std::size_t i = 0; i < recording_hook_table::capacity; ++i) {
            const recording_hook_function fn = table.functions[i].load(std::memory_order_relaxed);
            if (fn == nullptr) continue;
            try {
                fn(on, table.contexts[i].load(std::memory_order_relaxed));
            } catch (...) {  // a framework's failure must not stop a session half-way
            }
        }
    }
    table.unlock();
}

}  // namespace STINT_DETAIL_ABI_NAMESPACE
}  // namespace detail

/// Registers a recording hook for its lifetime (RAII). Throws std::length_error when 32 are registered.
class recording_hook {
public:
    explicit recording_hook(recording_hook_function fn, void* context = nullptr) {
        if (fn == nullptr) throw std::invalid_argument("stint: recording_hook: the function is null");
        detail::recording_hook_table& table = detail::recording_hooks;
        table.lock();
        for (std::size_t i = 0; i < detail::recording_hook_table::capacity; ++i) {
            if (table.functions[i].load(std::memory_order_relaxed) != nullptr) continue;
            table.contexts[i].store(context, std::memory_order_relaxed);
            table.functions[i].store(fn, std::memory_order_relaxed);
            slot_ = i;
            break;
        }
        const bool placed = slot_ != no_slot;
        const bool recording = table.recording;
        if (placed && recording) {
            try {
                fn(true, context);
            } catch (...) {
                table.functions[slot_].store(nullptr, std::memory_order_relaxed);
                table.unlock();
                throw;
            }
        }
        table.unlock();
        if (!placed) {
            throw std::length_error("stint: recording_hook: 32 hooks are registered already; destroy one first");
        }
    }
    recording_hook(const recording_hook&) = delete;
    recording_hook& operator=(const recording_hook&) = delete;
    ~recording_hook() {
        detail::recording_hook_table& table = detail::recording_hooks;
        table.lock();
        table.functions[slot_].store(nullptr, std::memory_order_relaxed);
        table.contexts[slot_].store(nullptr, std::memory_order_relaxed);
        table.unlock();
    }

private:
    static constexpr std::size_t no_slot = detail::recording_hook_table::capacity;
    std::size_t slot_ = no_slot;
};

}  // namespace stint
