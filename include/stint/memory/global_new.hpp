#pragma once
// STINT_TRACK_GLOBAL_NEW(): the program's global operator new and delete, replaced by ones that report
// to a profile_memory session. Opt-in, in exactly one translation unit.
//
// Why it is a macro and not automatic: a replacement operator new is an ordinary, non-inline
// definition ([replacement.functions]: it must not be inline), so a header that defined it would
// define it again in every translation unit that includes it, and the link fails; and a library must
// not take the program's allocator over without being asked. Write the macro once, at namespace
// scope, in one .cpp of the executable.

#include <cstddef>  // std::size_t, std::max_align_t
#include <cstdlib>  // std::malloc, std::aligned_alloc, std::free
#include <new>      // std::nothrow_t, std::align_val_t, std::get_new_handler

#include "stint/memory/out_of_memory.hpp"
#include "stint/memory/report.hpp"

namespace stint::detail {

// malloc for fundamental alignments, aligned_alloc (whose size must be a multiple of the alignment)
// beyond; free releases both.
inline void* allocate_from_system(std::size_t bytes, std::size_t alignment) noexcept {
    if (bytes == 0) bytes = 1;
    if (alignment <= alignof(std::max_align_t)) return std::malloc(bytes);
    const std::size_t rounded = (bytes + alignment - 1) / alignment * alignment;
    return rounded < bytes ? nullptr : std::aligned_alloc(alignment, rounded);
}

/// operator new's contract: retry through the new-handler; with none, an [OutOfMemory] event and
/// stint::out_of_memory (a std::bad_alloc).
inline void* tracked_new(std::size_t bytes, std::size_t alignment) {
    for (;;) {
        if (void* p = allocate_from_system(bytes, alignment)) {
            stint::report_alloc(p, bytes);
            return p;
        }
        const std::new_handler handler = std::get_new_handler();
        if (handler == nullptr) {
            report_oom_without_totals(bytes, {});
            throw stint::out_of_memory(bytes, {}, "STINT_TRACK_GLOBAL_NEW's operator new");
        }
        handler();
    }
}
inline void* tracked_new_nothrow(std::size_t bytes, std::size_t alignment) noexcept {
    try {
        return tracked_new(bytes, alignment);
    } catch (...) {
        return nullptr;
    }
}
// The free is reported before the block goes back: once freed, another thread may get the address.
inline void tracked_delete(void* p) noexcept {
    stint::report_free(p);
    std::free(p);
}
inline void tracked_delete_sized(void* p, std::size_t bytes) noexcept {
    stint::report_free(p, bytes);
    std::free(p);
}

}  // namespace stint::detail

/// Replaces the global operator new and delete (all sixteen forms) with ones that report to a
/// profile_memory session. Put it in exactly one .cpp of the executable, at namespace scope:
///
///     #include <stint/stint.hpp>
///     STINT_TRACK_GLOBAL_NEW();
/// Compiled out (STINT_DISABLE) it replaces nothing: the program keeps its own operator new.
#if defined(STINT_DISABLE)
#define STINT_TRACK_GLOBAL_NEW() static_assert(true, "")
#else
// NOLINTBEGIN: the replacements must have exactly these signatures.
#define STINT_TRACK_GLOBAL_NEW()                                                                               \
    void* operator new(std::size_t n) { return ::stint::detail::tracked_new(n, 0); }                           \
    void* operator new[](std::size_t n) { return ::stint::detail::tracked_new(n, 0); }                         \
    void* operator new(std::size_t n, const std::nothrow_t&) noexcept {                                        \
        return ::stint::detail::tracked_new_nothrow(n, 0);                                                     \
    }                                                                                                          \
    void* operator new[](std::size_t n, const std::nothrow_t&) noexcept {                                      \
        return ::stint::detail::tracked_new_nothrow(n, 0);                                                     \
    }                                                                                                          \
    void* operator new(std::size_t n, std::align_val_t a) {                                                    \
        return ::stint::detail::tracked_new(n, static_cast<std::size_t>(a));                                   \
    }                                                                                                          \
    void* operator new[](std::size_t n, std::align_val_t a) {                                                  \
        return ::stint::detail::tracked_new(n, static_cast<std::size_t>(a));                                   \
    }                                                                                                          \
    void* operator new(std::size_t n, std::align_val_t a, const std::nothrow_t&) noexcept {                    \
        return ::stint::detail::tracked_new_nothrow(n, static_cast<std::size_t>(a));                           \
    }                                                                                                          \
    void* operator new[](std::size_t n, std::align_val_t a, const std::nothrow_t&) noexcept {                  \
        return ::stint::detail::tracked_new_nothrow(n, static_cast<std::size_t>(a));                           \
    }                                                                                                          \
    void operator delete(void* p) noexcept { ::stint::detail::tracked_delete(p); }                             \
    void operator delete[](void* p) noexcept { ::stint::detail::tracked_delete(p); }                           \
    void operator delete(void* p, std::size_t n) noexcept { ::stint::detail::tracked_delete_sized(p, n); }     \
    void operator delete[](void* p, std::size_t n) noexcept { ::stint::detail::tracked_delete_sized(p, n); }   \
    void operator delete(void* p, std::align_val_t) noexcept { ::stint::detail::tracked_delete(p); }           \
    void operator delete[](void* p, std::align_val_t) noexcept { ::stint::detail::tracked_delete(p); }         \
    void operator delete(void* p, std::size_t n, std::align_val_t) noexcept {                                  \
        ::stint::detail::tracked_delete_sized(p, n);                                                           \
    }                                                                                                          \
    void operator delete[](void* p, std::size_t n, std::align_val_t) noexcept {                                \
        ::stint::detail::tracked_delete_sized(p, n);                                                           \
    }                                                                                                          \
    void operator delete(void* p, const std::nothrow_t&) noexcept { ::stint::detail::tracked_delete(p); }      \
    void operator delete[](void* p, const std::nothrow_t&) noexcept { ::stint::detail::tracked_delete(p); }    \
    void operator delete(void* p, std::align_val_t, const std::nothrow_t&) noexcept {                          \
        ::stint::detail::tracked_delete(p);                                                                    \
    }                                                                                                          \
    void operator delete[](void* p, std::align_val_t, const std::nothrow_t&) noexcept {                        \
        ::stint::detail::tracked_delete(p);                                                                    \
    }                                                                                                          \
    static_assert(true, "")
// NOLINTEND
#endif
