#pragma once
// The process-wide side of recording: the chunk pool with its byte budget, the thread registry (which
// keeps exited threads' buffers until they are drained), the session lifecycle, fork safety, and the
// registry's half of the slow path (slow_path.hpp has the half every recording object compiles).

#include <algorithm>
#include <array>
#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <new>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

// The slow path of dynamic scopes, installed with the registry's (below).
#include "stint/annotations/detail/dynamic_name_table.hpp"
#include "stint/annotations/detail/named_site_table.hpp"
#include "stint/recording/buffer.hpp"
#include "stint/recording/chunk_memory.hpp"
#include "stint/recording/open_scopes.hpp"
#include "stint/recording/ring.hpp"
#include "stint/recording/slow_path.hpp"
#include "stint/recording/state.hpp"
#include "stint/recording/thread_node.hpp"
#include "stint/recording/clock.hpp"
#include "stint/detail/deferred.hpp"
#include "stint/detail/export_macros.hpp"
#include "stint/detail/platform.hpp"

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
template <class = void>
class basic_chunk_pool;
/// basic_chunk_pool's one form. A template, like the registry and its slow path below, so that a file
/// that never makes a profiler (nothing records before one exists) does not compile their bodies.
using chunk_pool = basic_chunk_pool<>;

template <class Unused>
class basic_chunk_pool {
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
    chunk* acquire(std::uint32_t size_class, std::size_t min_data) {
        if (!charge(size_class)) {
            size_class = chunk::class_for_data(min_data);
            if (!charge(size_class)) return nullptr;
        }
        try {
            return take_uncharged(size_class);
        } catch (...) {
            refund(size_class);
            throw;
        }
    }

    /// Charges one chunk of `size_class` to the session's budget; false (and nothing charged) when
    /// what is left cannot pay for it.
    bool charge(std::uint32_t size_class) noexcept {
        // A compare-exchange, not a fetch_sub and a refund: a failed charge must never make the
        // budget look spent to a smaller charge racing with it. seq_cst, as the refunds: next_chunk's
        // retry after marking the budget spent relies on it (a few per chunk, off the hot path).
        const auto bytes = static_cast<std::int64_t>(chunk::bytes_of_class(size_class));
        std::int64_t left = budget_left_.load(std::memory_order_seq_cst);
        do {
            if (left < bytes) return false;
        } while (!budget_left_.compare_exchange_weak(left, left - bytes, std::memory_order_seq_cst));
        return true;
    }

    /// Gives back a charge() not used.
    void refund_charge(std::uint32_t size_class) noexcept { refund(size_class); }

    /// Gives back a chunk charged by acquire() but not used.
    void refund_and_release(chunk* c) noexcept {
        refund(c->size_class);
        release(c);
    }

    /// A resident chunk not charged to any budget (set aside for a thread before a session opens).
    chunk* take_uncharged(std::uint32_t size_class) {
        chunk* c = pop_cached(size_class);
        if (c == nullptr) {
            c = allocate_on_demand(size_class);
        }
        c->published.store(c->data(), std::memory_order_relaxed);
        c->next.store(nullptr, std::memory_order_relaxed);
        c->reset_ring_notes();
        return c;
    }

    /// Returns a drained chunk: cached while the pool holds less than the retained size, else freed.
    void release(chunk* c) noexcept {
        if (c == nullptr) return;
        std::unique_lock lock(mutex_);
        if (cached_bytes_ + c->total() <= retained_bytes_) {
            try {
                free_[c->size_class].push_back(c);
                cached_bytes_ += c->total();
                return;
            } catch (...) {
                // fall through: free it instead of caching it
            }
        }
        lock.unlock();
        deallocate(c);
    }

    /// Allocates and touches largest chunks until `bytes` are cached (outside any session's hot path).
    void reserve(std::size_t bytes) {
        std::lock_guard lock(mutex_);
        retained_bytes_ = std::max(retained_bytes_, bytes);
        std::vector<chunk*>& largest = free_[largest_class];
        largest.reserve(largest.size() + bytes / chunk::total_bytes + chunk_memory::chunks_per_slab);
        // Fault every page in now rather than on the records' path (slabs only while a slab fits).
        while (cached_bytes_ < bytes) {
            std::array<chunk*, chunk_memory::chunks_per_slab> faulted{};
            const std::size_t count =
                memory_.allocate_largest(faulted, bytes - cached_bytes_ >= chunk_memory::slab_bytes);
            // The capacity reserved above makes this succeed; were it to fail, the chunks are freed.
            if (!cache_largest(std::span(faulted.data(), count))) throw std::bad_alloc();
        }
    }

    /// Keeps at least `bytes` of chunks cached between sessions.
    void retain_at_least(std::size_t bytes) noexcept {
        std::lock_guard lock(mutex_);
        retained_bytes_ = std::max(retained_bytes_, bytes);
    }

    /// Sets how many bytes of chunks stay cached between sessions, freeing the excess now (the
    /// smallest chunks first: the largest are the ones a busy thread reuses).
    void set_retained(std::size_t bytes) noexcept {
        std::vector<chunk*> excess;
        {
            std::lock_guard lock(mutex_);
            retained_bytes_ = bytes;
            for (std::vector<chunk*>& cached : free_) {
                while (cached_bytes_ > bytes && !cached.empty()) {
                    chunk* c = cached.back();
                    cached.pop_back();
                    cached_bytes_ -= c->total();
                    try {
                        excess.push_back(c);
                    } catch (...) {
                        deallocate(c);
                    }
                }
            }
        }
        for (chunk* c : excess) deallocate(c);
    }

    /// Starts the prefault thread for the session that is opening (it runs until stop_prefaulting()).
    /// Without a thread (the system refuses one) recording threads fault their chunks in themselves.
    void start_prefaulting() noexcept {
        std::lock_guard lock(mutex_);
        if (prefault_ != nullptr || forked_) return;
        prefault_ahead_ = initial_prefault_bytes;
        try {
            auto worker = std::make_unique<prefault_worker>();
            worker->thread = std::thread([this, w = worker.get()] { prefault_loop(*w); });
            prefault_ = worker.release();
        } catch (...) {
            // no thread: the slow path faults chunks in as before
        }
    }

    /// Stops and joins the prefault thread, then frees the warm chunks beyond what is retained between
    /// sessions: no thread of stint's runs while nothing records.
    void stop_prefaulting() noexcept {
        prefault_worker* worker = nullptr;
        {
            std::lock_guard lock(mutex_);
            worker = std::exchange(prefault_, nullptr);
            if (worker == nullptr) return;
            worker->stop = true;
        }
        worker->wake.notify_one();
        if (worker->thread.joinable()) worker->thread.join();
        delete worker;
        std::size_t retained = 0;
        {
            std::lock_guard lock(mutex_);
            retained = retained_bytes_;
        }
        set_retained(retained);
    }

