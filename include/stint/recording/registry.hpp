#pragma once
// The process-wide side of recording: the thread registry (which keeps exited threads' buffers until
// they are drained), the session lifecycle, fork safety, and the registry's half of the slow path
// (slow_path.hpp has the half every recording object compiles). The chunk pool it draws from is
// chunk_pool.hpp, the walk over a chunk's records record_walk.hpp, the flight recorder's ring ring.hpp.

#include <atomic>       // std::atomic
#include <cstddef>      // std::size_t
#include <cstdint>      // std::uint32_t, std::uint64_t
#include <memory>       // std::addressof
#include <mutex>        // std::mutex, std::once_flag
#include <string>       // std::string
#include <string_view>  // std::string_view
#include <utility>      // std::forward
#include <vector>       // std::vector

#include "stint/detail/export_macros.hpp"
#include "stint/detail/separate_compilation.hpp"
#include "stint/recording/buffer.hpp"
#include "stint/recording/chunk_pool.hpp"
#include "stint/recording/clock.hpp"
#include "stint/recording/object_links.hpp"
#include "stint/recording/detail/dynamic_name_table.hpp"  // the slow path's tables of interned sites
#include "stint/recording/detail/named_site_table.hpp"
#include "stint/recording/open_scopes.hpp"
#include "stint/recording/record_walk.hpp"
#include "stint/recording/ring.hpp"
#include "stint/recording/site.hpp"
#include "stint/recording/slow_path.hpp"
#include "stint/recording/thread_node.hpp"

