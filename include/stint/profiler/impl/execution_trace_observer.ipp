#pragma once
// The bodies of profiler/execution_trace_observer.hpp: an execution trace's spans, alone or a profiler's windows.
#include "stint/profiler/execution_trace_observer.hpp"

#include <exception>  // std::exception, std::exception_ptr
#include <memory>     // std::make_unique
#include <mutex>      // std::lock_guard
#include <stdexcept>  // std::logic_error, std::invalid_argument
#include <utility>    // std::exchange, std::move

#include <fmt/format.h>  // fmt::format

#include "stint/common/warning.hpp"
#include "stint/drain/session.hpp"
#include "stint/export/execution_trace.hpp"
#include "stint/recording/buffer.hpp"

namespace stint {

execution_trace_observer::execution_trace_observer(execution_trace_options options)
    : attached_calls_(&attached_calls_table()), options_(options), session_(std::make_unique<detail::session>()) {}

const execution_trace_observer::attached_calls& execution_trace_observer::attached_calls_table() noexcept {
    static constexpr attached_calls calls{
        .attach = [](execution_trace_observer& self, void* owner, void (*forget)(void*)) { self.attach_now(owner, forget); },
        .append_window = [](execution_trace_observer& self, const event_list& events) { self.append_window_now(events); },
        .detach = [](execution_trace_observer& self, void* owner) { self.detach_now(owner); }};
    return calls;
}

bool execution_trace_observer::is_running() const {
    const std::lock_guard lock(mutex_);
    return session_->is_open() || attached_running_;
}

execution_trace_observer::~execution_trace_observer() {
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

execution_trace_observer& execution_trace_observer::register_callback(std::string path) {
    const detail::own_allocation_scope own;
    const std::lock_guard lock(mutex_);
    if (writer_ != nullptr) {
        throw std::logic_error(fmt::format("stint: execution_trace_observer::register_callback(\"{}\"): already "
                                           "writing '{}'; call unregister_callback() first",
                                           path, path_));
    }
    writer_ = std::make_unique<detail::execution_trace_writer>(path);
    path_ = std::move(path);
    return *this;
}

void execution_trace_observer::start() {
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
    if (session_->is_open()) return;
    session_->open(options_.buffer_budget_bytes, options_.reserve_buffer_bytes, true, false,
                  {.outputs = true, .tensor_identities = true});
}

void execution_trace_observer::stop() {
    const detail::own_allocation_scope own;
    const std::lock_guard lock(mutex_);
    stop_locked();
}

void execution_trace_observer::unregister_callback() {
    const detail::own_allocation_scope own;
    const std::lock_guard lock(mutex_);
    finish_locked();
}

void execution_trace_observer::attach_now(void* owner, void (*forget)(void*)) {
    const std::lock_guard lock(mutex_);
    if (writer_ == nullptr) {
        throw std::invalid_argument("stint: profiler_options::execution_trace_observer: the observer has no "
                                    "output file; call register_callback(path) first");
    }
    if (owner_ != nullptr) {
        throw std::invalid_argument("stint: profiler_options::execution_trace_observer: the observer is already "
                                    "attached to another profiler");
    }
    if (session_->is_open()) {
        throw std::invalid_argument("stint: profiler_options::execution_trace_observer: the observer is recording "
                                    "on its own; stop() it first");
    }
    owner_ = owner;
    forget_ = forget;
}

void execution_trace_observer::append_window_now(const event_list& events) {
    const std::lock_guard lock(mutex_);
    if (writer_ != nullptr) writer_->append(events);
}

void execution_trace_observer::detach_now(void* owner) {
    const std::lock_guard lock(mutex_);
    if (owner_ != owner) return;
    owner_ = nullptr;
    attached_running_ = false;
    finish_locked();
}

void execution_trace_observer::stop_locked() {
    if (!session_->is_open()) return;
    event_list events;
    if (!session_->close(events, next_id_, {.input_values = true})) return;
    next_id_ += events.size();
    if (writer_ != nullptr) writer_->append(events);
}

void execution_trace_observer::finish_locked() {
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

}  // namespace stint
