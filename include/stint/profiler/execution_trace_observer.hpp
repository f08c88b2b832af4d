#pragma once
// stint::execution_trace_observer: records an execution trace (export/execution_trace.hpp), alone with
// start()/stop(), or attached to a profiler whose active windows it then records (torch.profiler's
// ExecutionTraceObserver).

#include <cstddef>
#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <utility>

#include <fmt/format.h>

#include "stint/detail/deferred.hpp"
#include "stint/config.hpp"
#include "stint/drain/session.hpp"
#include "stint/export/execution_trace.hpp"
#include "stint/detail/separate_compilation.hpp"
#include "stint/profiler/warning.hpp"
#include "stint/recording/buffer.hpp"

namespace stint {

namespace detail {
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
template <class Unused = void>
class basic_execution_trace_observer {
public:
    explicit basic_execution_trace_observer(execution_trace_options options = {}) : options_(options) {}
    basic_execution_trace_observer(const basic_execution_trace_observer&) = delete;
    basic_execution_trace_observer& operator=(const basic_execution_trace_observer&) = delete;

    /// Finishes the file if still registered; a failure becomes a warning. An attached profiler
    /// forgets the observer.
    ~basic_execution_trace_observer() {
        void* owner = nullptr;
        {
            const std::lock_guard lock(mutex_);
            owner = std::exchange(owner_, nullptr);
        }
        if (owner != nullptr) forget_(owner);  // takes the profiler's lock: not under ours
        const std::lock_guard lock(mutex_);
        try {
            finish_locked();
        } catch (const std::exception& e) {
            detail::warn(fmt::format("execution_trace_observer: cannot finish '{}': {}", path_, e.what()));
        } catch (...) {
            detail::warn(fmt::format("execution_trace_observer: cannot finish '{}'", path_));
        }
    }

    /// Opens `path` (a temporary beside it, renamed into place when the trace is finished) and writes
    /// the trace's header; returns the observer. Throws std::system_error when the path cannot be
    /// written, std::logic_error when already registered to a file.
    basic_execution_trace_observer& register_callback(std::string path) {
        const detail::own_allocation_scope own;
        const std::lock_guard lock(mutex_);
        if (writer_ != nullptr) {
            throw std::logic_error(fmt::format("stint: execution_trace_observer::register_callback(\"{}\"): already "
                                               "writing '{}'; call unregister_callback() first",
                                               path, path_));
        }
        writer_ = std::make_unique<detail::deferred_t<detail::execution_trace_writer, Unused>>(path);
        path_ = std::move(path);
        return *this;
    }

    /// Starts recording (alone). Does nothing while already recording. Throws std::logic_error when
    /// not registered, when attached to a profiler (whose schedule starts and stops it), or when
    /// another session records in the process.
    void start() {
        const detail::own_allocation_scope own;
        const std::lock_guard lock(mutex_);
        if (writer_ == nullptr) {
            throw std::logic_error("stint: execution_trace_observer::start(): no output file; call "
                                   "register_callback(path) first");
        }
        if (owner_ != nullptr) {
            throw std::logic_error("stint: execution_trace_observer::start(): it is attached to a profiler, which "
                                   "starts and stops it with its schedule");
        }
        if (session_.is_open()) return;
        session_.open(options_.buffer_budget_bytes, options_.reserve_buffer_bytes, true, false,
                      {.outputs = true, .tensor_identities = true});
    }

    /// Stops recording (alone) and appends the span's nodes to the file. Does nothing when not
    /// recording. Throws std::system_error when the file cannot be written.
    void stop() {
        const detail::own_allocation_scope own;
        const std::lock_guard lock(mutex_);
        stop_locked();
    }

    /// Stops recording if it was, writes the root node and the end, and renames the file into place;
    /// the observer can then be registered again. Does nothing when not registered.
    void unregister_callback() {
        const detail::own_allocation_scope own;
        const std::lock_guard lock(mutex_);
        finish_locked();
    }

    /// The path given to register_callback ("" before).
    [[nodiscard]] std::string get_output_file_path() const {
        const std::lock_guard lock(mutex_);
        return path_;
    }

    /// Whether it is recording now: between start() and stop(), or in its profiler's active window
    /// (torch's `_execution_trace_running`).
    [[nodiscard]] bool is_running() const {
        const std::lock_guard lock(mutex_);
        return session_.is_open() || attached_running_;
    }

    /// Whether it has an output file (between register_callback and unregister_callback).
    [[nodiscard]] bool is_registered() const {
        const std::lock_guard lock(mutex_);
        return writer_ != nullptr;
    }

private:
    friend class detail::profiler_state;

    // ---- what an attached profiler calls ----

    /// Attaches to `owner`, which `forget` tells when the observer goes first.
    void attach(void* owner, void (*forget)(void*)) {
        const std::lock_guard lock(mutex_);
        if (writer_ == nullptr) {
            throw std::invalid_argument("stint: profiler_options::execution_trace_observer: the observer has no "
                                        "output file; call register_callback(path) first");
        }
        if (owner_ != nullptr) {
            throw std::invalid_argument("stint: profiler_options::execution_trace_observer: the observer is already "
                                        "attached to another profiler");
        }
        if (session_.is_open()) {
            throw std::invalid_argument("stint: profiler_options::execution_trace_observer: the observer is recording "
                                        "on its own; stop() it first");
        }
        owner_ = owner;
        forget_ = forget;
    }

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
    void append_window(const event_list& events) {
        const std::lock_guard lock(mutex_);
        if (writer_ != nullptr) writer_->append(events);
    }
    /// A profiler whose construction failed lets go; the file stays open.
    void release(void* owner) noexcept {
        const std::lock_guard lock(mutex_);
        if (owner_ == owner) owner_ = nullptr;
    }
    /// The profiler is going: the file is finished (torch's cleanup at profile.__exit__).
    void detach(void* owner) {
        const std::lock_guard lock(mutex_);
        if (owner_ != owner) return;
        owner_ = nullptr;
        attached_running_ = false;
        finish_locked();
    }

    void stop_locked() {
        if (!session_.is_open()) return;
        event_list events;
        if (!session_.close(events, next_id_, {.input_values = true})) return;
        next_id_ += events.size();
        if (writer_ != nullptr) writer_->append(events);
    }

    void finish_locked() {
        std::exception_ptr error;
        try {
            stop_locked();
        } catch (...) {
            error = std::current_exception();
        }
        if (writer_ == nullptr) return;
        auto writer = std::move(writer_);
        writer->finish();
        if (error) std::rethrow_exception(error);
    }

    mutable std::mutex mutex_;
    execution_trace_options options_;
    std::string path_;
    detail::deferred_t<std::unique_ptr<detail::execution_trace_writer>, Unused> writer_;
    detail::session session_;
    std::uint64_t next_id_ = 1;  // record function ids of its own spans, from 1 as the profiler's
    void* owner_ = nullptr;      // the profiler it is attached to
    void (*forget_)(void*) = nullptr;
    bool attached_running_ = false;
};
/// The one form of basic_execution_trace_observer (a template only so that a file that never uses it does not compile it).
using execution_trace_observer = basic_execution_trace_observer<>;

}  // namespace stint
