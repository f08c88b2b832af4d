#pragma once

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstddef>
#include <cstring>
#include <exception>
#include <memory>
#include <mutex>
#include <new>
#include <string_view>
#include <system_error>
#include <thread>
#include <vector>

#include <sys/types.h>
#include <unistd.h>
#include <zlib.h>

#include "stint/detail/deferred.hpp"

namespace stint::detail {

template <class = void>
class basic_gzip_members;
/// basic_gzip_members's one form (a template only so that a file that does not use it does not compile it).
using gzip_members = basic_gzip_members<>;

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
template <class Unused>
class basic_gzip_members {
    template <class T>
    using later = deferred_t<T, Unused>;  // checked when used (detail/deferred.hpp)

public:
    static constexpr std::size_t block_size = std::size_t{256} << 10;
    // Formatting runs at ~1.7 GB/s and one core deflates ~0.6 GB/s: beyond 4, workers would wait.
    static constexpr unsigned max_workers = 4;
    /// The deflate call compressors make; a test substitutes one that fails.
    using deflate_function = int (*)(z_streamp, int);

    explicit basic_gzip_members(int level, deflate_function deflate_block = &::deflate)
        : level_(level), deflate_block_(deflate_block), ring_(2) {}

    basic_gzip_members(const basic_gzip_members&) = delete;
    basic_gzip_members& operator=(const basic_gzip_members&) = delete;

    ~basic_gzip_members() {
        stop();
        if (own_stream_ready_) deflateEnd(&own_stream_);
    }

    /// Appends `bytes`; emits the members that are finished. Returns 0, or the errno value of the
    /// first failure (ENOMEM, EIO), a worker's included.
    template <class Emit>
    int write(std::string_view bytes, Emit&& emit) {
        if (forked()) return EIO;
        // acquire: pairs with the release in finished(); a worker's failure shows at the next write.
        if (const int error = first_error_.load(std::memory_order_acquire)) return error;
        while (!bytes.empty()) {
            block& current = ring_slot(submitted_);
            if (!current.in) {
                if (const int error = allocate(current)) return error;
            }
            const std::size_t piece = std::min(bytes.size(), block_size - current.in_size);
            std::memcpy(current.in.get() + current.in_size, bytes.data(), piece);
            current.in_size += piece;
            bytes.remove_prefix(piece);
            if (current.in_size == block_size) {
                if (workers_.empty() && !workers_tried_) start_workers();
                if (const int error = submit(emit)) return error;
            }
        }
        return 0;
    }

    /// Compresses what is left and emits every member in order (an empty gzip member if nothing was
    /// written at all), then stops the workers. Returns 0 or the first failure's errno value.
    template <class Emit>
    int finish(Emit&& emit) {
        if (forked()) return EIO;
        if (const int error = first_error_.load(std::memory_order_acquire)) return error;
        block& current = ring_slot(submitted_);
        if (current.in_size > 0 || submitted_ == 0) {
            if (!current.in) {
                if (const int error = allocate(current)) return error;
            }
            if (const int error = submit(emit)) return error;
        }
        while (written_ < submitted_) {
            if (const int error = retire(emit)) return error;
        }
        stop();
        return 0;
    }

    /// Emits every full block written so far and joins the workers, keeping the partial block: a
    /// file that stays open between bursts (an execution trace between spans) leaves no thread of
    /// stint's waiting. The next full block starts workers again. Returns 0 or the errno value.
    template <class Emit>
    int pause(Emit&& emit) {
        if (forked()) return EIO;
        if (const int error = first_error_.load(std::memory_order_acquire)) return error;
        while (written_ < submitted_) {
            if (const int error = retire(emit)) return error;
        }
        if (workers_.empty()) return 0;
        stop();
        stopping_ = false;  // no worker left to read it
        workers_tried_ = false;
        return 0;
    }

    /// Stops and joins the workers; blocks not yet compressed are dropped. Safe to call again, and
    /// from an `emit` that throws (no lock is held while emitting).
    void stop() noexcept {
        if (forked()) {
            // A forked child has none of the workers, and a worker may have held mutex_ at the fork:
            // their handles are let go unjoined (joining would wait forever, dropping them would
            // call std::terminate).
            const auto* kept = new (std::nothrow) later<std::vector<std::thread>>(std::move(workers_));
            if (kept == nullptr) {
                for (std::thread& worker : workers_) worker.detach();
            }
            workers_.clear();
            return;
        }
        {
            std::lock_guard<std::mutex> lock(mutex_);
            stopping_ = true;
        }
        work_.notify_all();
        for (std::thread& worker : workers_) worker.join();
        workers_.clear();
    }

    /// Worker threads started (0 until the first full block).
    std::size_t workers() const { return workers_.size(); }

private:
    struct block {
        later<std::unique_ptr<char[]>> in;
        later<std::unique_ptr<unsigned char[]>> out;
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

