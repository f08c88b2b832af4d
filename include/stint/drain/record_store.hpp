#pragma once
// A closed session's records, kept as the threads wrote them: the chunks a drain took out of the
// thread buffers (design §8). An event list is built from them when something asks for one; a Chrome
// trace of timing-only records is written from them directly, so that stopping and exporting a big
// session needs no memory beyond the records' own.

#include <cstddef>  // std::byte, std::size_t
#include <cstdint>  // std::uint64_t
#include <limits>  // std::numeric_limits
#include <span>  // std::span
#include <utility>  // std::exchange, std::move, std::pair
#include <vector>  // std::vector

#include "stint/analysis/event.hpp"
#include "stint/annotations/detail/counter_record.hpp"
#include "stint/detail/separate_compilation.hpp"
#include "stint/recording/clock.hpp"
#include "stint/recording/registry.hpp"

namespace stint::detail {

/// A counter's sample as its payload_kind::counter payload holds it (annotations/detail/counter_record.hpp):
/// 8 bytes, an int64 or a double as the header's aux says. A short payload reads as the integer 0.
STINT_DECL counter_value read_counter(const record_payload& payload) noexcept;

/// Keeps only the records of `bytes` (whole records, as a thread wrote them) that ended in [from, to]:
/// a flight recorder's dump of the last steps.
STINT_DECL void keep_records_ending_between(std::vector<std::byte>& bytes, std::uint64_t from, std::uint64_t to);

/// The records of one closed session, per thread buffer (a thread and a shared object), in the order
/// the drain found the buffers. Move-only; gives its chunks back to the pool when destroyed.
class record_store {
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

    record_store() = default;
    record_store(const record_store&) = delete;
    record_store& operator=(const record_store&) = delete;
    record_store(record_store&& other) noexcept { *this = std::move(other); }
    STINT_DECL record_store& operator=(record_store&& other) noexcept;
    ~record_store() { release_all(); }

    /// Takes one buffer's records (from registry::end_session) and counts them.
    STINT_DECL void add(taken_records&& taken);

    [[nodiscard]] std::span<thread_records> threads() noexcept { return threads_; }
    [[nodiscard]] std::span<const thread_records> threads() const noexcept { return threads_; }

    /// Puts `earlier`'s records (taken from the same session's buffers before these, without tails: a
    /// stream's batch it could not write) in front of each buffer's records here. Counts of records add
    /// up; drop and truncation counts stay this store's, which were read later (they only grow).
    /// Buffers whose records `earlier` no longer holds (given back) are left out.
    STINT_DECL void prepend(record_store&& earlier);

    /// Records that become events, over all buffers.
    [[nodiscard]] STINT_DECL std::uint64_t events() const noexcept;

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
    [[nodiscard]] STINT_DECL std::vector<std::pair<const std::byte*, const std::byte*>> ranges(const thread_records& t) const;

    /// Hands one buffer's chunks over (a streamed session gives them back to its budget itself).
    [[nodiscard]] STINT_DECL chunk* take_chunks(thread_records& t) noexcept;

    /// Gives one buffer's chunks back to the pool (its records are read: the counts stay).
    STINT_DECL void release(thread_records& t) noexcept;

    std::uint64_t stop_ticks = 0;       ///< records that ended after it belong to no window
    tick_calibration calibration;       ///< ticks to ns since the window's start
    std::uint64_t late = 0;             ///< late records of earlier sessions found by this drain
    std::uint64_t buffer_bytes = 0;     ///< record buffers the session used
    std::uint64_t memory_dropped = 0;   ///< memory events lost to the budget

    /// Whether some buffer's records went back (release, take_chunks): the store no longer holds them all.
    [[nodiscard]] bool partly_released() const noexcept { return partly_released_; }

private:
    STINT_DECL void release_all() noexcept;

    std::vector<thread_records> threads_;
    bool partly_released_ = false;
};

}  // namespace stint::detail

#if defined(STINT_HEADER_ONLY)
#include "stint/drain/impl/record_store.ipp"
#endif
