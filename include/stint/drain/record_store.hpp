#pragma once
// A closed session's records, kept as the threads wrote them: the chunks a drain took out of the
// thread buffers (design §8). An event list is built from them when something asks for one; a Chrome
// trace of timing-only records is written from them directly, so that stopping and exporting a big
// session needs no memory beyond the records' own.

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <utility>
#include <vector>

#include "stint/analysis/event.hpp"
#include "stint/annotations/detail/counter_record.hpp"
#include "stint/detail/deferred.hpp"
#include "stint/recording/clock.hpp"
#include "stint/recording/registry.hpp"

namespace stint::detail {

/// A counter's sample as its payload_kind::counter payload holds it (annotations/detail/counter_record.hpp):
/// 8 bytes, an int64 or a double as the header's aux says. A short payload reads as the integer 0.
template <class = void>
counter_value read_counter(const record_payload& payload) noexcept {
    counter_value value;
    std::uint64_t bits = 0;
    if (payload.bytes.size() < sizeof(bits)) return value;
    std::memcpy(&bits, payload.bytes.data(), sizeof(bits));
    value.is_real = payload.aux == counter_real;
    if (value.is_real) {
        value.real = std::bit_cast<double>(bits);
    } else {
        value.integer = static_cast<std::int64_t>(bits);
    }
    return value;
}

/// Keeps only the records of `bytes` (whole records, as a thread wrote them) that ended in [from, to]:
/// a flight recorder's dump of the last steps.
template <class = void>
void keep_records_ending_between(std::vector<std::byte>& bytes, std::uint64_t from, std::uint64_t to) {
    std::byte* out = bytes.data();
    const std::byte* const end = bytes.data() + bytes.size();
    for (std::byte* at = bytes.data(); at < end;) {
        record r;
        std::memcpy(&r, at, sizeof(r));
        std::size_t size = sizeof(record);
        if (has_payload(r.where()->payload)) {
            payload_header header;
            std::memcpy(&header, at + sizeof(record), sizeof(header));
            size += header.bytes;
        }
        if (r.end_ticks >= from && r.end_ticks <= to) {
            if (out != at) std::memmove(out, at, size);
            out += size;
        }
        at += size;
    }
    bytes.resize(static_cast<std::size_t>(out - bytes.data()));
}

template <class = void>
class basic_record_store;
/// basic_record_store's one form (a template only so that a file that does not use it does not compile it).
using record_store = basic_record_store<>;

/// The records of one closed session, per thread buffer (a thread and a shared object), in the order
/// the drain found the buffers. Move-only; gives its chunks back to the pool when destroyed.
template <class Unused>
class basic_record_store {
    template <class T>
    using later = deferred_t<T, Unused>;  // checked when used (detail/deferred.hpp)

public:
    /// One buffer's records and what a drain reports of them.
    struct thread_records {
        const void* node = nullptr;    ///< which buffer it was (taken_records::node)
        drained_thread counts;
        chunk* chunks = nullptr;       ///< full chunks, linked by chunk::next
        std::vector<std::byte> tail;   ///< the records of the chunk its owner kept writing into
        std::uint64_t events = 0;      ///< records that become events (not outputs, not device links)
        /// Begin tick of its first non-instant record (a viewer's origin for the row), or the maximum.
        std::uint64_t first_start_ticks = std::numeric_limits<std::uint64_t>::max();
        bool timing_only = true;       ///< every record is timing-only or carries only a runtime name or
                                       ///< a counter's value
    };

    basic_record_store() = default;
    basic_record_store(const basic_record_store&) = delete;
    basic_record_store& operator=(const basic_record_store&) = delete;
    basic_record_store(basic_record_store&& other) noexcept { *this = std::move(other); }
    basic_record_store& operator=(basic_record_store&& other) noexcept {
        if (this != &other) {
            release_all();
            threads_ = std::move(other.threads_);
            other.threads_.clear();
            stop_ticks = other.stop_ticks;
            calibration = other.calibration;
            late = other.late;
            buffer_bytes = other.buffer_bytes;
            memory_dropped = other.memory_dropped;
            partly_released_ = other.partly_released_;
        }
        return *this;
    }
    ~basic_record_store() { release_all(); }

    /// Takes one buffer's records (from registry::end_session) and counts them.
    void add(taken_records&& taken) {
        thread_records& t = threads_.emplace_back();
        t.node = taken.node;
        t.counts.os_tid = taken.os_tid;
        t.counts.name = std::move(taken.name);
        t.counts.dropped = taken.dropped;
        t.counts.truncated = taken.truncated;
        t.counts.overwritten = taken.overwritten;
        t.counts.overwritten_until = taken.overwritten_until;
        t.chunks = taken.chunks;
        t.tail = std::move(taken.tail);
        for_each_record(t, [&](const record& r, const record_payload&) {
            const site& where = *r.where();
            // A device link is part of the scope record before it, not a record of its own; outputs
            // and args are the program's records but make no event.
            const bool attached = where.payload == payload_kind::outputs || where.payload == payload_kind::args;
            if (where.payload != payload_kind::device_link) {
                const bool own = where.kind == event_kind::overhead && !attached;
                ++(own ? t.counts.overhead : t.counts.recorded);
            }
            if (where.payload == payload_kind::device_link || attached) {
                t.timing_only = false;
                return;
            }
            ++t.events;
            // A counter's value is written from the records too (chrome_trace_records.hpp).
            if (where.payload != payload_kind::none && where.payload != payload_kind::runtime_name &&
                where.payload != payload_kind::counter) {
                t.timing_only = false;
            }
            if (where.kind != event_kind::instant && !is_point_kind(where.kind) &&
                where.kind != event_kind::counter) {
                t.first_start_ticks = std::min(t.first_start_ticks, r.begin_ticks);
            }
        });
    }

