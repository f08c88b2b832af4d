#pragma once
// The slow path of append, as every object that records compiles it: what happens when a thread's
// chunk is full, its session is new or it has no registration yet. The work that needs the registry
// (registering, starting the thread's session, taking a chunk) goes through a process-wide table that
// the registry installs (registry.hpp); nothing else of the registry, the pool or their headers is
// needed here, so that a framework's headers that record stay light (annotate.hpp). Nothing records
// before a profiler exists in the process, and a profiler's object installs the table.
//
// The table's functions take the caller's thread_buffer: each shared object built with hidden
// visibility has a buffer of its own per thread, and the registry code that serves it may sit in
// another object.

#include <atomic>       // std::atomic, std::memory_order
#include <cstddef>      // std::size_t, std::byte
#include <cstdint>      // std::uint32_t, std::uint64_t
#include <cstring>      // std::memcpy
#include <new>          // placement new
#include <string_view>  // std::string_view
#include <typeinfo>     // std::type_info

#include "stint/detail/export_macros.hpp"
#include "stint/detail/platform.hpp"
#include "stint/recording/buffer.hpp"
#include "stint/recording/ticks.hpp"
#include "stint/recording/thread_node.hpp"

namespace stint::detail {
inline namespace STINT_DETAIL_ABI_NAMESPACE {

struct dynamic_site;  // annotations/dynamic_name.hpp

/// Room for `bytes` in this thread's buffer for session `state`, after whatever work that took.
struct buffer_room {
    bool ok = false;                     ///< false: the record is lost (counted unless `discarded`)
    bool discarded = false;              ///< session ended (counted late if it ended before the stop), stale
                                         ///< session or exiting thread: not a drop
    const site* overhead = nullptr;      ///< the work done, when it is worth an overhead record
};

/// The registry's half of the slow path (registry.hpp installs it).
struct slow_path {
    /// Registers the thread, starts its session or takes a chunk, as needed, so that `bytes` fit, and an
    /// overhead record after them when work was done. May throw std::bad_alloc (the caller counts a drop).
    buffer_room (*make_room)(thread_buffer& buffer, std::uint32_t state, std::size_t bytes, std::uint64_t end);
    /// Names the buffer's thread in traces, registering it first when needed.
    void (*set_thread_name)(thread_buffer& buffer, std::string_view name);
    /// The site of a STINT_SCOPE_DYNAMIC call site for a dynamic type, made the first time. May throw.
    const site* (*intern_dynamic_site)(dynamic_site& where, const std::type_info& type);
    /// The site of a name that lives for the process, of `kind` (stint::begin_event), made the first time;
    /// `inputs`: its records carry captured inputs; `flops`: its flops come from the formula of its name.
    /// May throw.
    const site* (*intern_named_site)(const char* name, event_kind kind, bool inputs, bool flops);
    /// The site of a name given by its text (stint::begin_event with a std::string_view), the text copied
    /// once; null when the process already holds max_interned_texts of them. May throw.
    const site* (*intern_text_site)(std::string_view name, event_kind kind, bool inputs, bool flops);
    /// The buffer's stack of open scopes (recording/open_scopes.hpp), made and registered the first time.
    /// May throw std::bad_alloc.
    open_scope_stack* (*make_open_scope_stack)(thread_buffer& buffer);
    /// Turns off the calling thread's alternate signal stack if it is the node's (recording/signal_stack.hpp),
    /// before the thread's end marks the node exited and a drain frees the stack.
    void (*leave_signal_stack)(thread_node& node) noexcept;
};
/// The installed table; null until an object that can run a profiler is loaded.
STINT_DETAIL_EXPORT inline constinit std::atomic<const slow_path*> installed_slow_path{nullptr};

/// Marks a thread's node exited when the thread ends, so the drain frees it after reading it. One per
/// thread and per object, like the buffer it watches.
struct thread_exit_guard {
    thread_buffer* buffer = nullptr;
    thread_exit_guard() = default;
    thread_exit_guard(const thread_exit_guard&) = delete;
    thread_exit_guard& operator=(const thread_exit_guard&) = delete;
    ~thread_exit_guard() {
        if (buffer == nullptr) return;
        buffer->dead = true;  // scopes in later thread_local destructors are discarded
        buffer->limit = nullptr;
        buffer->cursor = nullptr;
        buffer->open = nullptr;  // the node's, freed with it
        if (buffer->node != nullptr) {
            // Made by the registry (through the installed table), whose table takes the stack off again.
            if (buffer->node->signal_stack != nullptr) {
                installed_slow_path.load(std::memory_order_acquire)->leave_signal_stack(*buffer->node);
            }
            // release: pairs with the acquire in free_exited_nodes(); the node's last writes happen-before.
            buffer->node->exited.store(true, std::memory_order_release);
        }
        buffer->node = nullptr;
    }
};
inline thread_local thread_exit_guard tls_exit_guard;

/// make_room through the installed table, this object's exit guard set on the buffer it registers. Cold
/// and out of line: inlined, its thread_local guard would weigh on the callers' common path.
STINT_DETAIL_COLD inline buffer_room make_room(thread_buffer& buffer, std::uint32_t state, std::size_t bytes,
                                        std::uint64_t end) {
    const slow_path* path = installed_slow_path.load(std::memory_order_acquire);
    if (path == nullptr) return {.discarded = true};  // no profiler can have started: no session to record into
    if (buffer.node == nullptr) tls_exit_guard.buffer = &buffer;
    return path->make_room(buffer, state, bytes, end);
}

/// Publishes the `bytes` just written at the cursor and, when the slow path did work to make room for
/// them, its overhead record, timed from `work_begin` until now (make_room left room for it).
inline void publish_record(thread_buffer& buffer, std::size_t bytes, const buffer_room& room, std::uint32_t depth,
                           std::uint64_t work_begin) noexcept {
    buffer.cursor += bytes;
    if (bytes != sizeof(record)) buffer.current->ring_mixed = true;  // a payload (recording/ring.hpp)
    if (room.overhead != nullptr) {
        ::new (buffer.cursor) record{room.overhead, depth, work_begin, read_ticks()};
        buffer.cursor += sizeof(record);
        ++buffer.current->ring_own_records;
    }
    // release: pairs with the acquire in drain_node(); the records' bytes are visible before their end.
    buffer.current->published.store(buffer.cursor, std::memory_order_release);
}

template <int>
STINT_DETAIL_COLD void append_record_slow(const site* where, std::uint32_t depth, std::uint64_t begin,
                                          std::uint64_t end, std::uint32_t state, std::string_view name) noexcept {
    thread_buffer& buffer = tls_buffer;
    if (buffer.dead) return;
    const std::uint64_t work_begin = read_ticks();
    try {
        std::size_t bytes = sizeof(record);
        const bool named = where->payload == payload_kind::runtime_name;
        if (named) bytes = named_record_bytes(std::min(name.size(), max_runtime_name_bytes));
        const buffer_room room = make_room(buffer, state, bytes, end);
        if (!room.ok) {
            if (!room.discarded) bump(buffer.node->dropped);
            return;
        }
        if (named && name.size() > max_runtime_name_bytes) {
            name = name.substr(0, max_runtime_name_bytes);
            bump(buffer.node->truncated);
        }
        std::byte* at = buffer.cursor;
        ::new (at) record{where, depth, begin, end};
        if (named) {
            const payload_header header{static_cast<std::uint32_t>(bytes - sizeof(record)),
                                        static_cast<std::uint32_t>(name.size())};
            std::memcpy(at + sizeof(record), &header, sizeof(header));
            if (!name.empty()) std::memcpy(at + sizeof(record) + sizeof(header), name.data(), name.size());
        }
        publish_record(buffer, bytes, room, depth, work_begin);
    } catch (...) {
        // Out of memory while registering or growing: the record is lost, and counted if it can be.
        if (buffer.node != nullptr) bump(buffer.node->dropped);
    }
}

/// Bytes to copy into a record's payload. Not std::span: constructing one makes gcc check its
/// constructors' range concepts in each file that includes the hot path, up to a tenth of what
/// `<iostream>` costs (design §15).
struct payload_bytes {
    const void* data = nullptr;
    std::size_t size = 0;
};

/// Appends a record with a payload of `first` then `second` (each padded to 8 bytes) after a header
/// whose aux word is `aux`: op inputs at STINT_OP exit (record_shapes), a name and args from
/// record_function. Out of line (ops that capture inputs take it at every exit, so it is not cold).
/// A payload that cannot fit in one chunk is dropped and counted like a record over the budget.
/// Returns false when the record was dropped (and counted); true when written, or discarded because the
/// session ended meanwhile.
STINT_DETAIL_NOINLINE inline bool append_record_payload(const site* where, std::uint32_t depth, std::uint64_t begin,
                                                 std::uint64_t end, std::uint32_t state, std::uint32_t aux,
                                                 payload_bytes first, payload_bytes second = {}) noexcept {
    thread_buffer& buffer = tls_buffer;
    const std::size_t first_padded = (first.size + 7) & ~std::size_t{7};
    const std::size_t second_padded = (second.size + 7) & ~std::size_t{7};
    const std::size_t bytes = sizeof(record) + sizeof(payload_header) + first_padded + second_padded;
    try {
        // The common case (this session's chunk has room) touches neither the registry nor the node.
        buffer_room room{.ok = true};
        std::uint64_t work_begin = 0;
        if (buffer.state != state || static_cast<std::size_t>(buffer.limit - buffer.cursor) < bytes) [[unlikely]] {
            if (buffer.dead) return true;
            work_begin = read_ticks();
            room = make_room(buffer, state, bytes, end);
            if (!room.ok) {
                if (room.discarded) return true;
                bump(buffer.node->dropped);
                return false;
            }
        }
        std::byte* at = buffer.cursor;
        ::new (at) record{where, depth, begin, end};
        const payload_header header{static_cast<std::uint32_t>(bytes - sizeof(record)), aux};
        std::byte* out = at + sizeof(record);
        std::memcpy(out, &header, sizeof(header));
        out += sizeof(header);
        if (first.size != 0) std::memcpy(out, first.data, first.size);
        out += first_padded;
        if (second.size != 0) std::memcpy(out, second.data, second.size);
        publish_record(buffer, bytes, room, depth, work_begin);
        return true;
    } catch (...) {
        // Out of memory while registering or growing: the record is lost, and counted if it can be.
        if (buffer.node != nullptr) bump(buffer.node->dropped);
        return false;
    }
}

}  // namespace STINT_DETAIL_ABI_NAMESPACE
}  // namespace stint::detail

namespace stint {

/// Names the calling thread in traces (otherwise its OS name is used). Before the process's first
/// profiler is made there is no registry to keep it in: the OS name is set then (cut to 15 bytes).
inline void set_thread_name(std::string_view name) {
    auto& buffer = detail::tls_buffer;
    if (buffer.dead) return;
    const detail::slow_path* path = detail::installed_slow_path.load(std::memory_order_acquire);
    if (path == nullptr) {
        detail::set_os_thread_name(name);
        return;
    }
    if (buffer.node == nullptr) detail::tls_exit_guard.buffer = &buffer;
    path->set_thread_name(buffer, name);
}

}  // namespace stint
