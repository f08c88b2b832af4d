#pragma once
// Walking the records of a chunk, and what a drain takes out of a thread's buffer: the record's
// payload as the drain hands it on, a flow's point, and the per-thread counts a drain reports.

#include <algorithm>    // std::min
#include <atomic>       // std::memory_order_acquire
#include <cstddef>      // std::byte, std::size_t
#include <cstdint>      // std::uint32_t, std::uint64_t
#include <cstring>      // std::memcpy
#include <span>         // std::span
#include <string>       // std::string
#include <string_view>  // std::string_view
#include <vector>       // std::vector

#include "stint/detail/export_macros.hpp"
#include "stint/recording/buffer.hpp"

namespace stint::detail {
inline namespace STINT_DETAIL_ABI_NAMESPACE {

/// The payload that follows a record, as the drain hands it on: the header's aux word and the bytes
/// after the header (padding included). Empty for timing-only records.
struct record_payload {
    std::uint32_t aux = 0;
    std::span<const std::byte> bytes;
};

/// A flow's or async span's point as its payload_kind::point payload holds it: a u64 id, then a runtime
/// name of `aux` bytes (none when aux is 0). Short payloads read as id 0 and no name.
struct point_payload {
    std::uint64_t id = 0;
    std::string_view name;
};
inline point_payload read_point(const record_payload& payload) noexcept {
    point_payload point;
    if (payload.bytes.size() < sizeof(point.id)) return point;
    std::memcpy(&point.id, payload.bytes.data(), sizeof(point.id));
    const std::size_t size = std::min<std::size_t>(payload.aux, payload.bytes.size() - sizeof(point.id));
    point.name = {reinterpret_cast<const char*>(payload.bytes.data()) + sizeof(point.id), size};
    return point;
}

/// Calls `on_record(record, payload)` for each complete record in [from, end) (record boundaries).
template <class OnRecord>
void for_each_record(const std::byte* from, const std::byte* end, OnRecord&& on_record) {
    for (const std::byte* at = from; at < end;) {
        record r;
        std::memcpy(&r, at, sizeof(r));
        std::size_t bytes = sizeof(record);
        record_payload payload;
        if (has_payload(r.where()->payload)) {
            payload_header header;
            std::memcpy(&header, at + sizeof(record), sizeof(header));
            bytes += header.bytes;
            payload.aux = header.aux;
            payload.bytes = {at + sizeof(record) + sizeof(header), header.bytes - sizeof(header)};
        }
        at += bytes;
        on_record(r, payload);
    }
}

/// Calls `on_record(record, payload)` for each complete record of `c` from `from` (a record boundary)
/// to what its owner has published; returns that end (read once: the owner may publish more meanwhile).
template <class OnRecord>
const std::byte* for_each_record(chunk& c, const std::byte* from, OnRecord&& on_record) {
    const std::byte* const end = c.published.load(std::memory_order_acquire);
    for_each_record(from, end, on_record);
    return end;
}

/// What a drain takes out of one thread's buffer (one node: a thread and a shared object): the chunks
/// its owner has moved past, as a chain the taker now owns (give each back with
/// registry::release_chunk), and a copy of what the owner had published in the chunk it keeps writing
/// into. Records of scopes that ended after `stop_ticks` are in them and belong to no window.
struct taken_records {
    const void* node = nullptr;   ///< which buffer (a streamed session's later takes name it again)
    std::uint64_t os_tid = 0;
    std::string name;
    std::uint64_t dropped = 0;    ///< records lost to the budget
    std::uint64_t truncated = 0;  ///< runtime names cut
    chunk* chunks = nullptr;      ///< linked by chunk::next
    std::vector<std::byte> tail;
    /// Flight recorder: the program's records overwritten before these, and the latest end tick among
    /// all records overwritten (0: none), after which the buffer's records are complete.
    std::uint64_t overwritten = 0;
    std::uint64_t overwritten_until = 0;
};

/// Counts a drain reports per thread.
struct drained_thread {
    std::uint64_t os_tid = 0;
    std::string name;
    std::uint64_t recorded = 0;   ///< records of the program (stint's own overhead records apart)
    std::uint64_t overhead = 0;   ///< stint's own records (event_kind::overhead)
    std::uint64_t dropped = 0;
    std::uint64_t truncated = 0;
    std::uint64_t overwritten = 0;        ///< flight recorder: records overwritten before these
    std::uint64_t overwritten_until = 0;  ///< ... the latest end tick among them (0: none)
};

}  // namespace STINT_DETAIL_ABI_NAMESPACE
}  // namespace stint::detail
