#pragma once
// Where buffer chunks' memory comes from: the largest chunks are carved from 2 MiB slabs that the
// kernel may back with one transparent huge page each; the others come from the heap.
//
// A page's first write, not the record written into it, is what recording into fresh memory costs.
// On this project's VMs (a hypervisor that traps each first write) a 4 KiB page takes 10-16 us to
// fault in: 60-95 ns for each 24-byte record it holds, against 23 ns for the record itself, so one
// prefault thread cannot stay ahead of one recording thread. A 2 MiB huge page faults in at once, in
// 0.1-0.4 ms (about 1-5 ns per record), and takes 511 entries off the TLB. Slabs are advised
// MADV_HUGEPAGE, so this holds where transparent huge pages are "always" or "madvise" (Debian's
// default); where the kernel gives none, a slab's pages fault in one by one, as heap chunks do.
// Machines differ (an earlier VM of this project faulted huge pages in at a quarter of the speed of
// small ones), so allocate_largest() measures both ways as it goes and takes the cheaper.

#include <algorithm>      // std::max
#include <atomic>         // std::atomic, std::memory_order_relaxed
#include <chrono>         // std::chrono::steady_clock, std::chrono::duration_cast
#include <cstddef>        // std::size_t, std::byte
#include <cstdint>        // std::int64_t, std::uintptr_t, std::uint32_t
#include <mutex>          // std::mutex, std::lock_guard
#include <new>            // ::operator new, std::align_val_t, placement new
#include <span>           // std::span
#include <unordered_map>  // std::unordered_map

#if defined(__linux__)
#include <sys/mman.h>  // ::mmap, ::munmap, ::madvise
#endif

// LeakSanitizer scans the heap, not memory mapped by hand: a heap chunk that only a slab's chunk points
// to (a thread's chunk list runs through both) would look leaked. Slabs are registered as roots.
#if defined(__SANITIZE_ADDRESS__)
#define STINT_DETAIL_LSAN_ROOTS 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(leak_sanitizer)
#define STINT_DETAIL_LSAN_ROOTS 1
#endif
#endif
#if defined(STINT_DETAIL_LSAN_ROOTS)
#include <sanitizer/lsan_interface.h>  // __lsan_register_root_region, __lsan_unregister_root_region
#endif

#include "stint/recording/buffer.hpp"

