#pragma once
// gzip_members' bodies: blocks deflated on worker threads into gzip members, emitted in order.
#include "stint/export/detail/gzip_members.hpp"

#include <algorithm>  // std::min, std::clamp
#include <cerrno>     // ENOMEM, EIO
#include <cstring>    // std::memcpy
#include <exception>  // std::exception
#include <new>        // std::nothrow

#include <unistd.h>  // getpid

namespace stint::detail {

gzip_members::gzip_members(int level, deflate_function deflate_block)
    : level_(level), deflate_block_(deflate_block), ring_(2) {}

gzip_members::~gzip_members() {
    stop();
    if (own_stream_ready_) deflateEnd(&own_stream_);
}

int gzip_members::write_members(std::string_view bytes, emit_ref emit) {
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

int gzip_members::finish_members(emit_ref emit) {
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

int gzip_members::pause_members(emit_ref emit) {
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

void gzip_members::stop() noexcept {
    if (forked()) {
        // A forked child has none of the workers, and a worker may have held mutex_ at the fork:
        // their handles are let go unjoined (joining would wait forever, dropping them would
        // call std::terminate).
        const auto* kept = new (std::nothrow) std::vector<std::thread>(std::move(workers_));
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

int gzip_members::allocate(block& b) {
    // new[] without value-initialization: zeroing a block would cost as much as copying it.
    b.in.reset(new (std::nothrow) char[block_size]);
    b.out.reset(new (std::nothrow) unsigned char[out_capacity]);
    if (b.in && b.out) return 0;
    b.in.reset();  // both or neither: a later write allocates again
    b.out.reset();
    return ENOMEM;
}

bool gzip_members::forked() const { return !workers_.empty() && ::getpid() != owner_; }

void gzip_members::start_workers() {
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

int gzip_members::submit(emit_ref emit) {
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

bool gzip_members::oldest_done() {
    std::lock_guard<std::mutex> lock(mutex_);
    return ring_slot(written_).done;
}

int gzip_members::retire(emit_ref emit) {
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

void gzip_members::work() {
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

void gzip_members::finished(block& b) {
    b.done = true;
    if (b.error != 0) {
        int none = 0;
        // release: pairs with the acquire in write() and finish().
        first_error_.compare_exchange_strong(none, b.error, std::memory_order_release,
                                             std::memory_order_relaxed);
    }
    done_.notify_all();
}

void gzip_members::compress(z_stream& stream, bool& ready, block& b) const {
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


}  // namespace stint::detail
