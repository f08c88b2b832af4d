#pragma once
// stint::execution_trace_observer: records an execution trace (export/execution_trace.hpp), alone with
// start()/stop(), or attached to a profiler whose active windows it then records (torch.profiler's
// ExecutionTraceObserver).

#include <cstddef>  // std::size_t
#include <cstdint>  // std::uint64_t
#include <memory>   // std::unique_ptr
#include <mutex>    // std::mutex, std::lock_guard
#include <string>   // std::string

#include "stint/analysis/event_list.hpp"
#include "stint/detail/separate_compilation.hpp"

namespace stint {

namespace detail {
class session;                 // drain/session.hpp
class execution_trace_writer;  // export/execution_trace.hpp
inline namespace STINT_DETAIL_BUILD_NAMESPACE {
class profiler_state;  // profiler/impl/profiler_core.ipp: attaches, detaches and feeds an observer
}  // namespace STINT_DETAIL_BUILD_NAMESPACE
}  // namespace detail

/// Options of the sessions an observer records alone (attached, it records its profiler's).
struct execution_trace_options {
    /// Bytes of record buffers a span may use, over all threads; records beyond it are dropped and
    /// counted (the file's "stint" block).
    std::size_t buffer_budget_bytes = std::size_t{512} << 20;
    /// Bytes of record buffers faulted in at start(), so that the first records land in resident memory.
    std::size_t reserve_buffer_bytes = 0;
};

/// Writes an execution trace (ET): every op and annotation as a node with its parent, inputs and
/// outputs (tensor ids shared by every node that saw the same tensor), as torch's
/// ExecutionTraceObserver writes it for PARAM and Chakra. Ops carry inputs when their config has
/// record_shapes, outputs when they call stint::record_outputs.
///
/// Alone: each start()/stop() span is recorded and its nodes appended; unregister_callback() (or the
/// observer's destruction) finishes the file.
///
///     stint::execution_trace_observer et;
///     et.register_callback("run.et.json");   // an unwritable path throws here
///     et.start();
///     train_step();
///     et.stop();
///     et.unregister_callback();              // the file is complete under its name
///
/// Attached to a profiler (`profiler_options::execution_trace_observer`), it records that profiler's
/// active windows, and each node's rf_id is the "Record function id" of the same op in the profiler's
/// Chrome trace; the profiler finishes the file when it is destroyed (torch's profile.__exit__).
class execution_trace_observer {
public:
    STINT_DECL explicit execution_trace_observer(execution_trace_options options = {});
    execution_trace_observer(const execution_trace_observer&) = delete;
    execution_trace_observer& operator=(const execution_trace_observer&) = delete;

    /// Finishes the file if still registered; a failure becomes a warning. An attached profiler
    /// forgets the observer.
    STINT_DECL ~execution_trace_observer();

    /// Opens `path` (a temporary beside it, renamed into place when the trace is finished) and writes
    /// the trace's header; returns the observer. Throws std::system_error when the path cannot be
    /// written, std::logic_error when already registered to a file.
    STINT_DECL execution_trace_observer& register_callback(std::string path);

    /// Starts recording (alone). Does nothing while already recording. Throws std::logic_error when
    /// not registered, when attached to a profiler (whose schedule starts and stops it), or when
    /// another session records in the process.
    STINT_DECL void start();

    /// Stops recording (alone) and appends the span's nodes to the file. Does nothing when not
    /// recording. Throws std::system_error when the file cannot be written.
    STINT_DECL void stop();

    /// Stops recording if it was, writes the root node and the end, and renames the file into place;
    /// the observer can then be registered again. Does nothing when not registered.
    STINT_DECL void unregister_callback();

    /// The path given to register_callback ("" before).
    [[nodiscard]] std::string get_output_file_path() const {
        const std::lock_guard lock(mutex_);
        return path_;
    }

    /// Whether it is recording now: between start() and stop(), or in its profiler's active window
    /// (torch's `_execution_trace_running`).
    [[nodiscard]] STINT_DECL bool is_running() const;

    /// Whether it has an output file (between register_callback and unregister_callback).
    [[nodiscard]] bool is_registered() const {
        const std::lock_guard lock(mutex_);
        return writer_ != nullptr;
    }

private:
    friend class detail::profiler_state;

    // ---- what an attached profiler calls ----

    /// Attaches to `owner`, which `forget` tells when the observer goes first.
    void attach(void* owner, void (*forget)(void*)) { attached_calls_->attach(*this, owner, forget); }

    /// Whether the profiler's next window is recorded for the trace (the observer is still registered).
    bool wants_window() const {
        const std::lock_guard lock(mutex_);
        return writer_ != nullptr;
    }
    void set_window_running(bool running) {
        const std::lock_guard lock(mutex_);
        attached_running_ = running;
    }
    /// Appends one saved window of the profiler.
    void append_window(const event_list& events) { attached_calls_->append_window(*this, events); }
    /// A profiler whose construction failed lets go; the file stays open.
    void release(void* owner) noexcept {
        const std::lock_guard lock(mutex_);
        if (owner_ == owner) owner_ = nullptr;
    }
    /// The profiler is going: the file is finished (torch's cleanup at profile.__exit__).
    void detach(void* owner) { attached_calls_->detach(*this, owner); }

    // The calls above, through pointers the constructor sets: a profiler reaches the execution trace's
    // writer only in a program that makes an observer (design §16, "pay for what you name").
    struct attached_calls {
        void (*attach)(execution_trace_observer& self, void* owner, void (*forget)(void*));
        void (*append_window)(execution_trace_observer& self, const event_list& events);
        void (*detach)(execution_trace_observer& self, void* owner);
    };
    STINT_DECL static const attached_calls& attached_calls_table() noexcept;
    STINT_DECL void attach_now(void* owner, void (*forget)(void*));
    STINT_DECL void append_window_now(const event_list& events);
    STINT_DECL void detach_now(void* owner);

    STINT_DECL void stop_locked();
    STINT_DECL void finish_locked();

    const attached_calls* attached_calls_;
    mutable std::mutex mutex_;
    execution_trace_options options_;
    std::string path_;
    std::unique_ptr<detail::execution_trace_writer> writer_;
    std::unique_ptr<detail::session> session_;  // never null: made by the constructor, held by pointer so this header
                                                // declares the session without its header
    std::uint64_t next_id_ = 1;  // record function ids of its own spans, from 1 as the profiler's
    void* owner_ = nullptr;      // the profiler it is attached to
    void (*forget_)(void*) = nullptr;
    bool attached_running_ = false;
};

}  // namespace stint

#if defined(STINT_HEADER_ONLY)
#include "stint/profiler/impl/execution_trace_observer.ipp"
#endif
