#pragma once
// Native call stacks (with_stack<native>): return addresses taken at scope entry, and their names,
// looked up only when a session is drained. The record carries the addresses; symbols are read from
// the loaded objects' ELF symbol tables (static functions and executables built without -rdynamic
// included), then demangled.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

#include "stint/detail/export_macros.hpp"

#if defined(__linux__) && defined(__GLIBC__)
#include <execinfo.h>
#define STINT_DETAIL_HAS_BACKTRACE 1
#else
#define STINT_DETAIL_HAS_BACKTRACE 0
#endif

namespace stint::detail {

/// Bytes the frames of a with_stack<native> record take ahead of its other payload: a u32 count, a
/// u32 of padding, then `count` addresses.
inline constexpr std::size_t native_stack_header_bytes = 8;

constexpr std::size_t native_stack_bytes(std::size_t depth) noexcept {
    return depth == 0 ? 0 : native_stack_header_bytes + depth * sizeof(std::uint64_t);
}

/// Writes up to `depth` return addresses of the caller's stack into `out` (count, padding,
/// addresses), the caller's own frame first; returns the bytes written. Out of line, so that its
/// return address is in the instrumented function (scopes are inlined into it): the frames before
/// that one (this function, and a sanitizer's backtrace interceptor) are left out.
STINT_DETAIL_NOINLINE inline std::size_t capture_native_stack(std::byte* out, std::size_t depth) noexcept {
    std::uint32_t count = 0;
#if STINT_DETAIL_HAS_BACKTRACE
    constexpr int most = 132;
    void* frames[most];
    const std::size_t asked = depth + 4 < most ? depth + 4 : most;
    const int taken = ::backtrace(frames, static_cast<int>(asked));
    void* const caller = __builtin_return_address(0);
    int first = 1;
    for (int i = 0; i < taken && i < 4; ++i) {
        if (frames[i] == caller) {
            first = i;
            break;
        }
    }
    if (taken > first) {
        count = static_cast<std::uint32_t>(std::min<std::size_t>(static_cast<std::size_t>(taken - first), depth));
    }
    for (std::uint32_t i = 0; i < count; ++i) {
        const auto address = static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(frames[first + i]));
        std::memcpy(out + native_stack_header_bytes + i * sizeof(std::uint64_t), &address, sizeof(address));
    }
#else
    (void)depth;
#endif
    const std::uint32_t padding = 0;
    std::memcpy(out, &count, sizeof(count));
    std::memcpy(out + sizeof(count), &padding, sizeof(padding));
    return native_stack_header_bytes + count * sizeof(std::uint64_t);
}

/// Loads what backtrace() needs (libgcc's unwinder) now, so a first capture inside a session does
/// not pay a dlopen.
inline void warm_native_stacks() noexcept {
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
