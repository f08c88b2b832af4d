#pragma once

#include <atomic>              // std::atomic
#include <condition_variable>  // std::condition_variable
#include <cstddef>             // std::size_t
#include <memory>              // std::unique_ptr, std::addressof
#include <mutex>               // std::mutex
#include <string_view>         // std::string_view
#include <thread>              // std::thread
#include <type_traits>         // std::remove_reference_t
#include <vector>              // std::vector

#include <sys/types.h>  // pid_t
#include <zlib.h>       // z_stream, deflate

#include "stint/detail/separate_compilation.hpp"

namespace stint::detail {

/// Gzip compression spread over threads: the bytes are cut into blocks of `block_size`, and each
/// block becomes an independent gzip member. Concatenated members are one valid .gz file (RFC 1952
/// §2.2; gzip -d, zcat, zlib's gzread, Python's gzip and Perfetto UI read them all). Members reach
/// `emit` in order, on the writer's thread. Workers (hardware threads less one, at most
/// `max_workers`, at least one) start with the first full block, so a file under one block starts no
/// thread; they stop at finish() or stop(). At most `2 × (workers + 1)` blocks are in flight; when
/// all are, the writer compresses a queued block itself rather than wait, so one core is never idle.
/// Measured (1 M events, 184 B of JSON each): zlib level 1 deflates this JSON at ~600 MB/s on one
/// core; 256 KiB members cost 1.8% more bytes than one stream (1 MiB ones 0.5%, but four times the
/// memory: with four workers 10 blocks in flight, ~2.7 MB resident against ~11 MB).
class gzip_members {
public:
    static constexpr std::size_t block_size = std::size_t{256} << 10;
    // Formatting runs at ~1.7 GB/s and one core deflates ~0.6 GB/s: beyond 4, workers would wait.
    static constexpr unsigned max_workers = 4;
    /// The deflate call compressors make; a test substitutes one that fails.
    using deflate_function = int (*)(z_streamp, int);

    STINT_DECL explicit gzip_members(int level, deflate_function deflate_block = &::deflate);

    gzip_members(const gzip_members&) = delete;
    gzip_members& operator=(const gzip_members&) = delete;

    STINT_DECL ~gzip_members();

    /// Appends `bytes`; emits the members that are finished. Returns 0, or the errno value of the
    /// first failure (ENOMEM, EIO), a worker's included.
    template <class Emit>
    int write(std::string_view bytes, Emit&& emit) {
        return write_members(bytes, emit_ref::to(emit));
    }

    /// Compresses what is left and emits every member in order (an empty gzip member if nothing was
    /// written at all), then stops the workers. Returns 0 or the first failure's errno value.
    template <class Emit>
    int finish(Emit&& emit) {
        return finish_members(emit_ref::to(emit));
    }

    /// Emits every full block written so far and joins the workers, keeping the partial block: a
    /// file that stays open between bursts (an execution trace between spans) leaves no thread of
    /// stint's waiting. The next full block starts workers again. Returns 0 or the errno value.
    template <class Emit>
    int pause(Emit&& emit) {
        return pause_members(emit_ref::to(emit));
    }

    /// Stops and joins the workers; blocks not yet compressed are dropped. Safe to call again, and
    /// from an `emit` that throws (no lock is held while emitting).
    STINT_DECL void stop() noexcept;

    /// Worker threads started (0 until the first full block).
    std::size_t workers() const { return workers_.size(); }

private:
    // The `emit` of write(), finish() and pause(), seen through a pointer by the compiled core: it is
    // called with each finished member, on the writer's thread, and may throw.
    struct emit_ref {
        void* target;
        void (*call)(void* target, const unsigned char* bytes, std::size_t size);

        template <class Emit>
        static emit_ref to(Emit& emit) noexcept {
            using callable = std::remove_reference_t<Emit>;
            return {const_cast<void*>(static_cast<const void*>(std::addressof(emit))),
                    [](void* t, const unsigned char* bytes, std::size_t size) {
                        (*static_cast<callable*>(t))(bytes, size);
                    }};
        }
        void operator()(const unsigned char* bytes, std::size_t size) const { call(target, bytes, size); }
    };

    STINT_DECL int write_members(std::string_view bytes, emit_ref emit);
    STINT_DECL int finish_members(emit_ref emit);
    STINT_DECL int pause_members(emit_ref emit);

    struct block {
        std::unique_ptr<char[]> in;
        std::unique_ptr<unsigned char[]> out;
        std::size_t in_size = 0;
        std::size_t out_size = 0;
        int error = 0;
        bool done = false;  // under mutex_
    };

    // zlib's bound for level 0 (stored blocks) is the size plus 5 bytes per 16 KiB and 18 for the
    // gzip header and trailer; 1/16 more leaves room for every level. Pages never written are never
    // made resident, so the margin costs address space only.
    static constexpr std::size_t out_capacity = block_size + block_size / 16 + 1024;

    // Two slots until workers start (a small file: the writer compresses alone).
    block& ring_slot(std::size_t sequence) { return ring_[sequence % ring_.size()]; }

    STINT_DECL static int allocate(block& b);

    // In a child forked while workers ran: blocks they held will never be done.
    STINT_DECL bool forked() const;

    STINT_DECL void start_workers();

    STINT_DECL int submit(emit_ref emit);

    STINT_DECL bool oldest_done();

    // Waits for the oldest block in flight, compressing queued ones meanwhile, and emits it.
    STINT_DECL int retire(emit_ref emit);

    STINT_DECL void work();

    // Under mutex_.
    STINT_DECL void finished(block& b);

    // One block into one gzip member; the stream is reused (deflateReset) from block to block.
    STINT_DECL void compress(z_stream& stream, bool& ready, block& b) const;

    const int level_;
    const deflate_function deflate_block_;
    std::vector<block> ring_;   // sized before any worker starts, never after
    std::vector<std::thread> workers_;
    bool workers_tried_ = false;
    pid_t owner_ = 0;                  // the process that started the workers
    z_stream own_stream_{};            // the writer's, when it compresses
    bool own_stream_ready_ = false;
    std::size_t written_ = 0;          // members emitted; the writer's alone

    std::mutex mutex_;
    std::condition_variable work_;     // a block was queued, or stop
    std::condition_variable done_;     // a block was compressed
    std::size_t submitted_ = 0;        // blocks queued; written by the writer under mutex_
    std::size_t claimed_ = 0;          // blocks taken by a compressor, under mutex_
    bool stopping_ = false;
    std::atomic<int> first_error_{0};
};

}  // namespace stint::detail

#if defined(STINT_HEADER_ONLY)
#include "stint/export/detail/impl/gzip_members.ipp"
#endif
