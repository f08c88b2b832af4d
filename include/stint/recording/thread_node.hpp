#pragma once
// A thread's entry in the registry: what the drain reads of a thread's buffer, and the counts the
// owning thread keeps in it (drops, cut names).

#include <atomic>   // std::atomic, std::atomic_flag, std::memory_order
#include <cstddef>  // std::size_t, std::byte
#include <cstdint>  // std::uint64_t, std::uint32_t
#include <string>   // std::string

#include "stint/detail/export_macros.hpp"
#include "stint/recording/buffer.hpp"

namespace stint::detail {
inline namespace STINT_DETAIL_ABI_NAMESPACE {

/// A thread's open scopes while a flight recorder records (recording/open_scopes.hpp): the outermost
/// `capacity` scopes open on a thread (per shared object, like its buffer). A deeper scope is not noted:
/// the depth still counts it, and a reader says how many were left out. (Slots are not reused modulo
/// the capacity: a deep recursion that came back would leave its closed scopes in the slots of open
/// ones.) Written only by the owning thread; read by others below an acquire of `depth`, each entry
/// through read_entry(), a seqlock on its begin_ticks: a reader racing the owner may see a scope that
/// has just ended, or drop an entry being rewritten, never mix two scopes' fields.
struct open_scope_stack {
    static constexpr std::uint32_t capacity = 64;
    /// The first bytes of a name given at run time (STINT_SCOPE_NAMED, record_function), copied at entry:
    /// a reader may not follow a pointer into a scope that may end while it reads.
    static constexpr std::size_t name_words = 3;
    struct entry {
        std::atomic<const site*> where{nullptr};
        std::atomic<std::uint64_t> begin_ticks{0};
        std::atomic<std::uint64_t> name_size{0};  ///< the whole name's size, where the site's payload is a name
        std::atomic<std::uint64_t> name[name_words] = {};
    };
    /// Scopes open (recorded scopes entered and not left), as the thread's buffer counts them.
    std::atomic<std::uint32_t> depth{0};
    entry entries[capacity];

    /// An entry as one reader saw it whole.
    struct snapshot {
        const site* where = nullptr;
        std::uint64_t begin_ticks = 0;
        std::uint64_t name_size = 0;
        std::uint64_t name[name_words] = {};
    };
    /// Reads entry `i` (below a depth read with acquire) while its owner may rewrite it: begin_ticks is 0
    /// while the owner writes the entry (note_scope_entered), so a read that sees 0, or a different
    /// begin after the other fields than before, saw a rewrite and gives false (the scope it held has
    /// ended). Lock-free and async-signal-safe: the crash handler reads with it.
    bool read_entry(std::uint32_t i, snapshot& out) const noexcept {
        const entry& e = entries[i];
        out.begin_ticks = e.begin_ticks.load(std::memory_order_acquire);
        out.where = e.where.load(std::memory_order_relaxed);
        out.name_size = e.name_size.load(std::memory_order_relaxed);
        for (std::size_t w = 0; w < name_words; ++w) out.name[w] = e.name[w].load(std::memory_order_relaxed);
        std::atomic_thread_fence(std::memory_order_acquire);
        return out.begin_ticks != 0 && e.begin_ticks.load(std::memory_order_relaxed) == out.begin_ticks;
    }
};

/// A thread's entry in the registry (one per thread and per shared object that records).
struct thread_node {
    thread_node() = default;
    thread_node(const thread_node&) = delete;
    thread_node& operator=(const thread_node&) = delete;
    ~thread_node() { delete open; }

    /// Session the chunks below belong to. Written by the owner under the registry mutex.
    std::atomic<std::uint32_t> state{0};
    /// First and current chunk of the session. Release by the owner; acquire in drain.
    std::atomic<chunk*> head{nullptr};
    std::atomic<chunk*> current{nullptr};
    /// Records lost to the budget in this node's session. Single writer (the owner).
    std::atomic<std::uint64_t> dropped{0};
    /// Runtime names cut to max_runtime_name_bytes. Single writer (the owner).
    std::atomic<std::uint64_t> truncated{0};
    /// A warm chunk begin_session() set aside for this thread, so that its first record of the session
    /// neither allocates nor faults pages in. Taken by the owner under the registry mutex.
    chunk* ready = nullptr;
    /// Where the drain of session `drained_state` stopped reading (the chunk the owner kept and the end
    /// of what it had published), and the counts it read. A scope that ended before that stop but
    /// reached the buffer after the drain lands beyond this point: count_late() finds it there.
    /// Guarded by the registry mutex.
    std::uint32_t drained_state = 0;
    std::uint64_t drained_stop_ticks = 0;
    chunk* drained_chunk = nullptr;
    const std::byte* drained_until = nullptr;
    std::uint64_t drained_dropped = 0;
    /// Flight recorder (recording/ring.hpp): held by the owner while it overwrites its oldest chunk and
    /// by a dump while it copies one, never per record. What was overwritten, under it: the program's
    /// records (stint's overhead records apart), the latest end tick among all of them, and how many
    /// chunks were unlinked (a dump's way to know whether a chunk it has not copied yet is still linked).
    std::atomic_flag ring_lock;
    std::uint64_t overwritten = 0;
    std::uint64_t overwritten_until = 0;
    std::uint64_t chunks_unlinked = 0;
    /// Bytes of chunks in the node's chain in a flight recorder's session: a thread that holds less than
    /// its share of a spent budget takes the oldest chunk of the thread that holds most (registry.hpp).
    std::atomic<std::uint64_t> ring_bytes{0};
    /// Set by the thread-exit guard (release); the drain then frees the node (acquire).
    std::atomic<bool> exited{false};
    std::uint64_t os_tid = 0;
    std::string name;  ///< guarded by the registry mutex
    /// Made by the owner at its first scope in a flight recorder's session (the buffer points at it too);
    /// read by the hang watchdog under the registry mutex and by the crash handler.
    open_scope_stack* open = nullptr;
    /// The alternate signal stack the owner runs a crash handler on (recording/signal_stack.hpp), made
    /// while a crash dump is installed; turned off by the owner as it ends (thread_exit_guard), then freed
    /// with the node.
    void* signal_stack = nullptr;
    std::size_t signal_stack_bytes = 0;
};

/// Holds a node's ring_lock (a flag that waits: this header stays free of <mutex>).
class ring_guard {
public:
    explicit ring_guard(thread_node& node) noexcept : lock_(node.ring_lock) {
        // acquire: pairs with the release in the destructor; the holder before us wrote the chain.
        while (lock_.test_and_set(std::memory_order_acquire)) lock_.wait(true, std::memory_order_relaxed);
    }
    ~ring_guard() {
        lock_.clear(std::memory_order_release);
        lock_.notify_one();
    }
    ring_guard(const ring_guard&) = delete;
    ring_guard& operator=(const ring_guard&) = delete;

private:
    std::atomic_flag& lock_;
};

inline void bump(std::atomic<std::uint64_t>& counter) noexcept {
    // Single writer: a load and a store, no read-modify-write.
    counter.store(counter.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
}

}  // namespace STINT_DETAIL_ABI_NAMESPACE
}  // namespace stint::detail
