#pragma once
// The process's recording flag: what every scope reads once on entry, and `stint::is_recording()`.

#include <atomic>   // std::atomic, std::memory_order_relaxed
#include <cstdint>  // std::uint32_t

#include "stint/detail/export_macros.hpp"

namespace stint::detail {
inline namespace STINT_DETAIL_ABI_NAMESPACE {

/// The recording state: bit 0 = a session is recording; bit 1 = it notes open scopes (a flight
/// recorder's, recording/open_scopes.hpp); bits 2.. = the session's serial. Scopes read
/// it once on entry (relaxed: a scope that races with start/stop is either in the session or not,
/// and the buffer's state check keeps it out of any other session). Written only by start/stop, on its
/// own cache line so the hot path's load never shares a line with a write.
struct alignas(64) recording_state {
    std::atomic<std::uint32_t> value{0};
};
STINT_DETAIL_EXPORT inline constinit recording_state recording{};

constexpr bool is_recording_state(std::uint32_t state) noexcept { return (state & 1U) != 0; }

}  // namespace STINT_DETAIL_ABI_NAMESPACE
}  // namespace stint::detail

namespace stint {

/// Whether a session is recording now: a cheap query a framework can branch on before building
/// expensive names or arguments (torch's `_profiler_enabled()`).
///
///     if (stint::is_recording()) name = describe(op);
inline bool is_recording() noexcept {
    return detail::is_recording_state(detail::recording.value.load(std::memory_order_relaxed));
}

}  // namespace stint
