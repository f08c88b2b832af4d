#pragma once
// Reporting allocations to a memory-profiling session (stint::profile_memory): any allocator calls
// report_alloc / report_free / report_oom; the adapters in this folder call them for you.

#include <atomic>   // std::atomic, std::memory_order_relaxed
#include <cstddef>  // std::size_t
#include <cstdint>  // std::int64_t, std::uint32_t, std::uint8_t, std::uint64_t

#include "stint/common/device.hpp"
#include "stint/recording/slow_path.hpp"
#include "stint/recording/state.hpp"

namespace stint::detail {
inline namespace STINT_DETAIL_ABI_NAMESPACE {

/// The recording state of the live memory-profiling session, 0 when none is: the one relaxed load
/// report_* pay outside such a session. Set by the session after it opens, cleared before it drains.
STINT_DETAIL_EXPORT inline constinit std::atomic<std::uint32_t> memory_state{0};
/// Orders memory events across threads (a relaxed fetch_add: its modification order agrees with
/// happens-before), so the drain can size a free from its allocation even when another thread freed it.
STINT_DETAIL_EXPORT inline constinit std::atomic<std::uint64_t> memory_sequence{0};
/// Memory events lost to the buffer budget in the live session (they are also in the thread's drops).
STINT_DETAIL_EXPORT inline constinit std::atomic<std::uint64_t> memory_events_dropped{0};

/// A memory event's payload after its record (begin = end = when it was reported).
struct memory_payload {
    std::uint64_t addr = 0;
    std::int64_t bytes = 0;
    std::int64_t total_allocated = 0;
    std::int64_t total_reserved = 0;
    std::uint64_t sequence = 0;
    std::int32_t device_index = -1;
    std::uint8_t device_type = 0;
    std::uint8_t flags = 0;  // memory_free, memory_size_known, memory_totals_given
    std::uint16_t unused = 0;
};
static_assert(sizeof(memory_payload) == 48);
inline constexpr std::uint8_t memory_free = 1;
inline constexpr std::uint8_t memory_size_known = 2;
inline constexpr std::uint8_t memory_totals_given = 4;

inline constexpr site memory_site{"[memory]", event_kind::memory, payload_kind::memory, {}};
inline constexpr site out_of_memory_site{"[OutOfMemory]", event_kind::out_of_memory, payload_kind::memory, {}};

/// Appends one memory event for session `state` on this thread, unless the allocation is stint's own
/// (own_allocation_scope: a buffer chunk, a thread's registration, this very append).
STINT_DETAIL_NOINLINE inline void record_memory(const site& where, std::uint32_t state, memory_payload payload) noexcept {
    if (own_allocations != 0) return;
    const own_allocation_scope own;
    payload.sequence = memory_sequence.fetch_add(1, std::memory_order_relaxed);
    const std::uint64_t now = read_ticks();
    if (!append_record_payload(&where, current_depth(), now, now, state, 0,
                               payload_bytes{&payload, sizeof payload})) {
        memory_events_dropped.fetch_add(1, std::memory_order_relaxed);
    }
}

inline memory_payload make_memory_payload(const void* ptr, std::int64_t bytes, device where,
                                          std::uint8_t flags) noexcept {
    memory_payload p;
    p.addr = reinterpret_cast<std::uintptr_t>(ptr);
    p.bytes = bytes;
    p.device_index = where.index;
    p.device_type = static_cast<std::uint8_t>(where.type);
    p.flags = flags;
    return p;
}

/// An OOM seen by an adapter, which knows no totals: the drain fills them with the session's live bytes.
inline void report_oom_without_totals(std::size_t bytes_requested, device where) noexcept {
    const std::uint32_t state = memory_state.load(std::memory_order_relaxed);
    if (state == 0) return;
    record_memory(out_of_memory_site, state,
                  make_memory_payload(nullptr, static_cast<std::int64_t>(bytes_requested), where, 0));
}

}  // namespace STINT_DETAIL_ABI_NAMESPACE
}  // namespace stint::detail

namespace stint {

/// An allocator's own view of a device's memory, when it has one (a caching allocator reserves more
/// than it hands out): what the trace writes as "Total Allocated" and "Total Reserved".
struct memory_totals {
    std::int64_t allocated = 0;
    std::int64_t reserved = 0;
};

/// Reports that `bytes` at `ptr` were allocated on `where` (the CPU unless said). Costs one relaxed load
/// when no profile_memory session is live. Without `totals`, the trace's totals are the bytes allocated
/// during the session and still live on that device.
///
///     void* p = my_pool.allocate(n);
///     stint::report_alloc(p, n);                                   // host memory
///     stint::report_alloc(d, n, {stint::device_type::cuda, 0});    // device memory
inline void report_alloc(const void* ptr, std::size_t bytes, device where = {}) noexcept {
    const std::uint32_t state = detail::memory_state.load(std::memory_order_relaxed);
    if (state == 0) [[likely]] return;
    detail::record_memory(detail::memory_site, state,
                          detail::make_memory_payload(ptr, static_cast<std::int64_t>(bytes), where,
                                                      detail::memory_size_known));
}
inline void report_alloc(const void* ptr, std::size_t bytes, device where, memory_totals totals) noexcept {
    const std::uint32_t state = detail::memory_state.load(std::memory_order_relaxed);
    if (state == 0) [[likely]] return;
    detail::memory_payload p = detail::make_memory_payload(ptr, static_cast<std::int64_t>(bytes), where,
                                                           detail::memory_size_known | detail::memory_totals_given);
    p.total_allocated = totals.allocated;
    p.total_reserved = totals.reserved;
    detail::record_memory(detail::memory_site, state, p);
}

/// Reports that the block at `ptr` on `where` was freed. Its size is found from its allocation when
/// the session is drained (the trace shows it as negative "Bytes", as torch does); a block allocated
/// before the session started shows 0 bytes and leaves the totals alone. Null is ignored.
inline void report_free(const void* ptr, device where = {}) noexcept {
    const std::uint32_t state = detail::memory_state.load(std::memory_order_relaxed);
    if (state == 0 || ptr == nullptr) [[likely]] return;
    detail::record_memory(detail::memory_site, state, detail::make_memory_payload(ptr, 0, where, detail::memory_free));
}
/// The same for an allocator that knows the size (a sized deallocate): a block from before the session
/// then still shows its negative bytes, and still leaves the totals alone.
inline void report_free(const void* ptr, std::size_t bytes, device where = {}) noexcept {
    const std::uint32_t state = detail::memory_state.load(std::memory_order_relaxed);
    if (state == 0 || ptr == nullptr) [[likely]] return;
    detail::record_memory(detail::memory_site, state,
                          detail::make_memory_payload(ptr, -static_cast<std::int64_t>(bytes), where,
                                                      detail::memory_free | detail::memory_size_known));
}

/// Reports an allocation of `bytes_requested` on `where` that failed, with the allocator's totals then:
/// an "[OutOfMemory]" instant (torch's OUT_OF_MEMORY_EVENT_NAME). Call it before throwing.
inline void report_oom(std::size_t bytes_requested, device where, std::int64_t total_allocated,
                       std::int64_t total_reserved) noexcept {
    const std::uint32_t state = detail::memory_state.load(std::memory_order_relaxed);
    if (state == 0) [[likely]] return;
    detail::memory_payload p = detail::make_memory_payload(nullptr, static_cast<std::int64_t>(bytes_requested), where,
                                                           detail::memory_totals_given);
    p.total_allocated = total_allocated;
    p.total_reserved = total_reserved;
    detail::record_memory(detail::out_of_memory_site, state, p);
}

}  // namespace stint
