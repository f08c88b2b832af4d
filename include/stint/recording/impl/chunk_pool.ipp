#pragma once
// The chunk pool's bodies: acquiring, charging, caching and freeing chunks, and the prefault thread.

#include "stint/recording/chunk_pool.hpp"

#include <algorithm>           // std::max, std::min
#include <condition_variable>  // std::condition_variable
#include <memory>              // std::make_unique
#include <new>                 // std::bad_alloc
#include <thread>              // std::thread
#include <utility>             // std::exchange

#include "stint/detail/platform.hpp"

namespace stint::detail {
inline namespace STINT_DETAIL_ABI_NAMESPACE {

/// A thread of stint's that exists only while a session records.
struct chunk_pool::prefault_worker {
    std::thread thread;
    std::condition_variable wake;
    bool stop = false;  // guarded by the pool mutex
};

chunk* chunk_pool::acquire(std::uint32_t size_class, std::size_t min_data) {
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

bool chunk_pool::charge(std::uint32_t size_class) noexcept {
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

chunk* chunk_pool::take_uncharged(std::uint32_t size_class) {
    chunk* c = pop_cached(size_class);
    if (c == nullptr) {
        c = allocate_on_demand(size_class);
    }
    c->published.store(c->data(), std::memory_order_relaxed);
    c->next.store(nullptr, std::memory_order_relaxed);
    c->reset_ring_notes();
    return c;
}

void chunk_pool::release(chunk* c) noexcept {
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

void chunk_pool::reserve(std::size_t bytes) {
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

void chunk_pool::retain_at_least(std::size_t bytes) noexcept {
    std::lock_guard lock(mutex_);
    retained_bytes_ = std::max(retained_bytes_, bytes);
}

void chunk_pool::set_retained(std::size_t bytes) noexcept {
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

void chunk_pool::start_prefaulting() noexcept {
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

void chunk_pool::stop_prefaulting() noexcept {
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

bool chunk_pool::prefaulting() noexcept {
    std::lock_guard lock(mutex_);
    return prefault_ != nullptr;
}

std::size_t chunk_pool::cached_bytes() {
    std::lock_guard lock(mutex_);
    return cached_bytes_;
}

void chunk_pool::refund(std::uint32_t size_class) noexcept {
    budget_left_.fetch_add(static_cast<std::int64_t>(chunk::bytes_of_class(size_class)),
                           std::memory_order_seq_cst);
}

chunk* chunk_pool::pop_cached(std::uint32_t size_class) noexcept {
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

void chunk_pool::prefault_loop(prefault_worker& worker) noexcept {
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

chunk* chunk_pool::allocate_on_demand(std::uint32_t size_class) {
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

bool chunk_pool::cache_largest(std::span<chunk* const> faulted) noexcept {
    try {
        free_[largest_class].insert(free_[largest_class].end(), faulted.begin(), faulted.end());
        cached_bytes_ += faulted.size() * chunk::total_bytes;
        return true;
    } catch (...) {
        for (chunk* c : faulted) deallocate(c);
        return false;
    }
}

}  // namespace STINT_DETAIL_ABI_NAMESPACE
}  // namespace stint::detail
