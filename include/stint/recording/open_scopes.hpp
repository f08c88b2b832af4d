#pragma once
// A thread's open scopes, noted while a flight recorder records (design §7 "Open scopes"): a record is
// written at a scope's end, so without these a hang's or a crash's dump could not say which scopes the
// program was inside. A scope's entry is written at its depth like a seqlock, with begin_ticks as the
// sequence: begin_ticks set to 0 (a release fence after it), then the site (and a run-time name's first
// bytes), then begin_ticks (release), then the depth (release); its exit lowers the depth (one store).
// Another thread (the hang watchdog, the crash handler) reads without a lock: read_entry() reads
// begin_ticks, the fields, begin_ticks again, and keeps the entry only when both are the same nonzero
// tick (thread_node.hpp).
//
// Only a flight recorder's session notes them: its state has `open_scopes_bit` set, which every scope
// already holds in a register, so any other session pays one untaken branch. That branch carries no
// likely/unlikely hint: in a flight session every scope takes it, and hinted cold, the noting was laid
// out of line behind three taken jumps, which cost about 1 ns a scope (bench: the ring-wrap rows).

#include <atomic>       // std::memory_order
#include <cstddef>      // std::size_t
#include <cstdint>      // std::uint32_t, std::uint64_t
#include <cstring>      // std::memcpy
#include <string_view>  // std::string_view

#include "stint/detail/export_macros.hpp"
#include "stint/recording/buffer.hpp"
#include "stint/recording/site.hpp"
#include "stint/recording/slow_path.hpp"
#include "stint/recording/thread_node.hpp"

namespace stint::detail {
inline namespace STINT_DETAIL_ABI_NAMESPACE {

/// A recording state's bit that says its session notes open scopes (recording/state.hpp).
inline constexpr std::uint32_t open_scopes_bit = 2;
/// Whether `state` records and notes open scopes (a stopped session's state keeps the bit, not bit 0).
constexpr bool notes_open_scopes(std::uint32_t state) noexcept {
    return (state & (open_scopes_bit | 1U)) == (open_scopes_bit | 1U);
}

/// Makes this thread's stack (registering the thread first when needed); null when no profiler can run
/// in the process yet or memory ran out. Cold: once per thread and object.
STINT_DETAIL_COLD inline open_scope_stack* make_open_scope_stack() noexcept {
    thread_buffer& buffer = tls_buffer;
    const slow_path* path = installed_slow_path.load(std::memory_order_acquire);
    if (path == nullptr || buffer.dead) return nullptr;
    if (buffer.node == nullptr) tls_exit_guard.buffer = &buffer;  // as make_room does (slow_path.hpp)
    try {
        return path->make_open_scope_stack(buffer);
    } catch (...) {
        return nullptr;  // out of memory: this thread's scopes go unnoted
    }
}

/// The entry a scope the calling thread has just entered is noted in, or null (this session notes none,
/// no stack could be made, or the scope is deeper than the stack keeps). Its begin is set to 0 first:
/// a reader then knows the entry is being rewritten (open_scope_stack::read_entry).
STINT_DETAIL_ALWAYS_INLINE open_scope_stack::entry* begin_noting_scope(std::uint32_t state,
                                                                      open_scope_stack*& open) noexcept {
    if (!notes_open_scopes(state)) return nullptr;
    open = tls_buffer.open;
    if (open == nullptr) [[unlikely]] {
        open = make_open_scope_stack();
        if (open == nullptr) return nullptr;
    }
    const std::uint32_t depth = tls_buffer.depth;  // this scope's depth + 1
    if (depth - 1 >= open_scope_stack::capacity) {
        open->depth.store(depth, std::memory_order_release);  // counted, not kept
        return nullptr;
    }
    open_scope_stack::entry& e = open->entries[depth - 1];
    e.begin_ticks.store(0, std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_release);  // the 0 is seen before any field below changes
    return &e;
}

/// Finishes noting `e` (begin_noting_scope): its begin, then the depth that shows it.
STINT_DETAIL_ALWAYS_INLINE void end_noting_scope(open_scope_stack& open, open_scope_stack::entry& e,
                                                 std::uint64_t begin) noexcept {
    e.begin_ticks.store(begin, std::memory_order_release);
    // release: a reader that sees this depth sees the entry below it.
    open.depth.store(tls_buffer.depth, std::memory_order_release);
}

/// A scope at `where` began at `begin` (its depth already entered): noted in a session that notes them.
STINT_DETAIL_ALWAYS_INLINE void note_scope_entered(std::uint32_t state, const site* where,
                                                   std::uint64_t begin) noexcept {
    open_scope_stack* open = nullptr;
    open_scope_stack::entry* e = begin_noting_scope(state, open);
    if (e == nullptr) return;
    e->where.store(where, std::memory_order_relaxed);
    end_noting_scope(*open, *e, begin);
}

/// note_scope_entered() for a scope named at run time: its name's first bytes are kept with it, written
/// before the entry is shown (a thread preempted meanwhile must not show a new scope with an old name).
inline void note_named_scope_entered(std::uint32_t state, const site* where, std::uint64_t begin,
                                     std::string_view name) noexcept {
    open_scope_stack* open = nullptr;
    open_scope_stack::entry* e = begin_noting_scope(state, open);
    if (e == nullptr) [[likely]] return;
    e->where.store(where, std::memory_order_relaxed);
    for (std::size_t w = 0; w < open_scope_stack::name_words; ++w) {
        std::uint64_t word = 0;
        if (w * 8 < name.size()) std::memcpy(&word, name.data() + w * 8, std::min<std::size_t>(8, name.size() - w * 8));
        e->name[w].store(word, std::memory_order_relaxed);
    }
    e->name_size.store(name.size(), std::memory_order_relaxed);
    end_noting_scope(*open, *e, begin);
}

/// A scope noted by note_scope_entered() left, leaving `depth` scopes open on this thread.
STINT_DETAIL_ALWAYS_INLINE void note_scope_left(std::uint32_t state, std::uint32_t depth) noexcept {
    if (!notes_open_scopes(state)) return;
    if (open_scope_stack* open = tls_buffer.open) open->depth.store(depth, std::memory_order_relaxed);
}

/// note_scope_left() for a scope that may end on another thread (record_function, an event token): only
/// its own thread's stack changes, as only that thread's depth does (buffer.hpp's leave_scope_on).
STINT_DETAIL_ALWAYS_INLINE void note_scope_left_on(std::uint32_t state, const void* thread,
                                                   std::uint32_t depth) noexcept {
    if (thread == &tls_buffer) note_scope_left(state, depth);
}

/// Leaves a recorded scope (buffer.hpp's leave_recorded_scope) and notes that it left; returns its depth.
STINT_DETAIL_ALWAYS_INLINE std::uint32_t leave_noted_scope(std::uint32_t state) noexcept {
    const std::uint32_t depth = leave_recorded_scope();
    note_scope_left(state, depth);
    return depth;
}

/// Ends a recorded scope: leaves it and appends its record.
STINT_DETAIL_ALWAYS_INLINE void append_scope_record(const site* where, std::uint64_t begin, std::uint64_t end,
                                                    std::uint32_t state) noexcept {
    append_record(where, leave_noted_scope(state), begin, end, state);
}

}  // namespace STINT_DETAIL_ABI_NAMESPACE
}  // namespace stint::detail
