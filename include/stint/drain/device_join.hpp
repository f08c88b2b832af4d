#pragma once
// Joins a session's device activity to its CPU events (design §8): each API call and each piece of device
// work goes to the scope whose external correlation id CUPTI reported for it, the scope's record found
// through the device-link record the scope appended after its own.

#include <cstdint>  // std::uint32_t, std::uint64_t
#include <memory>  // std::addressof
#include <type_traits>  // std::remove_reference_t
#include <unordered_map>  // std::unordered_map

#include "stint/analysis/event_tree.hpp"
#include "stint/detail/separate_compilation.hpp"
#include "stint/device/device_capture.hpp"
#include "stint/recording/clock.hpp"

namespace stint::detail {

/// The window and clock the join needs from the drain.
struct device_join_window {
    std::uint64_t from_ticks = 0;  ///< the session's start
    std::uint64_t until_ticks = 0; ///< its stop
    tick_calibration calibration;
};

/// Finds or adds the CPU thread of an OS thread id: join_device_activity's callback, without its type.
struct thread_of_tid_ref {
    void* callback = nullptr;
    std::uint32_t (*call)(void* callback, std::uint64_t tid) = nullptr;
    std::uint32_t operator()(std::uint64_t tid) const { return call(callback, tid); }
};

/// Adds `capture`'s activities to `builder`. `links` maps external correlation ids to the scope events
/// (as added) that pushed them; `thread_of_tid` finds or adds the CPU thread of an OS thread id.
STINT_DECL void join_device_activity(event_list_builder& builder, device_capture& capture,
                                     const std::unordered_map<std::uint64_t, event_index>& links,
                                     const device_join_window& window, thread_of_tid_ref thread_of_tid);

/// The same with any callable `thread_of_tid(std::uint64_t) -> std::uint32_t`.
template <class ThreadOf>
void join_device_activity(event_list_builder& builder, device_capture& capture,
                          const std::unordered_map<std::uint64_t, event_index>& links,
                          const device_join_window& window, ThreadOf&& thread_of_tid) {
    using callable = std::remove_reference_t<ThreadOf>;
    join_device_activity(builder, capture, links, window,
                         thread_of_tid_ref{const_cast<void*>(static_cast<const void*>(std::addressof(thread_of_tid))),
                                           [](void* callback, std::uint64_t tid) -> std::uint32_t {
                                               return (*static_cast<callable*>(callback))(tid);
                                           }});
}

}  // namespace stint::detail

#if defined(STINT_HEADER_ONLY)
#include "stint/drain/impl/device_join.ipp"
#endif