namespace stint::detail {
inline namespace STINT_DETAIL_ABI_NAMESPACE {

/// A callback the registry calls, handed to its bodies without making them templates: the caller's
/// callable and a function that calls it (as fmt's format hands its arguments to vformat).
template <class Signature>
class registry_callback;
template <class... Args>
class registry_callback<void(Args...)> {
public:
    template <class F>
    explicit registry_callback(F& f) noexcept
        : object_(const_cast<void*>(static_cast<const void*>(std::addressof(f)))),
          call_([](void* object, Args... args) { (*static_cast<F*>(object))(std::forward<Args>(args)...); }) {}
    void operator()(Args... args) const { call_(object_, std::forward<Args>(args)...); }

private:
    void* object_;
    void (*call_)(void*, Args...);
};

/// One registry per process (see export_macros.hpp for how shared objects agree on it).
class registry {
public:
    registry() { install_fork_handlers(); }

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
    STINT_DECL std::uint32_t begin_session(std::size_t budget_bytes, bool streamed = false, ring_options ring = {});

    /// Stops recording `state`, calls `on_disabled(stop_ticks)`, then takes each thread's records out of its buffer
    /// and hands them to `on_taken(taken_records&&)`, all under the registry lock (so no new session
    /// can recycle the chunks being taken). Returns false when `state` is not the recording session
    /// (stopped already, or a fork ended it).
    template <class OnDisabled, class OnTaken>
    bool end_session(std::uint32_t state, OnDisabled&& on_disabled, OnTaken&& on_taken) {
        return end_session_erased(state, registry_callback<void(std::uint64_t)>(on_disabled),
                                  registry_callback<void(taken_records&&)>(on_taken));
    }

    /// Gives back a chunk that end_session handed over.
    void release_chunk(chunk* c) noexcept { pool_.release(c); }

    /// While session `state` records (a streamed session): takes from each of its threads' buffers the
    /// chunks the owner has moved past (all of an exited thread's), handing them to
    /// `on_taken(taken_records&&)` (without a tail), under the registry lock. Each must come back through
    /// give_back_streamed(), which returns its bytes to the session's budget.
    template <class OnTaken>
    void take_written(std::uint32_t state, OnTaken&& on_taken) {
        take_written_erased(state, registry_callback<void(taken_records&&)>(on_taken));
    }

    /// Gives back chunks that take_written() handed over: to the pool, and their bytes to the budget of
    /// session `state` (whose threads may take chunks again if it was spent).
    STINT_DECL void give_back_streamed(std::uint32_t state, chunk* chain) noexcept;

    /// While flight-recorder session `state` records: copies each of its buffers' records, oldest first,
    /// as `on_copied(taken_records&&)` (a tail, no chunks: the owner keeps writing), with what each had
    /// overwritten until then (taken_records::overwritten). Each chunk is copied under the node's ring
    /// lock, which its owner takes only to overwrite a chunk: a recording thread waits at most one
    /// chunk's copy, and only if it changes chunks meanwhile. False when `state` is not recording.
    /// Nodes are freed only when a session begins or ends: the caller keeps both out while it copies.
    template <class OnCopied>
    bool copy_ring(std::uint32_t state, OnCopied&& on_copied) {
        return copy_ring_erased(state, registry_callback<void(taken_records&&)>(on_copied));
    }

    /// Records of earlier sessions found since the drain before this one: scopes that ended before
    /// their session stopped but reached their buffer after it was drained (a thread preempted
    /// between its scope's end and its append). Exact inside end_session's callbacks.
    std::uint64_t late_records_found() const noexcept { return late_in_last_drain_; }
    /// Late records found since the process started.
    STINT_DECL std::uint64_t late_records_total();

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
    STINT_DECL std::size_t registered_threads();

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

    /// For a crash handler only: while `on`, no chunk of a flight recorder's ring is overwritten or taken
    /// (recording/ring.hpp); a thread that would need one drops its record, counted as a drop.
    void freeze_ring(bool on) noexcept { pool_.ring_frozen.store(on, std::memory_order_seq_cst); }

    /// A request for signal stacks (`on`), or its end (`!on`), one of each per crash dump a flight recorder
    /// installs: while any stands, each thread that begins to record in a session gets an alternate signal
    /// stack (recording/signal_stack.hpp), so that a stack overflow still dumps. Counted: a second recorder
    /// that fails to start takes back its own request only.
    void want_signal_stacks(bool on) noexcept {
        if (on) {
            signal_stack_requests_.fetch_add(1, std::memory_order_relaxed);
        } else {
            signal_stack_requests_.fetch_sub(1, std::memory_order_relaxed);
        }
    }

    /// Gives `node` (the caller's) its stack of open scopes, set on its buffer too; under the lock, as the
    /// hang watchdog reads the pointer under it.
    STINT_DECL open_scope_stack* make_open_scope_stack(thread_node& node, thread_buffer& buffer);

    /// A scope open on a thread when asked: where it is, when it began, and its name when given at run
    /// time (else the site's).
    struct open_scope {
        std::uint64_t os_tid = 0;
        std::string thread_name;  ///< the thread's name (a thread with no record yet has no other)
        const site* where = nullptr;
        std::string name;
        std::uint64_t begin_ticks = 0;
        std::uint32_t depth = 0;
    };
    /// The scopes open now that began at or after `since_ticks` (the session's start: older entries are
    /// of scopes entered before it, which it did not note), outermost first per thread; and the count of
    /// deeper ones not kept (past open_scope_stack::capacity). Read while the threads run: a scope that
    /// ends meanwhile may still be listed.
    STINT_DECL std::vector<open_scope> open_scopes(std::uint64_t since_ticks, std::uint64_t& not_kept);
    /// An entry's name: the site's, or the first bytes of one given at run time ("..." when cut).
    STINT_DECL static std::string open_scope_name(const open_scope_stack::snapshot& e, const site& where);

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
    STINT_DECL std::size_t live_threads();

    /// The objects that hold copies of their own of the process-wide state (object_links.hpp), linked
    /// when a session began: the session writes its capture switches, memory state and hooks into each.
    STINT_DECL std::vector<const object_link*> linked_objects();
    /// Links the objects loaded since the last session began (called when one stopped): the names of
    /// those with copies of their own, loaded while it recorded (their events start with the next
    /// session). Outside the registry's lock.
    STINT_DECL std::vector<std::string> link_objects_loaded_since();

    /// Whether `state` is the session currently recording.
    STINT_DECL bool is_active(std::uint32_t state);

    /// Process-wide tick calibration, measured once (10 ms of spinning) at the first session.
    STINT_DECL const tick_calibration& calibration();

    // --- called by the owning thread's slow path ---

    STINT_DECL bool register_thread(thread_buffer& buffer);
    /// What starting a session on a thread took: nothing (it is not the recording session), a chunk
    /// set aside at begin_session (cheap: no allocation, no page fault), or no chunk yet.
    enum class session_start { refused, ready_chunk, no_chunk };
    /// `end`: the end tick of the record that needs it (counted late when the session has just ended).
    STINT_DECL session_start reset_for_session(thread_buffer& buffer, std::uint32_t state, std::uint64_t end);
    /// What next_chunk did: linked a chunk, found the budget spent (a drop), or found the session
    /// ended (the record is counted late when it ended before the stop, else it is in no window).
    enum class chunk_result { linked, budget_spent, session_ended };
    /// Links a new chunk with room for at least `min_data` bytes for a record that ended at `end`.
    STINT_DECL chunk_result next_chunk(thread_buffer& buffer, std::uint32_t state, std::size_t min_data,
                                       std::uint64_t end);
    /// In a streamed session, when the budget had no chunk for a record that does not fit: hands the
    /// thread's chunk over to the writer (every record in it is published). The writer takes only
    /// chunks a thread has moved past, so full chunks that nobody can move past could otherwise hold
    /// the whole budget with nothing to give back. The thread's next chunk starts a chain of its own.
    STINT_DECL void hand_over_chunk(thread_buffer& buffer) noexcept;
    STINT_DECL void set_thread_name(thread_node& node, std::string_view name);

private:
    STINT_DECL bool end_session_erased(std::uint32_t state, registry_callback<void(std::uint64_t)> on_disabled,
                                       registry_callback<void(taken_records&&)> on_taken);
    STINT_DECL void take_written_erased(std::uint32_t state, registry_callback<void(taken_records&&)> on_taken);
    STINT_DECL bool copy_ring_erased(std::uint32_t state, registry_callback<void(taken_records&&)> on_copied);

    /// When a flight recorder's budget is spent, a thread holding less than an equal share of it (a
    /// thread that began to record late, or records more than it did) takes the oldest chunk of the
    /// thread that holds most, while that one keeps at least two: each chunk change of the poorer
    /// thread moves one chunk, so busy threads come to equal shares. Null when none is taken.
    STINT_DECL chunk* take_richest_oldest(thread_buffer& buffer, std::size_t min_data) noexcept;

    // Takes the node's records: the chunks its owner has moved past, and a copy of what it published in
    // the one it keeps writing into (late scopes land there; count_late finds them from where the copy
    // ended, and the owner returns that chunk when its next session begins).
    STINT_DECL taken_records take_node(thread_node& node, std::uint32_t state, std::uint64_t stop_ticks);

    /// Counts the records of the node's drained session that reached its buffer after the drain (and
    /// its drops since), once each: before the node's chunks are reused or freed, and at each later
    /// drain. Under the registry mutex.
    STINT_DECL void count_late(thread_node& node) noexcept;

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
    STINT_DECL void set_aside_ready_chunks(std::size_t budget_bytes, std::uint32_t size_class) noexcept;

    STINT_DECL void free_exited_nodes() noexcept;

    STINT_DECL void release_chain(thread_node& node) noexcept;

    STINT_DECL static void install_fork_handlers() noexcept;
    STINT_DECL void before_fork() noexcept;
    STINT_DECL void after_fork_in_parent() noexcept;
    /// The child has one thread and no session: in-flight records of the parent's session are
    /// abandoned (a new serial makes every open scope stale), other threads' nodes are freed at the
    /// next session, and the forking thread keeps its nodes under its new tid.
    STINT_DECL void after_fork_in_child() noexcept;

    std::mutex mutex_;  // nodes_, active_, serial_, node names, session transitions
    object_links links_;  // its own lock, taken after mutex_ when both are held
    std::vector<thread_node*> nodes_;
    chunk_pool pool_;
    // Set by begin_session, read by next_chunk (atomics: a thread preempted across a stop and the next
    // start may read them while they change).
    std::atomic<std::uint32_t> growth_limit_{chunk_pool::largest_class};
    std::atomic<bool> streamed_{false};
    std::atomic<bool> ring_{false};  // a flight recorder's session: threads overwrite their oldest chunks
    std::atomic<std::size_t> node_count_{0};  // nodes_.size(), read without the lock
    std::atomic<std::uint32_t> signal_stack_requests_{0};  // crash dumps installed (want_signal_stacks)
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

/// The process's registry. Deliberately leaked: threads and atexit handlers may still record while
/// static destructors run, so it must outlive every one of them. Exported, so that every shared
/// object (hidden visibility or not) binds to the one definition and its one instance.
STINT_DECL STINT_DETAIL_EXPORT registry& the_registry();

/// Sites of stint's own work during a session, recorded (cat "overhead") right after the record
/// whose append paid for it, at the same depth: the time is the enclosing scope's child, not its self
/// time.
inline constexpr site overhead_register_thread_site{"[stint] register thread", event_kind::overhead,
                                                    payload_kind::none, {}};
inline constexpr site overhead_buffer_chunk_site{"[stint] buffer chunk", event_kind::overhead, payload_kind::none,
                                                 {}};

/// Registers the thread, starts its session or takes a chunk, as needed, so that `bytes` fit, and an
/// overhead record after them when work was done. May throw std::bad_alloc (the caller counts a drop).
/// Cold, and never inlined: it is reached only through the slow path's table (STINT_DETAIL_COLD's
/// `noinline` would contradict the `inline` of a header-only build).
#if defined(__GNUC__) || defined(__clang__)
[[gnu::cold]]
#endif
STINT_DECL buffer_room make_room_in_registry(thread_buffer& buffer, std::uint32_t state, std::size_t bytes,
                                             std::uint64_t end);

/// Names `buffer`'s thread in traces, registering it first when needed.
STINT_DECL void set_thread_name_in_registry(thread_buffer& buffer, std::string_view name);

/// Makes `buffer`'s stack of open scopes, registering its thread first when needed.
STINT_DECL open_scope_stack* make_open_scope_stack_in_registry(thread_buffer& buffer);

/// The registry's side of the slow path, for every object that records (slow_path.hpp): installed by
/// the first profiler made (so that threads named after it are named in the registry) and by
/// the_registry(). The first object to install it wins; all of them reach the one registry. (Not at
/// load: an initializer would emit the registry's code in every file that includes this header.)
STINT_DECL const slow_path& registry_slow_path() noexcept;
/// Installs registry_slow_path() unless an object installed its own first; returns true.
STINT_DECL bool install_registry_slow_path() noexcept;

}  // namespace STINT_DETAIL_ABI_NAMESPACE
}  // namespace stint::detail

#if defined(STINT_HEADER_ONLY)
#include "stint/recording/impl/registry.ipp"
#endif
