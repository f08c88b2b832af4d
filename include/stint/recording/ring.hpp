#pragma once
// The flight recorder's ring (design §7, "Flight recorder"): a session that never stops and never
// grows. When a thread needs a new chunk and the budget is spent (or its oldest chunk ended before the
// time span kept), it overwrites its own oldest chunk instead: only in the slow path, once per chunk,
// never per record. What a chunk held when it was overwritten is counted here, exactly.

#include <cstddef>  // std::size_t
#include <cstdint>  // std::uint32_t, std::uint64_t

#include "stint/detail/export_macros.hpp"
#include "stint/detail/separate_compilation.hpp"
#include "stint/recording/buffer.hpp"
#include "stint/recording/thread_node.hpp"

namespace stint::detail {
inline namespace STINT_DETAIL_ABI_NAMESPACE {

class chunk_pool;      // recording/chunk_pool.hpp
struct taken_records;  // recording/record_walk.hpp

/// What a flight-recorder session keeps: the budget is the session's (begin_session); `span_ticks`,
/// when not 0, also overwrites a thread's oldest chunk once all its records ended that long ago.
struct ring_options {
    bool on = false;
    std::uint64_t span_ticks = 0;
};

/// Notes in `c`'s header the latest end tick of its records and the count of the program's records
/// (stint's overhead records and device links apart, as a drain counts them), once per use of the chunk.
/// Only the owner calls it, on a chunk it has moved past: nothing is written there any more.
STINT_DECL void summarize_chunk(chunk& c) noexcept;

/// Copies `node`'s chain into `taken.tail`, a chunk per hold of its ring lock. Between holds the
/// owner may overwrite its oldest chunks (unlinking them from the head): the next chunk to copy is
/// still linked while fewer chunks were unlinked since than stood before it. Otherwise (the ring
/// turned past the copy) the node is copied again under one hold.
STINT_DECL void copy_node_ring(thread_node& node, taken_records& taken);

/// Copies the node's counts (overwritten, dropped, cut names) into `taken`, under its ring lock.
STINT_DECL void read_ring_counts(const thread_node& node, taken_records& taken) noexcept;

/// Unlinks the thread's oldest chunk and counts what it held as overwritten (under the node's ring
/// lock, so that no dump is copying it and no other thread is taking it). When it is also the current
/// chunk, the thread keeps it. `only_older_than` not 0: only a chunk moved past whose records all
/// ended before that tick, else null. Null while `pool.ring_frozen` (a crash dump is copying).
STINT_DECL chunk* unlink_oldest(const chunk_pool& pool, thread_buffer& buffer, std::uint64_t only_older_than = 0) noexcept;

/// The thread's oldest chunk to write into next, its records counted as overwritten: when the
/// budget is spent, or (`only_older_than` not 0) when all its records ended before that tick, in
/// which case every further chunk that old goes back to `pool` (the ring shrinks when the program
/// records less). Null when there is none to overwrite or it cannot hold `min_data` bytes.
STINT_DECL chunk* overwrite_oldest(chunk_pool& pool, thread_buffer& buffer, std::uint32_t size_class,
                                   std::size_t min_data, std::uint64_t only_older_than);

/// Takes the oldest chunk of `richest` (the thread that holds most of a spent flight recorder's
/// budget) for a thread that holds `held` bytes, while `richest` keeps at least two chunks and the
/// chunk holds `min_data` bytes: only a chunk its owner has moved past. Null when none is taken.
/// Under the registry mutex (registry::take_richest_oldest chooses `richest`). Null while `pool.ring_frozen`.
STINT_DECL chunk* take_oldest_of(const chunk_pool& pool, thread_node& richest, std::uint64_t held,
                                 std::size_t min_data) noexcept;

}  // namespace STINT_DETAIL_ABI_NAMESPACE
}  // namespace stint::detail

#if defined(STINT_HEADER_ONLY)
#include "stint/recording/impl/ring.ipp"
#endif