    /// In a forked child: the prefault thread did not survive the fork, so its state is abandoned
    /// (leaked: its condition variable may be mid-use), and none is started again: a child of a
    /// multi-threaded process may make only async-signal-safe calls until it execs (POSIX; TSan
    /// enforces it), so its threads fault their chunks in themselves. Under the pool mutex.
    void forget_prefaulting_after_fork() noexcept {
        prefault_ = nullptr;
        forked_ = true;
    }

    /// Whether the prefault thread runs.
    bool prefaulting() noexcept {
        std::lock_guard lock(mutex_);
        return prefault_ != nullptr;
    }

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
    [[nodiscard]] std::size_t cached_bytes() {
        std::lock_guard lock(mutex_);
        return cached_bytes_;
    }

    /// Chunks allocated and faulted in when asked for because none was cached (by a recording thread's
    /// slow path, or at a session's start), since the process started.
    [[nodiscard]] std::uint64_t faulted_on_demand() const noexcept {
        return faulted_on_demand_.load(std::memory_order_relaxed);
    }

    /// The session whose budget is spent: its threads drop without touching the pool again.
    std::atomic<std::uint32_t> exhausted_state{0};
    std::mutex& mutex() noexcept { return mutex_; }

    static constexpr std::uint32_t largest_class = chunk::size_classes - 1;

private:
    void refund(std::uint32_t size_class) noexcept {
        budget_left_.fetch_add(static_cast<std::int64_t>(chunk::bytes_of_class(size_class)),
                               std::memory_order_seq_cst);
    }
    chunk* pop_cached(std::uint32_t size_class) noexcept {
        std::lock_guard lock(mutex_);
        std::vector<chunk*>& cached = free_[size_class];
        if (size_class == largest_class && prefault_ != nullptr) {
            // Demand outran the warm chunks: keep more ahead. Below half: wake the prefault thread
            // (a futex wake only when it sleeps, about once per half of what it keeps ahead).
            if (cached.empty()) prefault_ahead_ = std::min(prefault_ahead_ * 2, max_prefault_bytes);
            if ((cached.size() == 0 ? 0 : cached.size() - 1) * chunk::total_bytes < prefault_ahead_ / 2) {
                prefault_->wake.notify_one();
            }
        }
        if (cached.empty()) return nullptr;
        chunk* c = cached.back();
        cached.pop_back();
        cached_bytes_ -= c->total();
        return c;
    }

    /// A thread of stint's that exists only while a session records.
    struct prefault_worker {
        std::thread thread;
        std::condition_variable wake;
        bool stop = false;  // guarded by the pool mutex
    };

    /// Keeps `prefault_ahead_` bytes of largest chunks cached (no more than the session's budget could
    /// still pay for), faulting them in outside the pool mutex: a slab at a time while one fits.
    void prefault_loop(prefault_worker& worker) noexcept {
        const own_allocation_scope own;  // memory reporting never sees these chunks
        name_this_thread("stint prefault");
        std::unique_lock lock(mutex_);
        while (!worker.stop) {
            const std::size_t warm = free_[largest_class].size() * chunk::total_bytes;
            const auto affordable = static_cast<std::size_t>(std::max<std::int64_t>(
                budget_left_.load(std::memory_order_relaxed), 0));
            const std::size_t wanted = std::min(prefault_ahead_, affordable);
            if (warm >= wanted) {
                worker.wake.wait(lock);
                continue;
            }
            // A whole slab even when less is wanted, so long as the budget could pay for all of it.
            const bool whole_slab = affordable >= warm + chunk_memory::slab_bytes;
            lock.unlock();
            std::array<chunk*, chunk_memory::chunks_per_slab> faulted{};
            std::size_t count = 0;
            try {
                count = memory_.allocate_largest(faulted, whole_slab);
            } catch (...) {
                return;  // out of memory: recording threads take the slow path (and count drops)
            }
            lock.lock();
            if (!cache_largest(std::span(faulted.data(), count))) return;
        }
    }

    /// A chunk of `size_class` faulted in for a thread that found none cached. A largest chunk brings
    /// its slab's other chunks into the cache with it, when the budget left could pay for them all.
    chunk* allocate_on_demand(std::uint32_t size_class) {
        if (size_class != largest_class) {
            faulted_on_demand_.fetch_add(1, std::memory_order_relaxed);
            return chunk_memory::allocate_one(size_class);
        }
        std::array<chunk*, chunk_memory::chunks_per_slab> faulted{};
        const std::size_t count = memory_.allocate_largest(
            faulted, budget_left_.load(std::memory_order_relaxed) >= static_cast<std::int64_t>(chunk_memory::slab_bytes));
        faulted_on_demand_.fetch_add(count, std::memory_order_relaxed);
        if (count > 1) {
            const std::lock_guard lock(mutex_);
            (void)cache_largest(std::span(faulted.data() + 1, count - 1));
        }
        return faulted[0];
    }

    /// Adds faulted largest chunks to the cache (the pool mutex held); false when the cache could not
    /// grow, and the chunks are freed.
    bool cache_largest(std::span<chunk* const> faulted) noexcept {
        try {
            free_[largest_class].insert(free_[largest_class].end(), faulted.begin(), faulted.end());
            cached_bytes_ += faulted.size() * chunk::total_bytes;
            return true;
        } catch (...) {
            for (chunk* c : faulted) deallocate(c);
            return false;
        }
    }
    void deallocate(chunk* c) noexcept { memory_.deallocate(c); }

    std::mutex mutex_;
    chunk_memory memory_;
    // Per size class; LIFO: the most recently drained (warmest) chunk is reused first.
    deferred_t<std::array<std::vector<chunk*>, chunk::size_classes>, Unused> free_;
    std::size_t cached_bytes_ = 0;
    std::size_t retained_bytes_ = default_retained_bytes;
    std::atomic<std::uint64_t> faulted_on_demand_{0};
    prefault_worker* prefault_ = nullptr;  // while a session records
    bool forked_ = false;                   // this process is a forked child: no prefault thread
    std::size_t prefault_ahead_ = initial_prefault_bytes;
    std::int64_t budget_ = 0;   // written by begin_session under the registry mutex
    std::atomic<std::int64_t> budget_left_{0};
};

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

template <class = void>
class basic_registry;
/// basic_registry's one form (a template: see chunk_pool).
using registry = basic_registry<>;

/// One registry per process (see export_macros.hpp for how shared objects agree on it).
template <class Unused>
class basic_registry {
public:
    basic_registry() { install_fork_handlers(); }

    /// In a streamed session no thread's chunk grows past this share of the budget: the writer cannot
    /// take a chunk its owner still writes into, so threads' current chunks must leave it most of the
    /// budget to reclaim (design §8).
    static constexpr std::size_t stream_chunk_share = 64;

