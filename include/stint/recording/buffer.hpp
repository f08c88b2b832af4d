#pragma once
// Per-thread chunked single-writer buffers: the record layout, the chunk, and the append that scope
// exit calls. The hot path is `append_record`; everything else is the cold slow path in registry.hpp.

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>

#include "stint/detail/export_macros.hpp"
#include "stint/recording/site.hpp"

namespace stint::detail {
inline namespace STINT_DETAIL_ABI_NAMESPACE {

/// The fixed part of every record: which site, when it began and ended. A payload follows when the
/// site says so.
struct record {
    const site* where;
    std::uint64_t begin_ticks;
    std::uint64_t end_ticks;
};
static_assert(sizeof(record) == 24, "stint: a timing-only record must stay 24 bytes (design §6: <= 32)");

/// Header of a payload: its size in bytes (a multiple of 8, header included) and a kind-specific word.
struct payload_header {
    std::uint32_t bytes;
    std::uint32_t aux;
};
static_assert(sizeof(payload_header) == 8);

/// A fixed-size block of records owned by one thread while it fills it.
struct chunk {
    static constexpr std::size_t total_bytes = 64 * 1024;
    static constexpr std::size_t header_bytes = 64;
    static constexpr std::size_t data_bytes = total_bytes - header_bytes;

    /// End of the complete records. Release by the owner after each record; acquire in drain.
    std::atomic<std::byte*> published{nullptr};
    /// Next chunk of the same thread and session. Release by the owner; acquire in drain.
    std::atomic<chunk*> next{nullptr};

    std::byte* data() noexcept { return reinterpret_cast<std::byte*>(this) + header_bytes; }
    std::byte* data_end() noexcept { return reinterpret_cast<std::byte*>(this) + total_bytes; }
};
static_assert(sizeof(chunk) <= chunk::header_bytes);

struct thread_node;

/// The owning thread's view of its buffer. Only that thread reads or writes it; it is trivially
/// constructible and destructible so that a thread_local of it costs one TLS-relative access.
struct thread_buffer {
    std::byte* cursor = nullptr;   ///< where the next record goes
    std::byte* limit = nullptr;    ///< end of the current chunk; nullptr until the first record
    chunk* current = nullptr;
    std::uint32_t state = 0;       ///< the recording state (session) this buffer's chunks belong to
    bool dead = false;             ///< the thread is exiting: records are discarded
    thread_node* node = nullptr;
};

/// One buffer per thread and per shared object (a hidden-visibility library has its own copy; each
/// registers separately and the drain merges them by OS thread id).
inline constinit thread_local thread_buffer tls_buffer{};

/// Cold path of append: registration, a new session, a full chunk, an exhausted budget. (A template
/// only so that it can be out of line and cold yet defined in a header.)
template <int = 0>
STINT_DETAIL_COLD void append_record_slow(const site* where, std::uint64_t begin, std::uint64_t end,
                                                 std::uint32_t state, std::string_view name) noexcept;

/// Appends one timing-only record for the session `state`. Single writer: no lock, no CAS.
STINT_DETAIL_ALWAYS_INLINE void append_record(const site* where, std::uint64_t begin, std::uint64_t end,
                                              std::uint32_t state) noexcept {
    thread_buffer& buffer = tls_buffer;
    std::byte* at = buffer.cursor;
    if (buffer.state != state || static_cast<std::size_t>(buffer.limit - at) < sizeof(record)) [[unlikely]] {
        append_record_slow(where, begin, end, state, {});
        return;
    }
    ::new (at) record{where, begin, end};
    buffer.cursor = at + sizeof(record);
    // release: pairs with the acquire in drain_node(); the record's bytes are visible before its end.
    buffer.current->published.store(buffer.cursor, std::memory_order_release);
}

/// Bytes a record with a runtime name of `name_size` bytes occupies.
constexpr std::size_t named_record_bytes(std::size_t name_size) noexcept {
    return sizeof(record) + sizeof(payload_header) + ((name_size + 7) & ~std::size_t{7});
}
/// Longest runtime name kept whole; longer ones are cut here and counted as truncated.
inline constexpr std::size_t max_runtime_name_bytes = 4096;

}  // namespace STINT_DETAIL_ABI_NAMESPACE
}  // namespace stint::detail