    static int allocate(block& b) {
        // new[] without value-initialization: zeroing a block would cost as much as copying it.
        b.in.reset(new (std::nothrow) char[block_size]);
        b.out.reset(new (std::nothrow) unsigned char[out_capacity]);
        if (b.in && b.out) return 0;
        b.in.reset();  // both or neither: a later write allocates again
        b.out.reset();
        return ENOMEM;
    }

    // In a child forked while workers ran: blocks they held will never be done.
    bool forked() const { return !workers_.empty() && ::getpid() != owner_; }

    void start_workers() {
        workers_tried_ = true;
        owner_ = ::getpid();
        const unsigned hardware = std::thread::hardware_concurrency();
        const unsigned wanted = std::clamp(hardware > 1 ? hardware - 1 : 1u, 1u, max_workers);
        try {
            // Before any block is queued (only block 0 is filled, at index 0 in either size): a
            // worker never sees the ring resized under it.
            ring_.resize(2 * (wanted + 1));
            workers_.reserve(wanted);
            for (unsigned i = 0; i < wanted; ++i) workers_.emplace_back([this] { work(); });
        } catch (const std::exception&) {
            // No memory or no thread to be had (EAGAIN): the writer compresses what the others do not.
        }
    }

    template <class Emit>
    int submit(Emit& emit) {
        {
            std::lock_guard<std::mutex> lock(mutex_);
            ++submitted_;
        }
        if (!workers_.empty()) work_.notify_one();
        // Members already finished go out now; a full ring waits for (and helps with) its oldest.
        while (written_ < submitted_ && (submitted_ - written_ == ring_.size() || oldest_done())) {
            if (const int error = retire(emit)) return error;
        }
        return 0;
    }

    bool oldest_done() {
        std::lock_guard<std::mutex> lock(mutex_);
        return ring_slot(written_).done;
    }

    // Waits for the oldest block in flight, compressing queued ones meanwhile, and emits it.
    template <class Emit>
    int retire(Emit& emit) {
        block& oldest = ring_slot(written_);
        {
            std::unique_lock<std::mutex> lock(mutex_);
            while (!oldest.done) {
                if (claimed_ < submitted_) {
                    block& queued = ring_slot(claimed_++);
                    lock.unlock();
                    compress(own_stream_, own_stream_ready_, queued);
                    lock.lock();
                    finished(queued);
                } else {
                    done_.wait(lock);
                }
            }
            oldest.done = false;
        }
        ++written_;
        if (oldest.error != 0) return oldest.error;
        emit(oldest.out.get(), oldest.out_size);
        oldest.in_size = 0;
        return 0;
    }

    void work() {
        z_stream stream{};
        bool ready = false;
        std::unique_lock<std::mutex> lock(mutex_);
        for (;;) {
            work_.wait(lock, [this] { return stopping_ || claimed_ < submitted_; });
            if (stopping_) break;
            block& queued = ring_slot(claimed_++);
            lock.unlock();
            compress(stream, ready, queued);
            lock.lock();
            finished(queued);
        }
        lock.unlock();
        if (ready) deflateEnd(&stream);
    }

    // Under mutex_.
    void finished(block& b) {
        b.done = true;
        if (b.error != 0) {
            int none = 0;
            // release: pairs with the acquire in write() and finish().
            first_error_.compare_exchange_strong(none, b.error, std::memory_order_release,
                                                 std::memory_order_relaxed);
        }
        done_.notify_all();
    }

    // One block into one gzip member; the stream is reused (deflateReset) from block to block.
    void compress(z_stream& stream, bool& ready, block& b) const {
        if (!ready) {
            // windowBits 15 + 16: a gzip header and trailer instead of a raw zlib stream.
            const int rc = deflateInit2(&stream, level_, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY);
            if (rc != Z_OK) {
                b.error = rc == Z_MEM_ERROR ? ENOMEM : EIO;
                return;
            }
            ready = true;
        } else if (deflateReset(&stream) != Z_OK) {
            b.error = EIO;
            return;
        }
        // zlib's API is not const-correct without ZLIB_CONST; deflate only reads next_in.
        stream.next_in = reinterpret_cast<Bytef*>(b.in.get());
        stream.avail_in = static_cast<uInt>(b.in_size);
        stream.next_out = b.out.get();
        stream.avail_out = static_cast<uInt>(out_capacity);
        // One call: the output has room for the whole member, so anything but the end is a failure.
        if (deflate_block_(&stream, Z_FINISH) != Z_STREAM_END) {
            b.error = EIO;
            return;
        }
        b.out_size = out_capacity - stream.avail_out;
    }

    const int level_;
    const deflate_function deflate_block_;
    later<std::vector<block>> ring_;   // sized before any worker starts, never after
    later<std::vector<std::thread>> workers_;
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
