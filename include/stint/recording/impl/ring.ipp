#pragma once
// The flight recorder ring's bodies: summarizing, copying, overwriting and taking a thread's chunks.

#include "stint/recording/ring.hpp"

#include <algorithm>  // std::max, std::min
#include <atomic>     // std::memory_order_acquire
#include <cstring>    // std::memcpy

#include "stint/recording/chunk_pool.hpp"
#include "stint/recording/record_walk.hpp"

namespace stint::detail {
inline namespace STINT_DETAIL_ABI_NAMESPACE {

void summarize_chunk(chunk& c) noexcept {
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

void copy_node_ring(thread_node& node, taken_records& taken) {
    const auto append = [&](chunk& c) {
        const std::byte* const end = c.published.load(std::memory_order_acquire);  // pairs with the owner's release
        taken.tail.insert(taken.tail.end(), static_cast<const std::byte*>(c.data()), end);
    };
    chunk* next = nullptr;
    chunk* last = nullptr;
    std::uint64_t unlinked = 0;
    std::uint64_t ahead = 1;  // chunks before `next` in the chain, as of the last hold
    {
        const ring_guard hold(node);
        read_ring_counts(node, taken);
        chunk* head = node.head.load(std::memory_order_acquire);
        last = node.current.load(std::memory_order_acquire);
        if (head == nullptr) return;
        std::size_t bytes = 0;  // room for the whole chain: no reallocation while the owner waits
        for (chunk* c = head; c != nullptr; c = c == last ? nullptr : c->next.load(std::memory_order_acquire)) {
            bytes += c->total();
        }
        taken.tail.reserve(bytes);
        append(*head);
        if (head == last) return;
        next = head->next.load(std::memory_order_acquire);
        unlinked = node.chunks_unlinked;
    }
    while (next != nullptr) {
        const ring_guard hold(node);
        const std::uint64_t since = node.chunks_unlinked - unlinked;
        if (since >= ahead) {
            // `next` may be overwritten, or back in the pool: never touch it. Copy the node whole.
            taken.tail.clear();
            read_ring_counts(node, taken);
            chunk* const current = node.current.load(std::memory_order_acquire);
            for (chunk* c = node.head.load(std::memory_order_acquire); c != nullptr;
                 c = c == current ? nullptr : c->next.load(std::memory_order_acquire)) {
                append(*c);
            }
            return;
        }
        ahead -= since;
        unlinked = node.chunks_unlinked;
        append(*next);
        if (next == last) return;
        next = next->next.load(std::memory_order_acquire);
        ++ahead;
    }
}

void read_ring_counts(const thread_node& node, taken_records& taken) noexcept {
    taken.overwritten = node.overwritten;
    taken.overwritten_until = node.overwritten_until;
    taken.dropped = node.dropped.load(std::memory_order_relaxed);
    taken.truncated = node.truncated.load(std::memory_order_relaxed);
}

chunk* unlink_oldest(const chunk_pool& pool, thread_buffer& buffer, std::uint64_t only_older_than) noexcept {
    thread_node& node = *buffer.node;
    const ring_guard hold(node);  // another thread may be taking this head (take_richest_oldest)
    // A crash dump stores ring_frozen, then waits until it sees each node's lock free (both seq_cst); here
    // the lock is taken, then the freeze read. That handshake needs seq_cst on this side too: the lock's
    // acquire alone lets the load pass the lock's store (ARM), and both sides would go on. Once a chunk.
    std::atomic_thread_fence(std::memory_order_seq_cst);
    if (pool.ring_frozen.load(std::memory_order_seq_cst)) return nullptr;
    chunk* head = node.head.load(std::memory_order_relaxed);
    if (head == nullptr) return nullptr;
    if (only_older_than != 0 && head == buffer.current) return nullptr;
    summarize_chunk(*head);
    if (only_older_than != 0 && head->ring_last_end >= only_older_than) return nullptr;
    if (head != buffer.current) node.head.store(head->next.load(std::memory_order_relaxed), std::memory_order_release);
    node.overwritten += head->ring_records;
    node.overwritten_until = std::max(node.overwritten_until, head->ring_last_end);
    ++node.chunks_unlinked;
    head->next.store(nullptr, std::memory_order_relaxed);
    head->published.store(head->data(), std::memory_order_relaxed);
    head->reset_ring_notes();
    return head;
}

chunk* overwrite_oldest(chunk_pool& pool, thread_buffer& buffer, std::uint32_t size_class, std::size_t min_data,
                        std::uint64_t only_older_than) {
    thread_node& node = *buffer.node;
    chunk* c = unlink_oldest(pool, buffer, only_older_than);
    if (only_older_than != 0) {
        if (c == nullptr) return nullptr;
        bool refunded = false;
        while (chunk* old = unlink_oldest(pool, buffer, only_older_than)) {
            node.ring_bytes.fetch_sub(old->total(), std::memory_order_relaxed);
            pool.refund_and_release(old);
            refunded = true;
        }
        // The budget has room again: threads may take chunks from the pool (seq_cst, as next_chunk's mark).
        std::uint32_t spent = buffer.state;
        if (refunded) pool.exhausted_state.compare_exchange_strong(spent, 0, std::memory_order_seq_cst);
    }
    if (c == nullptr || c == buffer.current) return c;
    if (c->size_class < size_class && pool.charge(size_class)) {
        // A thread's first chunks are small; where the budget allows, the ring grows them as a
        // thread's chain grows, or a short span would keep the thread on its smallest chunks.
        chunk* bigger = nullptr;
        try {
            bigger = pool.take_uncharged(size_class);
        } catch (...) {
            pool.refund_charge(size_class);
            return c;
        }
        node.ring_bytes.fetch_sub(c->total(), std::memory_order_relaxed);
        pool.refund_and_release(c);
        return bigger;  // counted in ring_bytes when linked
    }
    node.ring_bytes.fetch_sub(c->total(), std::memory_order_relaxed);  // counted again when linked
    if (static_cast<std::size_t>(c->data_end() - c->data()) < min_data) {
        // Too small for this record (a large payload): its bytes may buy a chunk that holds it.
        pool.refund_and_release(c);
        return pool.acquire(chunk::class_for_data(min_data), min_data);
    }
    return c;
}

chunk* take_oldest_of(const chunk_pool& pool, thread_node& richest, std::uint64_t held, std::size_t min_data) noexcept {
    const ring_guard hold(richest);
    std::atomic_thread_fence(std::memory_order_seq_cst);  // as in unlink_oldest
    if (pool.ring_frozen.load(std::memory_order_seq_cst)) return nullptr;
    chunk* head = richest.head.load(std::memory_order_acquire);
    if (head == nullptr || static_cast<std::size_t>(head->data_end() - head->data()) < min_data) return nullptr;
    // Only a chunk its owner has moved past: it then writes only after node.current (registry.hpp).
    chunk* const next = head->next.load(std::memory_order_acquire);
    if (next == nullptr || head == richest.current.load(std::memory_order_acquire) ||
        richest.ring_bytes.load(std::memory_order_relaxed) < held + 2 * head->total()) {
        return nullptr;
    }
    summarize_chunk(*head);
    richest.head.store(next, std::memory_order_release);
    richest.overwritten += head->ring_records;
    richest.overwritten_until = std::max(richest.overwritten_until, head->ring_last_end);
    ++richest.chunks_unlinked;
    richest.ring_bytes.fetch_sub(head->total(), std::memory_order_relaxed);
    head->next.store(nullptr, std::memory_order_relaxed);
    head->published.store(head->data(), std::memory_order_relaxed);
    head->reset_ring_notes();
    return head;
}

}  // namespace STINT_DETAIL_ABI_NAMESPACE
}  // namespace stint::detail