    /// The largest size class a thread's chunks grow to in a session of `budget_bytes`: the largest
    /// class, or in a streamed session the largest within stream_chunk_share of the budget (at least 1 KiB).
    static constexpr std::uint32_t growth_limit(std::size_t budget_bytes, bool streamed) noexcept {
        if (!streamed) return chunk_pool::largest_class;
        std::uint32_t c = 0;
        while (c < chunk_pool::largest_class && chunk::bytes_of_class(c + 1) <= budget_bytes / stream_chunk_share) ++c;
        return c;
    }

    /// Opens a recording session; returns its state. Throws when one is already recording. `streamed`:
    /// a writer gives chunks back while it records (take_written, give_back_streamed).
    /// `ring`: a flight recorder's session, whose threads overwrite their oldest chunks (recording/ring.hpp).
    std::uint32_t begin_session(std::size_t budget_bytes, bool streamed = false, ring_options ring = {}) {
        std::lock_guard lock(mutex_);
        if (active_ != 0) {
            throw std::logic_error("stint: start(): a profiler is already recording in this process; stop it first");
        }
        free_exited_nodes();
        serial_ = (serial_ + 1) & serial_mask;
        if (serial_ == 0) serial_ = 1;
        active_ = (serial_ << 2) | (ring.on ? open_scopes_bit : 0U) | 1U;
        pool_.reset_budget(budget_bytes);
        const std::uint32_t limit = growth_limit(budget_bytes, streamed);
        growth_limit_.store(limit, std::memory_order_relaxed);
        streamed_.store(streamed, std::memory_order_relaxed);
        ring_.store(ring.on, std::memory_order_relaxed);
        ring_span_ticks_.store(ring.span_ticks, std::memory_order_relaxed);
        set_aside_ready_chunks(budget_bytes, limit);
        // The prefault thread keeps largest chunks warm; capped chunks come back warm through the writer.
        if (limit == chunk_pool::largest_class) pool_.start_prefaulting();
        // release: a thread that sees the new state also sees the budget.
        recording.value.store(active_, std::memory_order_release);
        return active_;
    }

    /// Stops recording `state`, calls `on_disabled(stop_ticks)`, then takes each thread's records out of its buffer
    /// and hands them to `on_taken(taken_records&&)`, all under the registry lock (so no new session
    /// can recycle the chunks being taken). Returns false when `state` is not the recording session
    /// (stopped already, or a fork ended it).
    template <class OnDisabled, class OnTaken>
    bool end_session(std::uint32_t state, OnDisabled&& on_disabled, OnTaken&& on_taken) {
        std::lock_guard lock(mutex_);
        if (active_ != state || state == 0) return false;
        recording.value.store(state & ~1U, std::memory_order_release);
        const std::uint64_t stop_ticks = read_ticks();
        active_ = 0;
        last_stopped_state_ = state;
        last_stop_ticks_ = stop_ticks;
        // Threads that did not record in this session may hold late records of an earlier one.
        for (thread_node* node : nodes_) {
            if (node->state.load(std::memory_order_acquire) != state) count_late(*node);
        }
        late_in_last_drain_ = late_total_ - late_reported_;
        late_reported_ = late_total_;
        pool_.stop_prefaulting();
        on_disabled(stop_ticks);
        for (thread_node* node : nodes_) {
            pool_.release(std::exchange(node->ready, nullptr));  // set aside, never taken
            if (node->state.load(std::memory_order_acquire) != state) continue;
            on_taken(take_node(*node, state, stop_ticks));
        }
        free_exited_nodes();
        return true;
    }

    /// Gives back a chunk that end_session handed over.
    void release_chunk(chunk* c) noexcept { pool_.release(c); }

    /// While session `state` records (a streamed session): takes from each of its threads' buffers the
    /// chunks the owner has moved past (all of an exited thread's), handing them to
    /// `on_taken(taken_records&&)` (without a tail), under the registry lock. Each must come back through
    /// give_back_streamed(), which returns its bytes to the session's budget.
    template <class OnTaken>
    void take_written(std::uint32_t state, OnTaken&& on_taken) {
        std::lock_guard lock(mutex_);
        if (active_ != state || state == 0) return;
        for (thread_node* node : nodes_) {
            if (node->state.load(std::memory_order_acquire) != state) continue;
            // acquire: the owner published a chunk's last records before it moved on (or exited).
            const bool exited = node->exited.load(std::memory_order_acquire);
            chunk* const keep = exited ? nullptr : node->current.load(std::memory_order_acquire);
            chunk* const head = node->head.load(std::memory_order_acquire);
            if (head == nullptr || head == keep) continue;
            taken_records taken;
            taken.node = node;
            taken.os_tid = node->os_tid;
            taken.name = node->name;
            chunk* last = head;
            for (chunk* next = last->next.load(std::memory_order_acquire); next != keep && next != nullptr;
                 next = last->next.load(std::memory_order_acquire)) {
                last = next;
            }
            last->next.store(nullptr, std::memory_order_relaxed);  // the owner links only after keep
            node->head.store(keep, std::memory_order_release);
            if (exited) node->current.store(nullptr, std::memory_order_release);
            taken.chunks = head;
            on_taken(std::move(taken));
        }
    }

    /// Gives back chunks that take_written() handed over: to the pool, and their bytes to the budget of
    /// session `state` (whose threads may take chunks again if it was spent).
    void give_back_streamed(std::uint32_t state, chunk* chain) noexcept {
        bool any = false;
        for (chunk* c = chain; c != nullptr;) {
            chunk* next = c->next.load(std::memory_order_relaxed);
            pool_.refund_and_release(c);  // seq_cst: before the clear below in the order next_chunk relies on
            any = true;
            c = next;
        }
        std::uint32_t spent = state;
        if (any) pool_.exhausted_state.compare_exchange_strong(spent, 0, std::memory_order_seq_cst);
    }

    /// While flight-recorder session `state` records: copies each of its buffers' records, oldest first,
    /// as `on_copied(taken_records&&)` (a tail, no chunks: the owner keeps writing), with what each had
    /// overwritten until then (taken_records::overwritten). Each chunk is copied under the node's ring
    /// lock, which its owner takes only to overwrite a chunk: a recording thread waits at most one
    /// chunk's copy, and only if it changes chunks meanwhile. False when `state` is not recording.
    /// Nodes are freed only when a session begins or ends: the caller keeps both out while it copies.
    template <class OnCopied>
    bool copy_ring(std::uint32_t state, OnCopied&& on_copied) {
        std::vector<std::pair<thread_node*, taken_records>> nodes;
        {
            std::lock_guard lock(mutex_);
            if (active_ != state || state == 0) return false;
            nodes.reserve(nodes_.size());
            for (thread_node* node : nodes_) {
                if (node->state.load(std::memory_order_acquire) != state) continue;
                taken_records taken;
                taken.node = node;
                taken.os_tid = node->os_tid;
                taken.name = node->name;
                nodes.emplace_back(node, std::move(taken));
            }
        }
        for (auto& [node, taken] : nodes) {
            copy_node_ring(*node, taken);
            on_copied(std::move(taken));
        }
        return true;
    }

