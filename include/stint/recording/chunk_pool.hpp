#pragma once
// The chunk pool: chunks for all threads within a byte budget per session, kept warm between sessions,
// and faulted in ahead of demand while a session records.

#include <algorithm>  // std::max, std::min
#include <array>      // std::array
#include <atomic>     // std::atomic
#include <cstddef>    // std::size_t
#include <cstdint>    // std::int64_t, std::uint32_t, std::uint64_t
#include <mutex>      // std::mutex
#include <span>       // std::span
#include <vector>     // std::vector

#include "stint/detail/separate_compilation.hpp"
#include "stint/recording/buffer.hpp"
#include "stint/recording/chunk_memory.hpp"

namespace stint::detail {
inline namespace STINT_DETAIL_ABI_NAMESPACE {

/// Chunks for all threads, within a byte budget per session. Touched once per filled chunk.
///
/// Fresh memory is the dominant cost of recording: a first-touched page costs far more than the
/// records written into it (chunk_memory.hpp has the numbers, and why largest chunks come in huge-page
/// slabs). So the pool keeps drained chunks warm for the next session, up to `retained_bytes` (the
/// last session's use while its profiler lives); `reserve` pre-faults chunks before a session; and
/// while a session records, a thread of the pool's own faults largest chunks in ahead of demand
/// (start_prefaulting), so that recording threads take resident chunks with no option to know about.
/// Chunks are cached per size class; the budget is charged each chunk's real size when a recording
/// thread takes it. Largest chunks are faulted in a slab (32 of them) at a time, but only while the
/// budget left could pay for the whole slab: a small budget never maps more than it may use.
class chunk_pool {
public:
    /// Bytes kept between sessions when no profiler asks for more.
    static constexpr std::size_t default_retained_bytes = std::size_t{16} << 20;
    /// Largest chunks the prefault thread keeps warm ahead of demand at a session's start; it doubles
    /// each time a recording thread finds none warm, up to the maximum (and never past the budget).
    static constexpr std::size_t initial_prefault_bytes = std::size_t{4} << 20;
    static constexpr std::size_t max_prefault_bytes = std::size_t{64} << 20;

    /// A chunk of `size_class` charged to the session's budget; when the budget cannot pay for it, the
    /// smallest chunk that holds `min_data` bytes; nullptr when it cannot pay for that either. A chunk
    /// the pool did not have cached is faulted in here, on the slow path, not page by page under later
    /// records.
    STINT_DECL chunk* acquire(std::uint32_t size_class, std::size_t min_data);

    /// Charges one chunk of `size_class` to the session's budget; false (and nothing charged) when
    /// what is left cannot pay for it.
    STINT_DECL bool charge(std::uint32_t size_class) noexcept;

    /// Gives back a charge() not used.
    void refund_charge(std::uint32_t size_class) noexcept { refund(size_class); }

    /// Gives back a chunk charged by acquire() but not used.
    void refund_and_release(chunk* c) noexcept {
        refund(c->size_class);
        release(c);
    }

    /// A resident chunk not charged to any budget (set aside for a thread before a session opens).
    STINT_DECL chunk* take_uncharged(std::uint32_t size_class);

    /// Returns a drained chunk: cached while the pool holds less than the retained size, else freed.
    STINT_DECL void release(chunk* c) noexcept;

    /// Allocates and touches largest chunks until `bytes` are cached (outside any session's hot path).
    STINT_DECL void reserve(std::size_t bytes);

    /// Keeps at least `bytes` of chunks cached between sessions.
    STINT_DECL void retain_at_least(std::size_t bytes) noexcept;

    /// Sets how many bytes of chunks stay cached between sessions, freeing the excess now (the
    /// smallest chunks first: the largest are the ones a busy thread reuses).
    STINT_DECL void set_retained(std::size_t bytes) noexcept;

    /// Starts the prefault thread for the session that is opening (it runs until stop_prefaulting()).
    /// Without a thread (the system refuses one) recording threads fault their chunks in themselves.
    STINT_DECL void start_prefaulting() noexcept;

    /// Stops and joins the prefault thread, then frees the warm chunks beyond what is retained between
    /// sessions: no thread of stint's runs while nothing records.
    STINT_DECL void stop_prefaulting() noexcept;

    /// In a forked child: the prefault thread did not survive the fork, so its state is abandoned
    /// (leaked: its condition variable may be mid-use), and none is started again: a child of a
    /// multi-threaded process may make only async-signal-safe calls until it execs (POSIX; TSan
    /// enforces it), so its threads fault their chunks in themselves. Under the pool mutex.
    void forget_prefaulting_after_fork() noexcept {
        prefault_ = nullptr;
        forked_ = true;
    }

    /// Whether the prefault thread runs.
    STINT_DECL bool prefaulting() noexcept;

    /// Starts a session's accounting: `bytes` of chunks may be acquired from now on.
    void reset_budget(std::size_t bytes) noexcept {
        budget_ = static_cast<std::int64_t>(std::min<std::size_t>(bytes, INT64_MAX / 2));
        budget_left_.store(budget_, std::memory_order_relaxed);
    }
    /// Held across fork() with the pool's mutex (pthread_atfork), after it.
    std::mutex& memory_mutex() noexcept { return memory_.mutex(); }

    /// The session's budget.
    [[nodiscard]] std::int64_t budget() const noexcept { return budget_; }

    /// Bytes of chunks the current (or last) session acquired.
    [[nodiscard]] std::size_t session_bytes() const noexcept {
        const std::int64_t left = budget_left_.load(std::memory_order_relaxed);
        return static_cast<std::size_t>(budget_ - std::max<std::int64_t>(left, 0));
    }
    [[nodiscard]] STINT_DECL std::size_t cached_bytes();

    /// Chunks allocated and faulted in when asked for because none was cached (by a recording thread's
    /// slow path, or at a session's start), since the process started.
    [[nodiscard]] std::uint64_t faulted_on_demand() const noexcept {
        return faulted_on_demand_.load(std::memory_order_relaxed);
    }

    /// The session whose budget is spent: its threads drop without touching the pool again.
    std::atomic<std::uint32_t> exhausted_state{0};
    /// Set while a crash dump copies the flight recorder's ring (profiler/crash_dump.hpp): no chunk of a
    /// thread's chain is overwritten or taken meanwhile (recording/ring.hpp reads it under the node's
    /// ring lock), so what the dump copies cannot change under it; a thread that would need one drops.
    std::atomic<bool> ring_frozen{false};
    std::mutex& mutex() noexcept { return mutex_; }

    static constexpr std::uint32_t largest_class = chunk::size_classes - 1;

private:
    STINT_DECL void refund(std::uint32_t size_class) noexcept;
    STINT_DECL chunk* pop_cached(std::uint32_t size_class) noexcept;

    /// A thread of stint's that exists only while a session records (defined with the pool's bodies).
    struct prefault_worker;

    /// Keeps `prefault_ahead_` bytes of largest chunks cached (no more than the session's budget could
    /// still pay for), faulting them in outside the pool mutex: a slab at a time while one fits.
    STINT_DECL void prefault_loop(prefault_worker& worker) noexcept;

    /// A chunk of `size_class` faulted in for a thread that found none cached. A largest chunk brings
    /// its slab's other chunks into the cache with it, when the budget left could pay for them all.
    STINT_DECL chunk* allocate_on_demand(std::uint32_t size_class);

    /// Adds faulted largest chunks to the cache (the pool mutex held); false when the cache could not
    /// grow, and the chunks are freed.
    STINT_DECL bool cache_largest(std::span<chunk* const> faulted) noexcept;
    void deallocate(chunk* c) noexcept { memory_.deallocate(c); }

    std::mutex mutex_;
    chunk_memory memory_;
    // Per size class; LIFO: the most recently drained (warmest) chunk is reused first.
    std::array<std::vector<chunk*>, chunk::size_classes> free_;
    std::size_t cached_bytes_ = 0;
    std::size_t retained_bytes_ = default_retained_bytes;
    std::atomic<std::uint64_t> faulted_on_demand_{0};
    prefault_worker* prefault_ = nullptr;  // while a session records
    bool forked_ = false;                   // this process is a forked child: no prefault thread
    std::size_t prefault_ahead_ = initial_prefault_bytes;
    std::int64_t budget_ = 0;   // written by begin_session under the registry mutex
    std::atomic<std::int64_t> budget_left_{0};
};

}  // namespace STINT_DETAIL_ABI_NAMESPACE
}  // namespace stint::detail

#if defined(STINT_HEADER_ONLY)
#include "stint/recording/impl/chunk_pool.ipp"
#endif
