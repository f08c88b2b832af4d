#pragma once
// The seam between recording and a device collector (design §2): a config's policies may name a device
// backend (stint::cuda_activities does); a scope of such a config links the device work launched inside
// it to itself. Without one, scopes and profilers contain no device code.

#include <atomic>   // std::atomic, std::memory_order
#include <cstdint>  // std::uint64_t, std::uint32_t

#include "stint/detail/export_macros.hpp"
#include "stint/recording/buffer.hpp"
#include "stint/recording/site.hpp"

namespace stint::detail {

/// The device backend of configs that collect no device activity.
struct no_device_backend {
    static constexpr bool enabled = false;
};

/// The first policy's `device_backend`, or no_device_backend.
template <class... Policies>
struct find_device_backend {
    using type = no_device_backend;
};
template <class Policy, class... Rest>
struct find_device_backend<Policy, Rest...> {
    using type = typename find_device_backend<Rest...>::type;
};
template <class Policy, class... Rest>
    requires requires { typename Policy::device_backend; }
struct find_device_backend<Policy, Rest...> {
    using type = typename Policy::device_backend;
};

/// The device backend of a configuration.
template <class Config>
using device_backend_t = typename Config::template apply<find_device_backend>::type;

template <class Config>
inline constexpr bool has_device_backend = Config::enabled && device_backend_t<Config>::enabled;

inline namespace STINT_DETAIL_ABI_NAMESPACE {
/// Set while a device session is live: scopes of configs with a device backend then push external
/// correlation ids. One per process (export_macros.hpp), so a library's scopes follow the session too.
STINT_DETAIL_EXPORT inline constinit std::atomic<bool> device_correlating{false};
/// Where the next block of external correlation ids starts; threads take blocks, not single ids.
STINT_DETAIL_EXPORT inline constinit std::atomic<std::uint64_t> next_external_id_block{1};
}  // namespace STINT_DETAIL_ABI_NAMESPACE

/// This thread's unused external correlation ids: [next, limit).
struct external_id_block {
    std::uint64_t next = 0;
    std::uint64_t limit = 0;
};
inline constinit thread_local external_id_block tls_external_ids{};

/// A process-unique, non-zero external correlation id; a shared atomic is touched once per 4096 ids.
inline std::uint64_t next_external_id() noexcept {
    external_id_block& ids = tls_external_ids;
    if (ids.next == ids.limit) [[unlikely]] {
        constexpr std::uint64_t block = 4096;
        ids.next = next_external_id_block.fetch_add(block, std::memory_order_relaxed);
        ids.limit = ids.next + block;
    }
    return ids.next++;
}

/// The device part of a recorded scope: while a device session is live, an external correlation id is
/// pushed at entry and popped at exit on the same thread (CUPTI keeps a stack per thread), and a
/// device-link record after the scope's own tells the drain which scope that id named.
template <class Backend>
class device_link {
public:
    STINT_DETAIL_ALWAYS_INLINE void open() noexcept {
        // Acquire: the collector's table, written before the session set the flag, is read next (a plain
        // load on x86; aarch64 needs the barrier).
        if (device_correlating.load(std::memory_order_acquire)) [[unlikely]] {
            id_ = next_external_id();
            if (!Backend::push_external_id(id_)) id_ = 0;
        }
    }
    /// Pops what open() pushed, even when the session has ended since: the stack must stay balanced.
    STINT_DETAIL_ALWAYS_INLINE void close() noexcept {
        if (id_ != 0) [[unlikely]] Backend::pop_external_id();
    }
    /// Appends the link, right after the scope's record (same depth, same end).
    STINT_DETAIL_ALWAYS_INLINE void record(std::uint32_t depth, std::uint64_t end, std::uint32_t state) noexcept {
        if (id_ != 0) [[unlikely]] {
            append_record(&device_link_site, depth, id_, end, state);
            // Not one of the program's records: a flight recorder reads the chunk to count (recording/ring.hpp).
            if (tls_buffer.current != nullptr) tls_buffer.current->ring_mixed = true;
        }
    }

private:
    std::uint64_t id_ = 0;
};

template <>
class device_link<no_device_backend> {
public:
    STINT_DETAIL_ALWAYS_INLINE void open() noexcept {}
    STINT_DETAIL_ALWAYS_INLINE void close() noexcept {}
    STINT_DETAIL_ALWAYS_INLINE void record(std::uint32_t, std::uint64_t, std::uint32_t) noexcept {}
};

}  // namespace stint::detail
