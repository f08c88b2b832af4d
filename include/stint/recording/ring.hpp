#pragma once
// The flight recorder's ring (design §7, "Flight recorder"): a session that never stops and never
// grows. When a thread needs a new chunk and the budget is spent (or its oldest chunk ended before the
// time span kept), it overwrites its own oldest chunk instead: only in the slow path, once per chunk,
// never per record. What a chunk held when it was overwritten is counted here, exactly.

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "stint/recording/buffer.hpp"

namespace stint::detail {
inline namespace STINT_DETAIL_ABI_NAMESPACE {

/// What a flight-recorder session keeps: the budget is the session's (begin_session); `span_ticks`,
/// when not 0, also overwrites a thread's oldest chunk once all its records ended that long ago.
struct ring_options {
    bool on = false;
    std::uint64_t span_ticks = 0;
};

/// Notes in `c`'s header the latest end tick of its records and the count of the program's records
/// (stint's overhead records and device links apart, as a drain counts them), once per use of the chunk.
/// Only the owner calls it, on a chunk it has moved past: nothing is written there any more.
inline void summarize_chunk(chunk& c) noexcept {
    if (c.ring_summarized) return;
    const std::byte* const end = c.published.load(std::memory_order_relaxed);
    if (!c.ring_mixed) {
        // 24-byte records only: counted from the size, the latest end the last record's (a thread's
        // records arrive in end order; an overhead record's end is read after the record it follows).
        // Reading a cold 64 KiB chunk instead cost the ring 9 % of a record's time (bench/).
        const auto count = static_cast<std::uint32_t>((end - c.data()) / static_cast<std::ptrdiff_t>(sizeof(record)));
        record last{};
        if (count > 0) std::memcpy(&last, end - sizeof(record), sizeof(record));
        c.ring_last_end = last.end_ticks;
        c.ring_records = count - std::min(count, c.ring_own_records);
        c.ring_summarized = true;
        return;
    }
    std::uint64_t last_end = 0;
    std::uint32_t records = 0;
    for (const std::byte* at = c.data(); at < end;) {
        record r;
        std::memcpy(&r, at, sizeof(r));
        const site& where = *r.where();
        std::size_t bytes = sizeof(record);
        if (has_payload(where.payload)) [[unlikely]] {
            payload_header header;
            std::memcpy(&header, at + sizeof(record), sizeof(header));
            bytes += header.bytes;
        }
        at += bytes;
        // Records arrive in end order on a thread, but an overhead record's end may trail: take the max.
        last_end = std::max(last_end, r.end_ticks);
        const bool attached = where.payload == payload_kind::outputs || where.payload == payload_kind::args;
        const bool own = where.kind == event_kind::overhead && !attached;
        records += !own && where.payload != payload_kind::device_link ? 1 : 0;
    }
    c.ring_last_end = last_end;
    c.ring_records = records;
    c.ring_summarized = true;
}

}  // namespace STINT_DETAIL_ABI_NAMESPACE
}  // namespace stint::detail