    [[nodiscard]] std::span<thread_records> threads() noexcept { return threads_; }
    [[nodiscard]] std::span<const thread_records> threads() const noexcept { return threads_; }

    /// Puts `earlier`'s records (taken from the same session's buffers before these, without tails: a
    /// stream's batch it could not write) in front of each buffer's records here. Counts of records add
    /// up; drop and truncation counts stay this store's, which were read later (they only grow).
    /// Buffers whose records `earlier` no longer holds (given back) are left out.
    void prepend(basic_record_store&& earlier) {
        for (thread_records& e : earlier.threads_) {
            if (e.chunks == nullptr) continue;  // given back, or never any
            thread_records* t = nullptr;
            for (thread_records& mine : threads_) {
                if (mine.node == e.node) t = &mine;
            }
            if (t == nullptr) {
                threads_.push_back(std::move(e));
                e.chunks = nullptr;  // the store here owns them now
                continue;
            }
            chunk* last = e.chunks;
            while (last->next.load(std::memory_order_relaxed) != nullptr) last = last->next.load(std::memory_order_relaxed);
            last->next.store(t->chunks, std::memory_order_relaxed);
            t->chunks = std::exchange(e.chunks, nullptr);
            t->counts.recorded += e.counts.recorded;
            t->counts.overhead += e.counts.overhead;
            t->events += e.events;
            t->first_start_ticks = std::min(t->first_start_ticks, e.first_start_ticks);
            t->timing_only = t->timing_only && e.timing_only;
        }
    }

    /// Records that become events, over all buffers.
    [[nodiscard]] std::uint64_t events() const noexcept {
        std::uint64_t n = 0;
        for (const thread_records& t : threads_) n += t.events;
        return n;
    }

    /// Calls `on_record(record, payload)` for each of the buffer's records of the window (scopes that
    /// ended after the stop belong to none), in the order the thread wrote them.
    template <class OnRecord>
    void for_each_record(const thread_records& t, OnRecord&& on_record) const {
        const auto in_window = [&](const record& r, const record_payload& payload) {
            if (r.end_ticks <= stop_ticks) on_record(r, payload);
        };
        for (chunk* c = t.chunks; c != nullptr; c = c->next.load(std::memory_order_relaxed)) {
            stint::detail::for_each_record(c->data(), c->published.load(std::memory_order_acquire), in_window);
        }
        stint::detail::for_each_record(t.tail.data(), t.tail.data() + t.tail.size(), in_window);
    }

    /// The byte ranges of the buffer's records (each a whole number of records), in the order written.
    [[nodiscard]] std::vector<std::pair<const std::byte*, const std::byte*>> ranges(const thread_records& t) const {
        later<std::vector<std::pair<const std::byte*, const std::byte*>>> out;
        for (chunk* c = t.chunks; c != nullptr; c = c->next.load(std::memory_order_relaxed)) {
            out.emplace_back(c->data(), c->published.load(std::memory_order_acquire));
        }
        out.emplace_back(t.tail.data(), t.tail.data() + t.tail.size());
        return out;
    }

    /// Hands one buffer's chunks over (a streamed session gives them back to its budget itself).
    [[nodiscard]] chunk* take_chunks(thread_records& t) noexcept {
        partly_released_ = partly_released_ || t.chunks != nullptr || !t.tail.empty();
        std::vector<std::byte>().swap(t.tail);
        return std::exchange(t.chunks, nullptr);
    }

    /// Gives one buffer's chunks back to the pool (its records are read: the counts stay).
    void release(thread_records& t) noexcept {
        partly_released_ = partly_released_ || t.chunks != nullptr || !t.tail.empty();
        for (chunk* c = std::exchange(t.chunks, nullptr); c != nullptr;) {
            chunk* next = c->next.load(std::memory_order_relaxed);
            the_registry().release_chunk(c);
            c = next;
        }
        std::vector<std::byte>().swap(t.tail);
    }

    std::uint64_t stop_ticks = 0;       ///< records that ended after it belong to no window
    tick_calibration calibration;       ///< ticks to ns since the window's start
    std::uint64_t late = 0;             ///< late records of earlier sessions found by this drain
    std::uint64_t buffer_bytes = 0;     ///< record buffers the session used
    std::uint64_t memory_dropped = 0;   ///< memory events lost to the budget

    /// Whether some buffer's records went back (release, take_chunks): the store no longer holds them all.
    [[nodiscard]] bool partly_released() const noexcept { return partly_released_; }

private:
    void release_all() noexcept {
        for (thread_records& t : threads_) release(t);
    }

    later<std::vector<thread_records>> threads_;
    bool partly_released_ = false;
};

}  // namespace stint::detail
