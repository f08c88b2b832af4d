#pragma once
// Flows: work handed from one thread to another (a thread pool's task, an executor's continuation).
// A flow's begin is recorded where the work is submitted and its end where it runs; each is bound to
// the scope open around it on its thread, and the Chrome trace draws an arrow from one to the other
// (design §11).

#include <atomic>   // std::memory_order_relaxed
#include <cstdint>  // std::uint64_t, std::uint32_t

#include "stint/annotations/detail/point_record.hpp"
#include "stint/recording/slow_path.hpp"
#include "stint/recording/state.hpp"
#include "stint/recording/site.hpp"

namespace stint {

/// A new flow or async span id, unique in the process (never 0): for STINT_FLOW_BEGIN/END when the
/// program has no id of its own for the work.
[[nodiscard]] inline std::uint64_t new_flow_id() noexcept { return detail::new_point_id(); }

/// Records that the work `id` leaves this thread now, inside the scope open here (STINT_FLOW_BEGIN).
/// An id may be reused once its flow has ended: a flow is a begin and the next end of the same id.
inline void flow_begin(std::uint64_t id) noexcept {
    const std::uint32_t state = detail::recording.value.load(std::memory_order_relaxed);
    if (detail::is_recording_state(state)) detail::append_point(detail::flow_begin_site, id, state);
}

/// Records that the work `id` arrives on this thread now, inside the scope open here (STINT_FLOW_END).
inline void flow_end(std::uint64_t id) noexcept {
    const std::uint32_t state = detail::recording.value.load(std::memory_order_relaxed);
    if (detail::is_recording_state(state)) detail::append_point(detail::flow_end_site, id, state);
}

/// A flow carried with a task: begin() records where it was submitted, end() where it runs. A copy
/// carries the same flow (std::function needs copyable tasks); the first end() of each copy records.
/// Made while no session records, it is empty and records nothing.
///
///     pool.submit([flow = stint::flow_token::begin()]() mutable {
///         STINT_SCOPE("task");
///         flow.end();  // the arrow goes from the submitting scope to "task"
///         work();
///     });
class flow_token {
public:
    /// An empty token.
    flow_token() noexcept = default;

    /// Begins a flow with a new id, bound to the scope open on this thread.
    [[nodiscard]] static flow_token begin() noexcept {
        flow_token token;
        const std::uint32_t state = detail::recording.value.load(std::memory_order_relaxed);
        if (!detail::is_recording_state(state)) return token;
        token.id_ = new_flow_id();
        detail::append_point(detail::flow_begin_site, token.id_, state);
        return token;
    }

    /// Ends the flow on this thread, bound to the scope open here; later calls do nothing.
    void end() noexcept {
        if (id_ == 0) return;
        flow_end(id_);
        id_ = 0;
    }

    /// The flow's id; 0 when empty or ended.
    [[nodiscard]] std::uint64_t id() const noexcept { return id_; }
    [[nodiscard]] explicit operator bool() const noexcept { return id_ != 0; }

private:
    std::uint64_t id_ = 0;
};

}  // namespace stint

#if defined(STINT_DISABLE)
#include "stint/detail/compiled_out.hpp"  // every macro compiled out, in one place
#else
/// Marks where the work `id` (a std::uint64_t) is handed to another thread, inside the scope open here.
///
///     { STINT_SCOPE("submit"); const auto id = stint::new_flow_id(); STINT_FLOW_BEGIN(id); queue.push({id, job}); }
///     // on a worker:
///     { STINT_SCOPE("run"); STINT_FLOW_END(task.id); task.job(); }
#define STINT_FLOW_BEGIN(id)                                                                                 \
    do {                                                                                                     \
        if constexpr (STINT_CONFIG::enabled) ::stint::flow_begin(id);                                        \
    } while (false)
/// Marks where the work `id` runs, inside the scope open here.
#define STINT_FLOW_END(id)                                                                                   \
    do {                                                                                                     \
        if constexpr (STINT_CONFIG::enabled) ::stint::flow_end(id);                                          \
    } while (false)
#endif