    /// Records of earlier sessions found since the drain before this one: scopes that ended before
    /// their session stopped but reached their buffer after it was drained (a thread preempted
    /// between its scope's end and its append). Exact inside end_session's callbacks.
    std::uint64_t late_records_found() const noexcept { return late_in_last_drain_; }
    /// Late records found since the process started.
    std::uint64_t late_records_total() {
        std::lock_guard lock(mutex_);
        return late_total_;
    }

    /// Pre-faults `bytes` of chunks for the next session and keeps them between sessions.
    void reserve_buffers(std::size_t bytes) { pool_.reserve(bytes); }
    /// Keeps at least `bytes` of drained chunks warm for the next session (a schedule's next window).
    void retain_buffers(std::size_t bytes) noexcept { pool_.retain_at_least(bytes); }
    /// Bytes of buffers the recording (or last) session took from the pool. Exact inside end_session's
    /// callbacks, which run under the registry lock.
    std::size_t session_buffer_bytes() const noexcept { return pool_.session_bytes(); }
    /// Returns cached chunks beyond the default to the system (a profiler that is done calls it).
    void release_buffers() noexcept { pool_.set_retained(chunk_pool::default_retained_bytes); }
    /// Keeps at most `bytes` of chunks cached between sessions from now on, freeing the excess now.
    void set_retained_buffers(std::size_t bytes) noexcept { pool_.set_retained(bytes); }
    /// Whether the pool's prefault thread runs (while a session records, outside a forked child).
    bool prefaulting() noexcept { return pool_.prefaulting(); }
    /// Chunks faulted in when asked for, none being cached (pool statistics for tests and benchmarks).
    std::uint64_t chunks_faulted_on_demand() const noexcept { return pool_.faulted_on_demand(); }
    /// Bytes of chunks cached for the next session.
    std::size_t cached_buffer_bytes() { return pool_.cached_bytes(); }

    /// Threads (per shared object) registered and not yet freed: exited threads are freed by the drain
    /// or the next session's start.
    std::size_t registered_threads() {
        std::lock_guard lock(mutex_);
        return nodes_.size();
    }

    /// For a crash handler only (profiler/crash_dump.hpp): calls `f(node)` for each node of the recording
    /// session without the lock, which a crashed thread may hold. The process is dying: a list being
    /// changed at that instant may be read torn, and that is the price of any dump at all.
    template <class F>
    void for_each_node_in_crash(F&& f) noexcept {
        const std::uint32_t state = active_;
        thread_node* const* nodes = nodes_.data();
        const std::size_t count = nodes_.size();
        for (std::size_t i = 0; i < count; ++i) {
            if (nodes[i] != nullptr && nodes[i]->state.load(std::memory_order_acquire) == state) f(*nodes[i]);
        }
    }

    /// Gives `node` (the caller's) its stack of open scopes, set on its buffer too; under the lock, as the
    /// hang watchdog reads the pointer under it.
    open_scope_stack* make_open_scope_stack(thread_node& node, thread_buffer& buffer) {
        auto* made = new open_scope_stack;
        {
            std::lock_guard lock(mutex_);
            if (node.open == nullptr) {
                node.open = made;
                made = nullptr;
            }
        }
        delete made;
        buffer.open = node.open;
        return node.open;
    }

    /// A scope open on a thread when asked: where it is, when it began, and its name when given at run
    /// time (else the site's).
    struct open_scope {
        std::uint64_t os_tid = 0;
        const site* where = nullptr;
        std::string name;
        std::uint64_t begin_ticks = 0;
        std::uint32_t depth = 0;
    };
    /// The scopes open now that began at or after `since_ticks` (the session's start: older entries are
    /// of scopes entered before it, which it did not note), outermost first per thread; and the count of
    /// deeper ones not kept (past open_scope_stack::capacity). Read while the threads run: a scope that
    /// ends meanwhile may still be listed.
    std::vector<open_scope> open_scopes(std::uint64_t since_ticks, std::uint64_t& not_kept) {
        std::vector<open_scope> out;
        not_kept = 0;
        std::lock_guard lock(mutex_);
        for (const thread_node* node : nodes_) {
            if (node->open == nullptr || node->exited.load(std::memory_order_acquire)) continue;
            // acquire: pairs with the release in note_scope_entered(); the entries below it are written.
            const std::uint32_t depth = node->open->depth.load(std::memory_order_acquire);
            if (depth > open_scope_stack::capacity) not_kept += depth - open_scope_stack::capacity;
            for (std::uint32_t i = 0; i < depth && i < open_scope_stack::capacity; ++i) {
                const open_scope_stack::entry& e = node->open->entries[i];
                const site* where = e.where.load(std::memory_order_relaxed);
                const std::uint64_t begin = e.begin_ticks.load(std::memory_order_relaxed);
                if (where == nullptr || begin < since_ticks) continue;
                out.push_back({node->os_tid, where, open_scope_name(e, *where), begin, i});
            }
        }
        return out;
    }
    /// An entry's name: the site's, or the first bytes of one given at run time ("..." when cut).
    static std::string open_scope_name(const open_scope_stack::entry& e, const site& where) {
        if (where.payload != payload_kind::runtime_name && where.payload != payload_kind::runtime_name_inputs) {
            return std::string(where.name);
        }
        char text[open_scope_stack::name_words * 8];
        for (std::size_t w = 0; w < open_scope_stack::name_words; ++w) {
            const std::uint64_t word = e.name[w].load(std::memory_order_relaxed);
            std::memcpy(text + w * 8, &word, 8);
        }
        const std::size_t size = e.name_size.load(std::memory_order_relaxed);
        std::string name(text, std::min(size, sizeof text));
        if (size > sizeof text) name += "...";
        return name;
    }

    /// For a crash handler only, as for_each_node_in_crash: calls `f(node)` for each node with a stack of
    /// open scopes, whatever its session (a thread may be inside scopes and not have written a record yet).
    template <class F>
    void for_each_open_stack_in_crash(F&& f) noexcept {
        thread_node* const* nodes = nodes_.data();
        const std::size_t count = nodes_.size();
        for (std::size_t i = 0; i < count; ++i) {
            if (nodes[i] != nullptr && nodes[i]->open != nullptr) f(*nodes[i]);
        }
    }

