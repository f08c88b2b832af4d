#pragma once
// The frame-pointer walk behind with_stack<native> (STINT_NATIVE_STACK_FRAME_POINTERS=1): each frame
// record is {caller's frame pointer, return address} (x86-64 rbp, aarch64 x29), so a stack is a
// chain of loads. The chain is followed only inside the current thread's stack, upwards: every
// address read lies between the walk's own frame and the stack's top, which are mapped while the
// thread runs, so a frame built without frame pointers (whose "frame pointer" is any value a
// function left in the register) ends the chain or yields wrong frames, never a fault.

#include <cstddef>  // std::size_t, std::byte
#include <cstdint>  // std::uintptr_t, std::uint32_t, std::uint64_t
#include <cstring>  // std::memcpy

#include "stint/detail/export_macros.hpp"  // STINT_DETAIL_COLD

#if defined(__linux__) && defined(__GLIBC__) && (defined(__x86_64__) || defined(__aarch64__))
#include <pthread.h>  // ::pthread_getattr_np, ::pthread_attr_getstack, ::pthread_self
#define STINT_DETAIL_HAS_FRAME_WALK 1
#else
#define STINT_DETAIL_HAS_FRAME_WALK 0
#endif

#if defined(__clang__) || defined(__GNUC__)
// The walk reads saved registers of other frames (never a redzone or a local): nothing for ASan to
// check, and under its fake stacks a frame's locals are elsewhere anyway.
#define STINT_DETAIL_NO_SANITIZE_ADDRESS __attribute__((no_sanitize("address")))
#else
#define STINT_DETAIL_NO_SANITIZE_ADDRESS
#endif

namespace stint::detail {

/// The address range of one thread's stack, [low, high); empty when it could not be read.
struct stack_bounds {
    std::uintptr_t low = 0;
    std::uintptr_t high = 0;
    bool known = false;
};

#if STINT_DETAIL_HAS_FRAME_WALK

/// A frame record's alignment: x86-64 code keeps rbp 8-aligned at least (16 with the default
/// stack alignment, not with -mstackrealign or hand-written code); aarch64 requires sp, and so x29,
/// 16-aligned.
#if defined(__aarch64__)
inline constexpr std::uintptr_t frame_alignment = 16;
#else
inline constexpr std::uintptr_t frame_alignment = 8;
#endif

/// The lowest address a return address may have: the first page is never mapped.
inline constexpr std::uintptr_t lowest_code_address = 4096;

/// A return address as stored. On aarch64 with pointer authentication (-mbranch-protection) the
/// bits above the 48-bit user address space carry a signature: they are cleared.
inline std::uintptr_t plain_return_address(std::uintptr_t stored) noexcept {
#if defined(__aarch64__)
    return stored & ((std::uintptr_t{1} << 48) - 1);
#else
    return stored;
#endif
}

/// Follows the chain from the frame record at `frame` within [low, high) and writes up to `depth`
/// return addresses to `out` (unaligned u64s), the one in `frame` first; returns how many. The chain
/// ends at the first record that is out of range, misaligned, or not strictly above the previous one
/// (so it always ends), and at a return address that cannot be code: below the first page or inside
/// the stack.
STINT_DETAIL_NO_SANITIZE_ADDRESS inline std::uint32_t walk_frame_chain(std::uintptr_t frame, std::uintptr_t low,
                                                                       std::uintptr_t high, std::byte* out,
                                                                       std::size_t depth) noexcept {
    constexpr std::uintptr_t record_bytes = 2 * sizeof(std::uintptr_t);
    if (high < low + record_bytes || frame < low || frame > high - record_bytes || frame % frame_alignment != 0) {
        return 0;
    }
    std::uint32_t count = 0;
    while (count < depth) {
        std::uintptr_t record[2];
        std::memcpy(record, reinterpret_cast<const void*>(frame), sizeof(record));
        const std::uintptr_t returns_to = plain_return_address(record[1]);
        if (returns_to < lowest_code_address || (returns_to >= low && returns_to < high)) break;
        const auto address = static_cast<std::uint64_t>(returns_to);
        std::memcpy(out + count * sizeof(std::uint64_t), &address, sizeof(address));
        ++count;
        const std::uintptr_t next = record[0];
        if (next <= frame || next > high - record_bytes || next % frame_alignment != 0) break;
        frame = next;
    }
    return count;
}

/// Reads the calling thread's stack range (pthread_getattr_np: for the main thread glibc reads
/// /proc/self/maps, so this runs once per thread and is cached).
STINT_DETAIL_COLD inline void find_thread_stack(stack_bounds& bounds) noexcept {
    bounds = stack_bounds{};
    bounds.known = true;
    pthread_attr_t attributes;
    if (::pthread_getattr_np(::pthread_self(), &attributes) != 0) return;
    void* base = nullptr;
    std::size_t size = 0;
    if (::pthread_attr_getstack(&attributes, &base, &size) == 0 && base != nullptr) {
        bounds.low = reinterpret_cast<std::uintptr_t>(base);
        bounds.high = bounds.low + size;
    }
    ::pthread_attr_destroy(&attributes);
}

/// The calling thread's stack range, read on first use.
inline const stack_bounds& this_thread_stack() noexcept {
    static thread_local stack_bounds bounds;  // constant-initialised: no guard on access
    if (!bounds.known) [[unlikely]] find_thread_stack(bounds);
    return bounds;
}

#endif

}  // namespace stint::detail
