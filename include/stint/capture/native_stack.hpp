#pragma once
// Native call stacks (with_stack<native>): return addresses taken at scope entry, and their names,
// looked up only when a session is drained. The record carries the addresses; symbols are read from
// the loaded objects' ELF symbol tables (static functions and executables built without -rdynamic
// included), then demangled.

#include <cstddef>  // std::size_t, std::byte
#include <cstdint>  // std::uint32_t, std::uint64_t, std::uintptr_t
#include <cstring>  // std::memcpy

#include "stint/capture/detail/frame_walk.hpp"
#include "stint/detail/export_macros.hpp"

#if defined(__linux__) && defined(__GLIBC__)
#include <execinfo.h>  // ::backtrace
#define STINT_DETAIL_HAS_BACKTRACE 1
#else
#define STINT_DETAIL_HAS_BACKTRACE 0
#endif

// STINT_NATIVE_STACK_FRAME_POINTERS=1 takes with_stack<native> frames by following frame pointers
// (about 100x faster than the unwinder), and is right only for code built with them
// (-fno-omit-frame-pointer): a frame without one ends the stack early or adds wrong frames. No
// compiler macro says whether frame pointers are kept, except that an unoptimised build
// (__OPTIMIZE__ undefined: -O0) keeps them; so the walk is the default there, and the unwinder,
// right without frame pointers, everywhere else.
#if !defined(STINT_NATIVE_STACK_FRAME_POINTERS)
#if STINT_DETAIL_HAS_FRAME_WALK && !defined(__OPTIMIZE__)
#define STINT_NATIVE_STACK_FRAME_POINTERS 1
#else
#define STINT_NATIVE_STACK_FRAME_POINTERS 0
#endif
#elif (0 - STINT_NATIVE_STACK_FRAME_POINTERS - 1) != -1 && (0 - STINT_NATIVE_STACK_FRAME_POINTERS - 1) != -2
#error "stint: STINT_NATIVE_STACK_FRAME_POINTERS must be 1 (walk frame pointers) or 0 (use the unwinder). Fix: 1. define it 1 where the program is built with -fno-omit-frame-pointer, or 2. define it 0, or 3. leave it undefined for the default."
#elif STINT_NATIVE_STACK_FRAME_POINTERS && !STINT_DETAIL_HAS_FRAME_WALK
#error "stint: STINT_NATIVE_STACK_FRAME_POINTERS=1 needs x86-64 or aarch64 Linux with glibc. Fix: 1. define it 0 (the unwinder), or 2. leave it undefined."
#endif

namespace stint::detail {

/// Bytes the frames of a with_stack<native> record take ahead of its other payload: a u32 count, a
/// u32 of padding, then `count` addresses.
inline constexpr std::size_t native_stack_header_bytes = 8;

constexpr std::size_t native_stack_bytes(std::size_t depth) noexcept {
    return depth == 0 ? 0 : native_stack_header_bytes + depth * sizeof(std::uint64_t);
}

/// Writes the header of a native stack of `count` frames (count, padding) and returns its bytes.
inline std::size_t finish_native_stack(std::byte* out, std::uint32_t count) noexcept {
    const std::uint32_t padding = 0;
    std::memcpy(out, &count, sizeof(count));
    std::memcpy(out + sizeof(count), &padding, sizeof(padding));
    return native_stack_header_bytes + count * sizeof(std::uint64_t);
}

/// The unwinder's stack (glibc's backtrace(), libgcc's DWARF unwinder): up to `depth` return
/// addresses from `caller` on; the frames before it (the capture's own, and a sanitizer's backtrace
/// interceptor) are left out. Correct without frame pointers; about 3 us for 10 frames.
STINT_DETAIL_NOINLINE inline std::size_t unwind_native_stack(std::byte* out, std::size_t depth,
                                                             void* caller) noexcept {
    std::uint32_t count = 0;
#if STINT_DETAIL_HAS_BACKTRACE
    constexpr int most = 134;
    constexpr int skippable = 6;
    void* frames[most];
    const std::size_t asked = depth + skippable < most ? depth + skippable : most;
    const int taken = ::backtrace(frames, static_cast<int>(asked));
    int first = 1;
    for (int i = 0; i < taken && i < skippable; ++i) {
        if (frames[i] == caller) {
            first = i;
            break;
        }
    }
    if (taken > first) {
        const auto found = static_cast<std::size_t>(taken - first);
        count = static_cast<std::uint32_t>(found < depth ? found : depth);
    }
    for (std::uint32_t i = 0; i < count; ++i) {
        const void* frame = frames[static_cast<std::uint32_t>(first) + i];
        const auto address = static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(frame));
        std::memcpy(out + native_stack_header_bytes + i * sizeof(std::uint64_t), &address, sizeof(address));
    }
#else
    (void)depth;
    (void)caller;
#endif
    return finish_native_stack(out, count);
}

/// Writes up to `depth` return addresses of the caller's stack into `out` (count, padding,
/// addresses), the caller's own frame first, with the unwinder; returns the bytes written. Out of
/// line, so that its return address is in the instrumented function (scopes are inlined into it).
STINT_DETAIL_NOINLINE inline std::size_t capture_native_stack_unwound(std::byte* out, std::size_t depth) noexcept {
    return unwind_native_stack(out, depth, __builtin_return_address(0));
}

#if STINT_DETAIL_HAS_FRAME_WALK
/// The same by following frame pointers (capture/detail/frame_walk.hpp): about 2 ns a frame. Its
/// own frame record (which __builtin_frame_address makes it keep) holds the return address into the
/// instrumented function, as the unwinder's first frame does. Off the thread's stack (a signal
/// handler on sigaltstack, a coroutine or fiber stack) it takes the unwinder's stack instead.
STINT_DETAIL_NOINLINE STINT_DETAIL_NO_SANITIZE_ADDRESS inline std::size_t capture_native_stack_walked(
    std::byte* out, std::size_t depth) noexcept {
    const stack_bounds& stack = this_thread_stack();
    const auto frame = reinterpret_cast<std::uintptr_t>(__builtin_frame_address(0));
    if (frame < stack.low || frame >= stack.high) [[unlikely]] {
        return unwind_native_stack(out, depth, __builtin_return_address(0));
    }
    return finish_native_stack(out, walk_frame_chain(frame, stack.low, stack.high,
                                                     out + native_stack_header_bytes, depth));
}
#endif

/// Writes up to `depth` return addresses of the caller's stack into `out` (count, padding,
/// addresses), the caller's own frame first; returns the bytes written. A frame-pointer walk where
/// STINT_NATIVE_STACK_FRAME_POINTERS is 1, else the unwinder. Inlined into the scope, so each
/// translation unit calls the capture its own setting picks (the two are distinct symbols).
STINT_DETAIL_ALWAYS_INLINE std::size_t capture_native_stack(std::byte* out, std::size_t depth) noexcept {
#if STINT_NATIVE_STACK_FRAME_POINTERS
    return capture_native_stack_walked(out, depth);
#else
    return capture_native_stack_unwound(out, depth);
#endif
}

/// Loads what backtrace() needs (libgcc's unwinder) now, so a first capture inside a session does
/// not pay a dlopen, and reads the calling thread's stack range for the frame-pointer walk.
inline void warm_native_stacks() noexcept {
#if STINT_DETAIL_HAS_FRAME_WALK
    (void)this_thread_stack();
#endif
#if STINT_DETAIL_HAS_BACKTRACE
    static const bool warmed = [] {
        void* frames[2];
        (void)::backtrace(frames, 2);
        return true;
    }();
    (void)warmed;
#endif
}

}  // namespace stint::detail