    /// Threads (per shared object) registered that have not exited.
    std::size_t live_threads() {
        std::lock_guard lock(mutex_);
        return static_cast<std::size_t>(std::count_if(nodes_.begin(), nodes_.end(), [](const thread_node* node) {
            return !node->exited.load(std::memory_order_acquire);
        }));
    }

    /// Whether `state` is the session currently recording.
    bool is_active(std::uint32_t state) {
        std::lock_guard lock(mutex_);
        return state != 0 && active_ == state;
    }

    /// Process-wide tick calibration, measured once (10 ms of spinning) at the first session.
    const tick_calibration& calibration() {
        std::call_once(calibrated_, [this] { calibration_ = calibrate_ticks(); });
        return calibration_;
    }

    // --- called by the owning thread's slow path ---

    bool register_thread(thread_buffer& buffer);
    /// What starting a session on a thread took: nothing (it is not the recording session), a chunk
    /// set aside at begin_session (cheap: no allocation, no page fault), or no chunk yet.
    enum class session_start { refused, ready_chunk, no_chunk };
    /// `end`: the end tick of the record that needs it (counted late when the session has just ended).
    session_start reset_for_session(thread_buffer& buffer, std::uint32_t state, std::uint64_t end);
    /// What next_chunk did: linked a chunk, found the budget spent (a drop), or found the session
    /// ended (the record is counted late when it ended before the stop, else it is in no window).
    enum class chunk_result { linked, budget_spent, session_ended };
    /// Links a new chunk with room for at least `min_data` bytes for a record that ended at `end`.
    chunk_result next_chunk(thread_buffer& buffer, std::uint32_t state, std::size_t min_data, std::uint64_t end);
    /// In a streamed session, when the budget had no chunk for a record that does not fit: hands the
    /// thread's chunk over to the writer (every record in it is published). The writer takes only
    /// chunks a thread has moved past, so full chunks that nobody can move past could otherwise hold
    /// the whole budget with nothing to give back. The thread's next chunk starts a chain of its own.
    void hand_over_chunk(thread_buffer& buffer) noexcept {
        if (buffer.current == nullptr || !streamed_.load(std::memory_order_relaxed)) return;
        buffer.node->current.store(nullptr, std::memory_order_release);  // pairs with take_written's acquire
        buffer.current = nullptr;
        buffer.cursor = nullptr;
        buffer.limit = nullptr;
    }
    void set_thread_name(thread_node& node, std::string_view name) {
        std::lock_guard lock(mutex_);
        node.name.assign(name);
    }

private:
    /// Copies `node`'s chain into `taken.tail`, a chunk per hold of its ring lock. Between holds the
    /// owner may overwrite its oldest chunks (unlinking them from the head): the next chunk to copy is
    /// still linked while fewer chunks were unlinked since than stood before it. Otherwise (the ring
    /// turned past the copy) the node is copied again under one hold.
    static void copy_node_ring(thread_node& node, taken_records& taken) {
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
    static void read_ring_counts(const thread_node& node, taken_records& taken) noexcept {
        taken.overwritten = node.overwritten;
        taken.overwritten_until = node.overwritten_until;
        taken.dropped = node.dropped.load(std::memory_order_relaxed);
        taken.truncated = node.truncated.load(std::memory_order_relaxed);
    }

    /// Unlinks the thread's oldest chunk and counts what it held as overwritten (under the node's ring
    /// lock, so that no dump is copying it and no other thread is taking it). When it is also the current
    /// chunk, the thread keeps it. `only_older_than` not 0: only a chunk moved past whose records all
    /// ended before that tick, else null.
    static chunk* unlink_oldest(thread_buffer& buffer, std::uint64_t only_older_than = 0) noexcept {
        thread_node& node = *buffer.node;
        const ring_guard hold(node);  // another thread may be taking this head (take_richest_oldest)
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

    /// The thread's oldest chunk to write into next, its records counted as overwritten: when the
    /// budget is spent, or (`only_older_than` not 0) when all its records ended before that tick, in
    /// which case every further chunk that old goes back to the pool (the ring shrinks when the program
    /// records less). Null when there is none to overwrite or it cannot hold `min_data` bytes.
    chunk* overwrite_oldest(thread_buffer& buffer, std::uint32_t size_class, std::size_t min_data,
                            std::uint64_t only_older_than) {
        thread_node& node = *buffer.node;
        chunk* c = unlink_oldest(buffer, only_older_than);
        if (only_older_than != 0) {
            if (c == nullptr) return nullptr;
            bool refunded = false;
            while (chunk* old = unlink_oldest(buffer, only_older_than)) {
                node.ring_bytes.fetch_sub(old->total(), std::memory_order_relaxed);
                pool_.refund_and_release(old);
                refunded = true;
            }
            // The budget has room again: threads may take chunks from the pool (seq_cst, as next_chunk's mark).
            std::uint32_t spent = buffer.state;
            if (refunded) pool_.exhausted_state.compare_exchange_strong(spent, 0, std::memory_order_seq_cst);
        }
        if (c == nullptr || c == buffer.current) return c;
        if (c->size_class < size_class && pool_.charge(size_class)) {
            // A thread's first chunks are small; where the budget allows, the ring grows them as a
            // thread's chain grows, or a short span would keep the thread on its smallest chunks.
            chunk* bigger = nullptr;
            try {
                bigger = pool_.take_uncharged(size_class);
            } catch (...) {
                pool_.refund_charge(size_class);
                return c;
            }
            node.ring_bytes.fetch_sub(c->total(), std::memory_order_relaxed);
            pool_.refund_and_release(c);
            return bigger;  // counted in ring_bytes when linked
        }
        node.ring_bytes.fetch_sub(c->total(), std::memory_order_relaxed);  // counted again when linked
        if (static_cast<std::size_t>(c->data_end() - c->data()) < min_data) {
            // Too small for this record (a large payload): its bytes may buy a chunk that holds it.
            pool_.refund_and_release(c);
            return pool_.acquire(chunk::class_for_data(min_data), min_data);
        }
        return c;
    }

    /// When a flight recorder's budget is spent, a thread holding less than an equal share of it (a
    /// thread that began to record late, or records more than it did) takes the oldest chunk of the
    /// thread that holds most, while that one keeps at least two: each chunk change of the poorer
    /// thread moves one chunk, so busy threads come to equal shares. Null when none is taken.
    chunk* take_richest_oldest(thread_buffer& buffer, std::size_t min_data) noexcept {
        thread_node& mine = *buffer.node;
        const std::uint64_t held = mine.ring_bytes.load(std::memory_order_relaxed);
        const std::uint64_t threads = std::max<std::uint64_t>(node_count_.load(std::memory_order_relaxed), 1);
        if (held >= static_cast<std::uint64_t>(pool_.budget()) / threads) return nullptr;  // its share: its own ring
        std::lock_guard lock(mutex_);
        thread_node* richest = nullptr;
        for (thread_node* node : nodes_) {
            if (node == &mine) continue;
            if (richest == nullptr || node->ring_bytes.load(std::memory_order_relaxed) >
                                          richest->ring_bytes.load(std::memory_order_relaxed)) {
                richest = node;
            }
        }
        if (richest == nullptr) return nullptr;
        const ring_guard hold(*richest);
        chunk* head = richest->head.load(std::memory_order_acquire);
        if (head == nullptr || static_cast<std::size_t>(head->data_end() - head->data()) < min_data) return nullptr;
        // Only a chunk its owner has moved past: it then writes only after node.current (registry.hpp).
        chunk* const next = head->next.load(std::memory_order_acquire);
        if (next == nullptr || head == richest->current.load(std::memory_order_acquire) ||
            richest->ring_bytes.load(std::memory_order_relaxed) < held + 2 * head->total()) {
            return nullptr;
        }
        summarize_chunk(*head);
        richest->head.store(next, std::memory_order_release);
        richest->overwritten += head->ring_records;
        richest->overwritten_until = std::max(richest->overwritten_until, head->ring_last_end);
        ++richest->chunks_unlinked;
        richest->ring_bytes.fetch_sub(head->total(), std::memory_order_relaxed);
        head->next.store(nullptr, std::memory_order_relaxed);
        head->published.store(head->data(), std::memory_order_relaxed);
        head->reset_ring_notes();
        return head;
    }

    // Takes the node's records: the chunks its owner has moved past, and a copy of what it published in
    // the one it keeps writing into (late scopes land there; count_late finds them from where the copy
    // ended, and the owner returns that chunk when its next session begins).
    taken_records take_node(thread_node& node, std::uint32_t state, std::uint64_t stop_ticks) {
        // A flight recorder's thread that passed the recording check before the stop may be overwriting
        // its oldest chunk: the chain is read as it was before or after.
        const ring_guard hold(node);
        taken_records taken;
        taken.node = &node;
        taken.os_tid = node.os_tid;
        taken.name = node.name;
        chunk* const keep = node.exited.load(std::memory_order_acquire)
                                ? nullptr
                                : node.current.load(std::memory_order_acquire);
        const std::byte* kept_until = nullptr;
        if (keep != nullptr) {
            kept_until = keep->published.load(std::memory_order_acquire);
            taken.tail.assign(static_cast<const std::byte*>(keep->data()), kept_until);  // may throw: nothing taken yet
        }
        chunk* head = node.head.load(std::memory_order_acquire);
        if (head != nullptr && head != keep) {
            taken.chunks = head;
            chunk* last = head;
            for (chunk* next = last->next.load(std::memory_order_acquire); next != keep && next != nullptr;
                 next = last->next.load(std::memory_order_acquire)) {
                last = next;
            }
            last->next.store(nullptr, std::memory_order_relaxed);  // the owner links only after keep
        }
        taken.dropped = node.dropped.load(std::memory_order_relaxed);
        taken.truncated = node.truncated.load(std::memory_order_relaxed);
        taken.overwritten = node.overwritten;
        taken.overwritten_until = node.overwritten_until;
        node.drained_state = state;
        node.drained_stop_ticks = stop_ticks;
        node.drained_chunk = keep;
        node.drained_until = kept_until;
        node.drained_dropped = taken.dropped;
        node.head.store(keep, std::memory_order_release);
        return taken;
    }

    /// Counts the records of the node's drained session that reached its buffer after the drain (and
    /// its drops since), once each: before the node's chunks are reused or freed, and at each later
    /// drain. Under the registry mutex.
    void count_late(thread_node& node) noexcept {
        if (node.drained_state == 0 || node.state.load(std::memory_order_acquire) != node.drained_state) return;
        const std::uint64_t dropped = node.dropped.load(std::memory_order_relaxed);
        late_total_ += dropped - node.drained_dropped;
        node.drained_dropped = dropped;
        for (chunk* c = node.drained_chunk; c != nullptr; c = c->next.load(std::memory_order_acquire)) {
            const std::byte* from = c == node.drained_chunk && node.drained_until != nullptr ? node.drained_until
                                                                                              : c->data();
            node.drained_until = for_each_record(*c, from, [&](const record& r, const record_payload&) {
                if (r.end_ticks <= node.drained_stop_ticks && r.where()->kind != event_kind::overhead) ++late_total_;
            });
            node.drained_chunk = c;
        }
    }

    /// A record of session `state` that ended at `end` and found its session closed before it had room
    /// (its thread's first record or chunk of the session came after the stop): late when it ended
    /// before the last drained session's stop, else in no window. Under the registry mutex.
    void count_if_late(std::uint32_t state, std::uint64_t end) noexcept {
        if (state == last_stopped_state_ && end <= last_stop_ticks_) ++late_total_;
    }

    /// Forgets where the last drain stopped (the node's chunks are being reused or freed).
    static void forget_drain(thread_node& node) noexcept {
        node.drained_state = 0;
        node.drained_chunk = nullptr;
        node.drained_until = nullptr;
    }

    /// Gives each live thread a resident chunk for its first records of the session, so that neither
    /// the allocation nor the page faults land inside the user's scopes. Bounded: at most
    /// `max_ready_threads` threads and the budget; the others take the slow path.
    /// A thread charges its chunk to the budget only when it takes it.
    static constexpr std::size_t max_ready_threads = 256;
    void set_aside_ready_chunks(std::size_t budget_bytes, std::uint32_t size_class) noexcept {
        const std::size_t size = chunk::bytes_of_class(size_class);
        std::size_t bytes = 0;
        std::size_t given = 0;
        for (thread_node* node : nodes_) {
            if (given == max_ready_threads || bytes + size > budget_bytes) break;
            if (node->exited.load(std::memory_order_acquire) || node->ready != nullptr) continue;
            try {
                node->ready = pool_.take_uncharged(size_class);
            } catch (...) {
                return;  // out of memory: the remaining threads take the slow path
            }
            bytes += size;
            ++given;
        }
    }

    void free_exited_nodes() noexcept {
        auto dead = std::partition(nodes_.begin(), nodes_.end(), [](thread_node* node) {
            return !node->exited.load(std::memory_order_acquire);
        });
        for (auto it = dead; it != nodes_.end(); ++it) {
            count_late(**it);
            release_chain(**it);
            pool_.release(std::exchange((*it)->ready, nullptr));
            delete *it;
        }
        nodes_.erase(dead, nodes_.end());
        node_count_.store(nodes_.size(), std::memory_order_relaxed);
    }

    void release_chain(thread_node& node) noexcept {
        forget_drain(node);
        chunk* c = node.head.load(std::memory_order_acquire);
        while (c != nullptr) {
            chunk* next = c->next.load(std::memory_order_acquire);
            pool_.release(c);
            c = next;
        }
        node.head.store(nullptr, std::memory_order_release);
        node.current.store(nullptr, std::memory_order_release);
    }

    static void install_fork_handlers() noexcept;
    void before_fork() noexcept {
        mutex_.lock();
        pool_.mutex().lock();
        pool_.memory_mutex().lock();
        forking_tid_ = current_os_tid();
    }
    void after_fork_in_parent() noexcept {
        pool_.memory_mutex().unlock();
        pool_.mutex().unlock();
        mutex_.unlock();
    }
    /// The child has one thread and no session: in-flight records of the parent's session are
    /// abandoned (a new serial makes every open scope stale), other threads' nodes are freed at the
    /// next session, and the forking thread keeps its nodes under its new tid.
    void after_fork_in_child() noexcept {
        serial_ = (serial_ + 1) & serial_mask;
        active_ = 0;
        recording.value.store(serial_ << 2, std::memory_order_relaxed);
        const std::uint64_t child_tid = current_os_tid();
        for (thread_node* node : nodes_) {
            if (node->os_tid == forking_tid_) {
                node->os_tid = child_tid;
            } else {
                node->exited.store(true, std::memory_order_relaxed);
            }
        }
        pool_.forget_prefaulting_after_fork();
        pool_.memory_mutex().unlock();
        pool_.mutex().unlock();
        mutex_.unlock();
    }

    std::mutex mutex_;  // nodes_, active_, serial_, node names, session transitions
    deferred_t<std::vector<thread_node*>, Unused> nodes_;
    deferred_t<chunk_pool, Unused> pool_;
    // Set by begin_session, read by next_chunk (atomics: a thread preempted across a stop and the next
    // start may read them while they change).
    std::atomic<std::uint32_t> growth_limit_{chunk_pool::largest_class};
    std::atomic<bool> streamed_{false};
    std::atomic<bool> ring_{false};  // a flight recorder's session: threads overwrite their oldest chunks
    std::atomic<std::size_t> node_count_{0};  // nodes_.size(), read without the lock
    std::atomic<std::uint64_t> ring_span_ticks_{0};
    std::uint32_t serial_ = 0;
    static constexpr std::uint32_t serial_mask = 0x3fffffffU;  // above the state's two flag bits
    std::uint32_t active_ = 0;
    std::uint64_t forking_tid_ = 0;
    std::uint32_t last_stopped_state_ = 0;  // the last session drained, and its stop tick
    std::uint64_t last_stop_ticks_ = 0;
    std::uint64_t late_total_ = 0;          // late records found since the process started
    std::uint64_t late_reported_ = 0;       // ... of which earlier drains reported
    std::uint64_t late_in_last_drain_ = 0;  // ... found since the drain before the last one
    std::once_flag calibrated_;
    tick_calibration calibration_;
};

template <class = void>
bool install_registry_slow_path() noexcept;

/// The process's registry. Deliberately leaked: threads and atexit handlers may still record while
/// static destructors run, so it must outlive every one of them.
template <class = void>
STINT_DETAIL_EXPORT registry& the_registry() {
    static registry* const instance = (install_registry_slow_path(), new registry());
    return *instance;
}

template <class Unused>
void basic_registry<Unused>::install_fork_handlers() noexcept {
#if defined(__linux__) || defined(__APPLE__)
    ::pthread_atfork([] { the_registry().before_fork(); }, [] { the_registry().after_fork_in_parent(); },
                     [] { the_registry().after_fork_in_child(); });
#endif
}

template <class Unused>
bool basic_registry<Unused>::register_thread(thread_buffer& buffer) {
    auto* node = new thread_node;
    node->os_tid = current_os_tid();
    node->name = current_thread_name();
    {
        std::lock_guard lock(mutex_);
        nodes_.push_back(node);
        node_count_.store(nodes_.size(), std::memory_order_relaxed);
    }
    buffer.node = node;  // the caller's thread_exit_guard watches the buffer (slow_path.hpp)
    return true;
}

template <class Unused>
auto basic_registry<Unused>::reset_for_session(thread_buffer& buffer, std::uint32_t state, std::uint64_t end)
    -> session_start {
    std::lock_guard lock(mutex_);
    // A scope that began in a session that has ended (or a stale state) writes nowhere.
    if (state != active_) {
        count_if_late(state, end);
        return session_start::refused;
    }
    thread_node& node = *buffer.node;
    count_late(node);
    release_chain(node);
    node.dropped.store(0, std::memory_order_relaxed);
    node.truncated.store(0, std::memory_order_relaxed);
    {
        const ring_guard hold(node);
        node.overwritten = 0;
        node.overwritten_until = 0;
        node.ring_bytes.store(0, std::memory_order_relaxed);
    }
    buffer.state = state;
    buffer.current = nullptr;
    buffer.cursor = nullptr;
    buffer.limit = nullptr;
    session_start result = session_start::no_chunk;
    if (node.ready != nullptr) {
        chunk* c = std::exchange(node.ready, nullptr);
        if (pool_.charge(c->size_class)) {
            node.head.store(c, std::memory_order_release);
            node.current.store(c, std::memory_order_release);
            node.ring_bytes.store(c->total(), std::memory_order_relaxed);
            buffer.current = c;
            buffer.cursor = c->data();
            buffer.limit = c->data_end();
            result = session_start::ready_chunk;
        } else {
            pool_.release(c);
        }
    }
    // release: pairs with the acquire in end_session(); the chunk above is visible before the state.
    node.state.store(state, std::memory_order_release);
    return result;
}

template <class Unused>
auto basic_registry<Unused>::next_chunk(thread_buffer& buffer, std::uint32_t state, std::size_t min_data,
                                        std::uint64_t end) -> chunk_result {
    // A session that has ended takes no more chunks from the pool (checked first: a record of an
    // ended session is late or in no window, not a drop of the session, even when its budget is spent).
    if (recording.value.load(std::memory_order_relaxed) != state) {
        std::lock_guard lock(mutex_);  // waits for a drain in progress, which sets the stop tick
        count_if_late(state, end);
        return chunk_result::session_ended;
    }
    // Each chunk doubles the last, from the smallest: the budget pays for what a thread records.
    const std::uint32_t limit = growth_limit_.load(std::memory_order_relaxed);
    std::uint32_t size_class = buffer.current == nullptr ? 0 : std::min(buffer.current->size_class + 1, limit);
    size_class = std::max(size_class, chunk::class_for_data(min_data));
    chunk* c = nullptr;
    const bool ring = ring_.load(std::memory_order_relaxed);
    if (ring) {
        // A flight recorder keeps only the span asked for: a chunk whose records all ended before it is
        // overwritten before the budget is charged for another.
        const std::uint64_t span = ring_span_ticks_.load(std::memory_order_relaxed);
        if (span != 0 && end > span) c = overwrite_oldest(buffer, size_class, min_data, end - span);
    }
    if (c == nullptr && pool_.exhausted_state.load(std::memory_order_relaxed) != state) {
        c = pool_.acquire(size_class, min_data);
        if (c == nullptr) {
            // Marked spent, then charged once more: a stream's writer may have given chunks back between
            // the failed charge and the mark, its clearing (give_back_streamed) finding no mark. All four
            // are seq_cst: either its clear comes after this mark, or this charge sees its refund.
            pool_.exhausted_state.store(state, std::memory_order_seq_cst);
            c = pool_.acquire(size_class, min_data);
            std::uint32_t spent = state;
            if (c != nullptr) pool_.exhausted_state.compare_exchange_strong(spent, 0, std::memory_order_seq_cst);
        }
    }
    if (c == nullptr && ring) {
        // The budget is spent: the ring turns, on the thread's own chunks once it holds its share.
        c = take_richest_oldest(buffer, min_data);
        if (c == nullptr) c = overwrite_oldest(buffer, size_class, min_data, 0);
    }
    if (c == nullptr) return chunk_result::budget_spent;
    thread_node& node = *buffer.node;
    if (c == buffer.current) {
        // The thread's only chunk, overwritten in place.
        buffer.cursor = c->data();
        return chunk_result::linked;
    }
    if (ring) node.ring_bytes.fetch_add(c->total(), std::memory_order_relaxed);
    if (buffer.current != nullptr) {
        // The drain keeps the chunk it saw as current and counts what is linked after it as late.
        buffer.current->next.store(c, std::memory_order_release);  // pairs with the drain's acquire
        node.current.store(c, std::memory_order_release);
    } else {
        // The session's first chunk, or the first after handing one over: linked under the registry
        // lock, so that a drain sees the node either without it or with it, never half-linked.
        std::unique_lock lock(mutex_);
        if (active_ != state) {
            count_if_late(state, end);
            lock.unlock();
            pool_.refund_and_release(c);
            return chunk_result::session_ended;
        }
        // Chunks handed over that the writer has not taken yet come first.
        chunk* last = node.head.load(std::memory_order_acquire);
        if (last == nullptr) {
            node.head.store(c, std::memory_order_release);
        } else {
            for (chunk* next = last->next.load(std::memory_order_acquire); next != nullptr;
                 next = last->next.load(std::memory_order_acquire)) {
                last = next;
            }
            last->next.store(c, std::memory_order_release);
        }
        node.current.store(c, std::memory_order_release);
    }
    buffer.current = c;
    buffer.cursor = c->data();
    buffer.limit = c->data_end();
    return chunk_result::linked;
}

/// Sites of stint's own work during a session, recorded (cat "overhead") right after the record
/// whose append paid for it, at the same depth: the time is the enclosing scope's child, not its self
/// time.
inline constexpr site overhead_register_thread_site{"[stint] register thread", event_kind::overhead,
                                                    payload_kind::none, {}};
inline constexpr site overhead_buffer_chunk_site{"[stint] buffer chunk", event_kind::overhead, payload_kind::none,
                                                 {}};

/// Registers the thread, starts its session or takes a chunk, as needed, so that `bytes` fit, and an
/// overhead record after them when work was done. May throw std::bad_alloc (the caller counts a drop).
template <int = 0>
STINT_DETAIL_COLD buffer_room make_room_in_registry(thread_buffer& buffer, std::uint32_t state, std::size_t bytes,
                                                    std::uint64_t end) {
    const own_allocation_scope own;  // the chunks and nodes below are stint's, never reported
    registry& reg = the_registry();
    buffer_room room;
    if (buffer.node == nullptr) {
        reg.register_thread(buffer);
        room.overhead = &overhead_register_thread_site;
    }
    if (buffer.state != state) {
        const registry::session_start start = reg.reset_for_session(buffer, state, end);
        if (start == registry::session_start::refused) {
            room.discarded = true;
            return room;
        }
        if (start == registry::session_start::no_chunk && room.overhead == nullptr) {
            room.overhead = &overhead_buffer_chunk_site;
        }
    }
    if (bytes > chunk::data_bytes) return room;  // can never fit a chunk: dropped
    const auto left = [&] { return static_cast<std::size_t>(buffer.limit - buffer.cursor); };
    if (left() < bytes + sizeof(record)) {
        const registry::chunk_result taken =
            reg.next_chunk(buffer, state, std::min(bytes + sizeof(record), chunk::data_bytes), end);
        if (taken == registry::chunk_result::linked) {
            if (room.overhead == nullptr) room.overhead = &overhead_buffer_chunk_site;
        } else if (left() < bytes) {
            room.discarded = taken == registry::chunk_result::session_ended;  // counted late, or in no window
            if (taken == registry::chunk_result::budget_spent) reg.hand_over_chunk(buffer);
            return room;  // else the budget is spent: a drop
        }
    }
    // No room for the overhead record after the record (the budget is spent, or the record nearly fills
    // a chunk): the record wins.
    if (left() < bytes + sizeof(record)) room.overhead = nullptr;
    room.ok = true;
    return room;
}

/// Names `buffer`'s thread in traces, registering it first when needed.
template <class = void>
void set_thread_name_in_registry(thread_buffer& buffer, std::string_view name) {
    const own_allocation_scope own;
    registry& reg = the_registry();
    if (buffer.node == nullptr) reg.register_thread(buffer);
    reg.set_thread_name(*buffer.node, name);
}

/// Makes `buffer`'s stack of open scopes, registering its thread first when needed.
template <class = void>
open_scope_stack* make_open_scope_stack_in_registry(thread_buffer& buffer) {
    const own_allocation_scope own;
    registry& reg = the_registry();
    if (buffer.node == nullptr) reg.register_thread(buffer);
    return reg.make_open_scope_stack(*buffer.node, buffer);
}

/// The registry's side of the slow path, for every object that records (slow_path.hpp): installed by
/// the first profiler made (so that threads named after it are named in the registry) and by
/// the_registry(). The first object to install it wins; all of them reach the one registry. (Not at
/// load: an initializer would emit the registry's code in every file that includes this header.)
template <class = void>
const slow_path& registry_slow_path() noexcept {
    static constexpr slow_path table{&make_room_in_registry<0>,         &set_thread_name_in_registry<>,
                                     &intern_dynamic_site_in_table<>,    &intern_named_site_in_table<>,
                                     &intern_text_site_in_table<>,       &make_open_scope_stack_in_registry<>};
    return table;
}
template <class>
bool install_registry_slow_path() noexcept {
    const slow_path* none = nullptr;
    installed_slow_path.compare_exchange_strong(none, &registry_slow_path<>(), std::memory_order_acq_rel);
    return true;
}

}  // namespace STINT_DETAIL_ABI_NAMESPACE
}  // namespace stint::detail
