#pragma once
// Per-thread chunked single-writer buffers: the record layout, the chunk, and the append that scope
// exit calls. The hot path is `append_record`; everything else is the cold slow path in registry.hpp.

#include <atomic>       // std::atomic, std::memory_order_release
#include <cstddef>      // std::size_t, std::byte
#include <cstdint>      // std::uint64_t, std::uint32_t, std::uintptr_t, std::uint16_t
#include <string_view>  // std::string_view

#include "stint/detail/export_macros.hpp"
#include "stint/recording/site.hpp"

namespace stint::detail {
inline namespace STINT_DETAIL_ABI_NAMESPACE {

/// The fixed part of every record: which site, at which nesting depth on its thread, when it began
/// and ended. A payload follows when the site says so.
///
/// The depth is what makes the drain's tree exact: on a coarse tick clock a parent, its children and
/// its next sibling often share ticks, but a thread's records arrive in program order (a scope at its
/// exit) and, with each record's depth, that order alone rebuilds the nesting (drain/session.hpp,
/// analysis/event_tree.hpp). It rides in the site pointer's top 16 bits, which user-space addresses
/// leave zero on x86-64 and aarch64 (47/48-bit address spaces), so a record stays 24 bytes.
struct record {
    std::uint64_t site_and_depth;
    std::uint64_t begin_ticks;
    std::uint64_t end_ticks;

    static constexpr int depth_shift = 48;
    static constexpr std::uint64_t site_mask = (std::uint64_t{1} << depth_shift) - 1;

    STINT_DETAIL_ALWAYS_INLINE record(const site* where, std::uint32_t depth, std::uint64_t begin,
                                      std::uint64_t end) noexcept
        : site_and_depth(reinterpret_cast<std::uintptr_t>(where) | (std::uint64_t{depth} << depth_shift)),
          begin_ticks(begin), end_ticks(end) {}
    record() = default;

    [[nodiscard]] const site* where() const noexcept {
        return reinterpret_cast<const site*>(static_cast<std::uintptr_t>(site_and_depth & site_mask));
    }
    /// The thread's depth when the record's scope began, modulo 2^16 (the drain unwraps it).
    [[nodiscard]] std::uint16_t depth() const noexcept {
        return static_cast<std::uint16_t>(site_and_depth >> depth_shift);
    }
};
static_assert(sizeof(record) == 24, "stint: a timing-only record must stay 24 bytes (design §6: <= 32)");

/// Header of a payload: its size in bytes (a multiple of 8, header included) and a kind-specific word.
struct payload_header {
    std::uint32_t bytes;
    std::uint32_t aux;
};
static_assert(sizeof(payload_header) == 8);

/// A block of records owned by one thread while it fills it. Chunks come in sizes from 1 KiB to 64 KiB
/// (powers of two): a thread's first chunk of a session is the smallest unless one was set aside for
/// it, and each next chunk doubles, so a session's budget pays for what threads record, not for what
/// they reserve (100,000 threads of three scopes each take 1 KiB apiece, not 64).
struct chunk {
    static constexpr std::size_t header_bytes = 64;
    static constexpr std::size_t min_total_bytes = 1024;
    static constexpr std::size_t total_bytes = 64 * 1024;  ///< the largest size
    static constexpr std::size_t data_bytes = total_bytes - header_bytes;
    static constexpr std::size_t size_classes = 7;         ///< 1, 2, 4, ... 64 KiB

    /// End of the complete records. Release by the owner after each record; acquire in drain.
    std::atomic<std::byte*> published{nullptr};
    /// Next chunk of the same thread and session. Release by the owner; acquire in drain.
    std::atomic<chunk*> next{nullptr};
    /// Flight recorder (recording/ring.hpp): the latest end tick and the count of the program's records
    /// in [data(), published), noted the first time the owner looks at the chunk as its oldest.
    std::uint64_t ring_last_end = 0;
    /// This chunk's size class: it spans `min_total_bytes << size_class` bytes, header included.
    std::uint32_t size_class = 0;
    std::uint32_t ring_records = 0;
    /// stint's own overhead records in the chunk (written by the slow path), and whether any record in it
    /// is not 24 bytes of the program's (a payload, a device link): without one, ring.hpp counts the
    /// chunk's records from its size instead of reading them. Written by the owner, on this line that
    /// `published` already makes it write.
    std::uint32_t ring_own_records = 0;
    bool ring_mixed = false;
    /// Carved from a 2 MiB slab (recording/chunk_memory.hpp), not allocated from the heap.
    bool in_slab = false;
    bool ring_summarized = false;  ///< ring_last_end and ring_records are set

    /// Ready for records again (taken from the pool, or overwritten by a flight recorder).
    void reset_ring_notes() noexcept {
        ring_summarized = false;
        ring_mixed = false;
        ring_own_records = 0;
    }

    explicit chunk(std::uint32_t size_class_index, bool from_slab = false) noexcept
        : size_class(size_class_index), in_slab(from_slab) {}

    static constexpr std::size_t bytes_of_class(std::uint32_t size_class_index) noexcept {
        return min_total_bytes << size_class_index;
    }
    /// The smallest size class whose data area holds `bytes` (the largest when none does).
    static constexpr std::uint32_t class_for_data(std::size_t bytes) noexcept {
        std::uint32_t c = 0;
        while (c + 1 < size_classes && bytes_of_class(c) - header_bytes < bytes) ++c;
        return c;
    }
    [[nodiscard]] std::size_t total() const noexcept { return bytes_of_class(size_class); }
    std::byte* data() noexcept { return reinterpret_cast<std::byte*>(this) + header_bytes; }
    std::byte* data_end() noexcept { return reinterpret_cast<std::byte*>(this) + total(); }
};
static_assert(sizeof(chunk) <= chunk::header_bytes);

struct thread_node;
struct open_scope_stack;

/// The owning thread's view of its buffer. Only that thread reads or writes it; it is trivially
/// constructible and destructible so that a thread_local of it costs one TLS-relative access.
struct thread_buffer {
    std::byte* cursor = nullptr;   ///< where the next record goes
    std::byte* limit = nullptr;    ///< end of the current chunk; nullptr until the first record
    chunk* current = nullptr;
    std::uint32_t state = 0;       ///< the recording state (session) this buffer's chunks belong to
    std::uint32_t depth = 0;       ///< recorded scopes open on this thread (modulo 2^32; records keep 16 bits)
    bool dead = false;             ///< the thread is exiting: records are discarded
    thread_node* node = nullptr;
    open_scope_stack* open = nullptr;  ///< the node's open scopes, made at the first flight recorder's scope
};

/// One buffer per thread and per shared object (a hidden-visibility library has its own copy; each
/// registers separately and the drain merges them by OS thread id).
inline constinit thread_local thread_buffer tls_buffer{};

/// Allocations stint makes for itself on this thread right now (a buffer chunk, a thread's
/// registration, a memory event's own append): memory reporting (memory/report.hpp) ignores them, so a
/// tracking operator new never reports stint's own memory or re-enters a half-written record.
STINT_DETAIL_EXPORT inline constinit thread_local std::uint32_t own_allocations = 0;

/// Marks stint's own allocations on this thread for as long as it lives.
struct own_allocation_scope {
    own_allocation_scope() noexcept { ++own_allocations; }
    ~own_allocation_scope() { --own_allocations; }
    own_allocation_scope(const own_allocation_scope&) = delete;
    own_allocation_scope& operator=(const own_allocation_scope&) = delete;
};

/// Cold path of append: registration, a new session, a full chunk, an exhausted budget. Defined in
/// slow_path.hpp, after the append that calls it: a template, the one of the recording side (design §16),
/// because gcc 12 warns (-Wattributes) on an inline function whose cold, noinline definition follows an
/// earlier declaration, and a template's declaration may precede its definition without it.
template <int = 0>
STINT_DETAIL_COLD void append_record_slow(const site* where, std::uint32_t depth, std::uint64_t begin,
                                          std::uint64_t end, std::uint32_t state, std::string_view name) noexcept;

/// Marks the entry of a scope that will be recorded: records made until its exit are inside it.
STINT_DETAIL_ALWAYS_INLINE void enter_recorded_scope() noexcept { ++tls_buffer.depth; }

/// Leaves a scope entered with enter_recorded_scope(); returns its depth (the scopes around it).
STINT_DETAIL_ALWAYS_INLINE std::uint32_t leave_recorded_scope() noexcept { return --tls_buffer.depth; }

/// The depth of a record made now outside any scope of its own (an instant).
STINT_DETAIL_ALWAYS_INLINE std::uint32_t current_depth() noexcept { return tls_buffer.depth; }

/// Appends one timing-only record for the session `state`. Single writer: no lock, no CAS.
STINT_DETAIL_ALWAYS_INLINE void append_record(const site* where, std::uint32_t depth, std::uint64_t begin,
                                              std::uint64_t end, std::uint32_t state) noexcept {
    thread_buffer& buffer = tls_buffer;
    std::byte* at = buffer.cursor;
    if (buffer.state != state || static_cast<std::size_t>(buffer.limit - at) < sizeof(record)) [[unlikely]] {
        append_record_slow(where, depth, begin, end, state, {});
        return;
    }
    ::new (at) record{where, depth, begin, end};
    buffer.cursor = at + sizeof(record);
    // release: pairs with the acquire in drain_node(); the record's bytes are visible before its end.
    buffer.current->published.store(buffer.cursor, std::memory_order_release);
}

/// enter_recorded_scope() for a scope that may end on another thread (record_function, which a
/// framework may pass along): returns this thread's identity for leave_scope_on().
inline const void* enter_scope_on_this_thread() noexcept {
    enter_recorded_scope();
    return &tls_buffer;
}
/// Leaves a scope entered by enter_scope_on_this_thread() on `thread`, when this is that thread; on
/// another thread the record takes that thread's current depth (the first thread's depth stays one
/// higher, which only shifts all its later depths alike).
inline std::uint32_t leave_scope_on(const void* thread) noexcept {
    return thread == &tls_buffer ? leave_recorded_scope() : current_depth();
}

/// Bytes a record with a runtime name of `name_size` bytes occupies.
constexpr std::size_t named_record_bytes(std::size_t name_size) noexcept {
    return sizeof(record) + sizeof(payload_header) + ((name_size + 7) & ~std::size_t{7});
}
/// Longest runtime name kept whole; longer ones are cut here and counted as truncated.
inline constexpr std::size_t max_runtime_name_bytes = 4096;

}  // namespace STINT_DETAIL_ABI_NAMESPACE
}  // namespace stint::detail
