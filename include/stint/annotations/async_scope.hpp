#pragma once
// Async spans: a request or a coroutine that begins on one thread and ends on another. The span is
// not a scope of any thread: the trace draws it on a track of its own (Chrome's "b"/"e" events) and
// key_averages gives it a row of its own, never charged to a thread's self time (design §11).

#include <atomic>       // std::memory_order_relaxed
#include <cstdint>      // std::uint64_t, std::uint32_t
#include <string>       // std::string
#include <string_view>  // std::string_view
#include <utility>      // std::exchange, std::move

#include "stint/annotations/detail/point_record.hpp"
#include "stint/recording/slow_path.hpp"
#include "stint/recording/state.hpp"
#include "stint/recording/site.hpp"

namespace stint {

/// A span that begins where it is made and ends where it is destroyed or end() is called, on whatever
/// thread that is; move it along with the work (a request object, a coroutine frame). The name is
/// copied while a session records; made while none records, it is empty and records nothing.
///
///     task<void> handle(request r) {
///         stint::async_scope span("handle request");
///         auto body = co_await read_body(r);   // may resume on another thread
///         co_await reply(r, body);
///     }                                        // the span ends here, on the resuming thread
class async_scope {
public:
    /// An empty span.
    async_scope() noexcept = default;

    /// Begins a span named `name` now, with a new id (flow and span ids share one space).
    explicit async_scope(std::string_view name) noexcept {
        const std::uint32_t state = detail::recording.value.load(std::memory_order_relaxed);
        if (!detail::is_recording_state(state)) return;
        try {
            name_.assign(name);
        } catch (...) {
            return;  // out of memory: no span (its end would have no name)
        }
        id_ = detail::new_point_id();
        detail::append_point(detail::async_begin_site, id_, state, name_);
    }
    async_scope(async_scope&& other) noexcept : id_(std::exchange(other.id_, 0)), name_(std::move(other.name_)) {}
    async_scope& operator=(async_scope&& other) noexcept {
        if (this != &other) {
            end();
            id_ = std::exchange(other.id_, 0);
            name_ = std::move(other.name_);
        }
        return *this;
    }
    async_scope(const async_scope&) = delete;
    async_scope& operator=(const async_scope&) = delete;
    ~async_scope() { end(); }

    /// Ends the span now, on this thread; later calls do nothing. Ended while no session records (the
    /// session stopped first), the span stays open in its session's trace and is counted unfinished.
    void end() noexcept {
        if (id_ == 0) return;
        const std::uint32_t state = detail::recording.value.load(std::memory_order_relaxed);
        // The end carries the name too: viewers join "b" and "e" by category, id and name, and a
        // streamed trace writes each point as it comes.
        if (detail::is_recording_state(state)) detail::append_point(detail::async_end_site, id_, state, name_);
        id_ = 0;
    }

    /// The span's id (its Chrome trace "id"); 0 when empty or ended.
    [[nodiscard]] std::uint64_t id() const noexcept { return id_; }

private:
    std::uint64_t id_ = 0;
    std::string name_;
};

}  // namespace stint