namespace stint::detail {
inline namespace STINT_DETAIL_ABI_NAMESPACE {

class chunk_memory {
public:
    static constexpr std::size_t slab_bytes = std::size_t{2} << 20;
    static constexpr std::size_t chunks_per_slab = slab_bytes / chunk::total_bytes;
    static_assert(slab_bytes % chunk::total_bytes == 0);

    /// Largest chunks, every page faulted in, the way that has cost least per chunk on this machine:
    /// a whole slab (only where `slab_allowed`) or one chunk from the heap. Returns how many it put in
    /// `out` (a slab's worth, or 1). Each way is tried once first, and the dearer one again every
    /// 64th time, since its cost changes with the machine's state (free huge pages, a host's backing).
    std::size_t allocate_largest(std::span<chunk*, chunks_per_slab> out, bool slab_allowed) {
        const bool slab =
            slab_allowed && prefer_slab(slab_ns_.load(std::memory_order_relaxed),
                                        single_ns_.load(std::memory_order_relaxed), decisions_);
        const auto begin = std::chrono::steady_clock::now();
        std::size_t count = 1;
        if (slab && allocate_slab(out)) {
            count = chunks_per_slab;
        } else {
            out[0] = allocate_one(largest_class);
        }
        const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - begin);
        note_cost(count == chunks_per_slab ? slab_ns_ : single_ns_,
                  std::max<std::int64_t>(1, ns.count() / static_cast<std::int64_t>(count)));
        return count;
    }

    /// The choice allocate_largest() makes from each way's cost per chunk (0: not tried yet); counts
    /// its decisions between two tried ways in `decisions`.
    static bool prefer_slab(std::int64_t slab_ns, std::int64_t single_ns, std::atomic<std::uint32_t>& decisions) noexcept {
        if (slab_ns == 0) return true;
        if (single_ns == 0) return false;
        const bool cheaper = slab_ns <= single_ns;
        const bool retry_dearer = decisions.fetch_add(1, std::memory_order_relaxed) % 64 == 63;
        return cheaper != retry_dearer;
    }

    /// Nanoseconds per largest chunk each way has cost lately (0: not tried yet).
    [[nodiscard]] std::int64_t slab_ns_per_chunk() const noexcept { return slab_ns_.load(std::memory_order_relaxed); }
    [[nodiscard]] std::int64_t single_ns_per_chunk() const noexcept {
        return single_ns_.load(std::memory_order_relaxed);
    }

    /// One chunk of `size_class` from the heap, every page faulted in.
    static chunk* allocate_one(std::uint32_t size_class) {
        const std::size_t bytes = chunk::bytes_of_class(size_class);
        void* memory = ::operator new(bytes, std::align_val_t{64});
        chunk* c = ::new (memory) chunk(size_class);
        touch_pages(c);
        return c;
    }

    /// Fills `out` with the largest chunks of one new slab, every page faulted in; false (and nothing
    /// mapped) where no slab can be mapped, so the caller takes chunks from allocate_one().
    bool allocate_slab(std::span<chunk*, chunks_per_slab> out) {
#if defined(__linux__)
        // Twice the size, then the unaligned ends unmapped: a huge page needs a 2 MiB-aligned range.
        void* raw = ::mmap(nullptr, 2 * slab_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (raw == MAP_FAILED) return false;
        const auto raw_begin = reinterpret_cast<std::uintptr_t>(raw);
        const std::uintptr_t base = (raw_begin + slab_bytes - 1) & ~(slab_bytes - 1);
        if (base > raw_begin) ::munmap(raw, base - raw_begin);
        if (raw_begin + 2 * slab_bytes > base + slab_bytes) {
            ::munmap(reinterpret_cast<void*>(base + slab_bytes), raw_begin + 2 * slab_bytes - (base + slab_bytes));
        }
#if defined(MADV_HUGEPAGE)
        (void)::madvise(reinterpret_cast<void*>(base), slab_bytes, MADV_HUGEPAGE);  // a hint: no error matters
#endif
        try {
            const std::lock_guard lock(mutex_);
            returned_.emplace(base, 0);
        } catch (...) {
            ::munmap(reinterpret_cast<void*>(base), slab_bytes);
            throw;
        }
#if defined(STINT_DETAIL_LSAN_ROOTS)
        __lsan_register_root_region(reinterpret_cast<void*>(base), slab_bytes);
#endif
        for (std::size_t i = 0; i < chunks_per_slab; ++i) {
            chunk* c = ::new (reinterpret_cast<void*>(base + i * chunk::total_bytes)) chunk(largest_class, true);
            touch_pages(c);
            out[i] = c;
        }
        return true;
#else
        (void)out;
        return false;
#endif
    }

    /// Frees a chunk from either source. A slab's chunk gives its pages back at once; the slab is
    /// unmapped when the last of its chunks comes back.
    void deallocate(chunk* c) noexcept {
        const bool in_slab = c->in_slab;
        const std::size_t bytes = c->total();
        c->~chunk();
        if (!in_slab) {
            ::operator delete(c, std::align_val_t{64});  // unsized: clang has no sized delete by default
            return;
        }
#if defined(__linux__)
        ::madvise(c, bytes, MADV_DONTNEED);
        const std::uintptr_t base = reinterpret_cast<std::uintptr_t>(c) & ~(slab_bytes - 1);
        bool last = false;
        {
            const std::lock_guard lock(mutex_);
            const auto slab = returned_.find(base);
            if (slab != returned_.end() && ++slab->second == chunks_per_slab) {
                returned_.erase(slab);
                last = true;
            }
        }
        if (last) {
#if defined(STINT_DETAIL_LSAN_ROOTS)
            __lsan_unregister_root_region(reinterpret_cast<void*>(base), slab_bytes);
#endif
            ::munmap(reinterpret_cast<void*>(base), slab_bytes);
        }
#else
        (void)bytes;
#endif
    }

    /// Slabs mapped now (some of their chunks may be in use, cached, or given back).
    [[nodiscard]] std::size_t slabs() {
        const std::lock_guard lock(mutex_);
        return returned_.size();
    }

    /// Held across fork() (pthread_atfork), so that the child finds the table consistent.
    std::mutex& mutex() noexcept { return mutex_; }

private:
    static constexpr std::uint32_t largest_class = chunk::size_classes - 1;

    /// A moving average, three parts old to one part new (racing writers may lose a sample: harmless).
    static void note_cost(std::atomic<std::int64_t>& average, std::int64_t ns) noexcept {
        const std::int64_t old = average.load(std::memory_order_relaxed);
        average.store(old == 0 ? ns : (3 * old + ns) / 4, std::memory_order_relaxed);
    }

    /// One write per 4 KiB: each faults its page in now, on a thread that can afford it, not under
    /// later records (in a huge page, the first write maps all 2 MiB and the rest cost nothing).
    static void touch_pages(chunk* c) noexcept {
        for (std::byte* page = c->data(); page < c->data_end(); page += 4096) *page = std::byte{0};
    }

    std::atomic<std::int64_t> slab_ns_{0};
    std::atomic<std::int64_t> single_ns_{0};
    std::atomic<std::uint32_t> decisions_{0};
    std::mutex mutex_;
    std::unordered_map<std::uintptr_t, std::size_t> returned_;  ///< slab base -> its chunks given back
};

}  // namespace STINT_DETAIL_ABI_NAMESPACE
}  // namespace stint::detail
