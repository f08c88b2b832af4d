#pragma once
// The record of a flow's or an async span's point: zero-length, at the thread's current depth (so the
// drain binds it to the scope open around it, exactly, whatever the ticks say), with a u64 id and, for
// an async span's beginning, a runtime name (design §11).

#include <atomic>       // std::atomic, std::memory_order_relaxed
#include <cstdint>      // std::uint64_t, std::uint32_t
#include <string_view>  // std::string_view

#include "stint/detail/export_macros.hpp"
#include "stint/recording/buffer.hpp"
#include "stint/recording/ticks.hpp"
#include "stint/recording/slow_path.hpp"
#include "stint/recording/state.hpp"
#include "stint/recording/site.hpp"

namespace stint::detail {

inline namespace STINT_DETAIL_ABI_NAMESPACE {
/// Process-wide source of flow and async span ids (1, 2, ...; 0 means "none"): one per process, also
/// across shared libraries built with hidden visibility (export_macros.hpp), so their ids never collide.
STINT_DETAIL_EXPORT inline constinit std::atomic<std::uint64_t> next_point_id{1};
}  // namespace STINT_DETAIL_ABI_NAMESPACE

/// A new flow or async span id.
inline std::uint64_t new_point_id() noexcept { return next_point_id.fetch_add(1, std::memory_order_relaxed); }

/// Appends a point of `where` (a payload_kind::point site) with `id` for the session `state`, named
/// `name` when not empty (cut at max_runtime_name_bytes, and counted as a truncated name).
inline void append_point(const site& where, std::uint64_t id, std::uint32_t state,
                         std::string_view name = {}) noexcept {
    const bool cut = name.size() > max_runtime_name_bytes;
    if (cut) name = name.substr(0, max_runtime_name_bytes);
    const std::uint64_t now = read_ticks();
    append_record_payload(&where, current_depth(), now, now, state, static_cast<std::uint32_t>(name.size()),
                          payload_bytes{&id, sizeof id}, payload_bytes{name.data(), name.size()});
    thread_buffer& buffer = tls_buffer;
    if (cut && buffer.node != nullptr && buffer.state == state) bump(buffer.node->truncated);
}

}  // namespace stint::detail
