#pragma once
// trace_stream's bodies: the writer thread, its batches, a failure kept and the trace's end.
#include "stint/export/trace_stream.hpp"

#include <algorithm>      // std::min
#include <cstdlib>        // std::abs
#include <limits>         // std::numeric_limits
#include <stdexcept>      // std::runtime_error
#include <system_error>   // std::system_error
#include <unordered_set>  // std::unordered_set
#include <utility>        // std::move

#include "stint/common/warning.hpp"

namespace stint::detail {

const trace_stream_code& trace_stream_code_table() noexcept {
    static constexpr trace_stream_code table{
        .open = [](const std::string& path, std::uint64_t pid) { return new trace_stream(path, pid); },
        .start = [](trace_stream& stream, std::uint32_t state, const tick_calibration& calibration,
                    std::uint64_t first_id) { stream.start(state, calibration, first_id); },
        .stop = [](trace_stream& stream) noexcept { stream.stop(); },
        .finish = [](trace_stream& stream, record_store& rest, const chrome_trace_info& info) {
            return stream.finish(rest, info);
        },
        .destroy = [](trace_stream* stream) noexcept { delete stream; }};
    return table;
}

trace_stream::trace_stream(const std::string& path, std::uint64_t pid)
    : file_(path), out_(file_), pid_(pid) {
    file_.keep_partial_at(path + ".partial");  // a long stream is worth keeping cut off
    chrome_trace_info info;
    info.pid = pid;
    out_.raw("{\n  \"schemaVersion\": 1,\n");
    write_trace_events_opening(out_, info);
}

void trace_stream::start(std::uint32_t state, const tick_calibration& calibration, std::uint64_t first_id) {
    state_ = state;
    calibration_ = calibration;
    next_id_ = first_id;
    thread_ = std::thread([this] { run(); });
}

void trace_stream::stop() noexcept {
    {
        std::lock_guard lock(mutex_);
        stopping_ = true;
    }
    wake_.notify_one();
    if (thread_.joinable()) thread_.join();
}

streamed_totals trace_stream::finish(record_store& rest, const chrome_trace_info& info) {
    stop();
    if (!error_) {
        try {
            held_before_batch_ = held_records();
            return write_rest(rest, info);
        } catch (...) {
            error_ = std::current_exception();
        }
    }
    rest.prepend(std::move(unwritten_));
    throw_failure();
}

streamed_totals trace_stream::write_rest(record_store& rest, const chrome_trace_info& info) {
    write_batch(rest);
    for (const record_store::thread_records& t : rest.threads()) {
        thread_state& s = state_of(t);
        s.counts.dropped = t.counts.dropped;
        s.counts.truncated = t.counts.truncated;
        s.counts.name = t.counts.name;  // as named at the stop, like a stop's trace
    }
    // The threads in the order the close found them (every thread of the session is there), as a
    // normal stop lists them: one entry per OS thread, its buffers (one per shared object) merged.
    std::vector<thread_info> threads;
    std::unordered_set<const void*> listed;
    std::unordered_map<std::uint64_t, std::size_t> row_of_tid;
    const auto list = [&](const thread_state& s) {
        if (!listed.insert(s.node).second) return;
        const auto [at, added] = row_of_tid.try_emplace(s.counts.os_tid, threads.size());
        if (added) threads.push_back({s.counts.os_tid, {}, 0, 0});
        thread_info& t = threads[at->second];
        if (t.name.empty()) t.name = s.counts.name;  // the first buffer's, as the event list names it
        t.recorded += s.counts.recorded;
        t.dropped += s.counts.dropped;
    };
    for (const record_store::thread_records& t : rest.threads()) list(state_of(t));
    streamed_totals totals;
    for (thread_state& s : threads_) {
        if (s.writer) s.writer->flush();
        list(s);
        totals.events += s.events;
        totals.values_not_streamed += s.writer ? s.writer->values_left_out() : 0;
        totals.recorded += s.counts.recorded;
        totals.overhead += s.counts.overhead;
        totals.dropped += s.counts.dropped;
        totals.truncated += s.counts.truncated;
    }
    write_thread_metadata(out_, threads, info);
    out_.raw("\n  ],\n");
    const device_report no_device;
    const chrome_trace_head head{.recorded = totals.recorded,
                                 .dropped = totals.dropped,
                                 .late = rest.late,
                                 .device = &no_device,
                                 .memory_dropped = rest.memory_dropped,
                                 .memory_peaks = {},
                                 .threads = threads,
                                 .no_events = totals.events == 0,
                                 .values_not_streamed = totals.values_not_streamed,
                                 .unmatched = unmatched()};
    write_trace_keys(out_, head, info);
    write_trace_closing_keys(out_, calibration_.anchor.system_ns);
    file_.commit();
    return totals;
}

std::uint64_t trace_stream::held_records() const noexcept {
    std::uint64_t held = 0;
    for (const thread_state& s : threads_) held += s.writer ? s.writer->held_count() : 0;
    return held;
}

void trace_stream::throw_failure() {
    file_.abandon();
    std::string text = "stint: the trace stream to '" + file_.path() + "' failed (";
    if (!file_.kept_partial().empty()) {
        text += "what it wrote is in '" + file_.kept_partial() + "', cut off where the write failed";
    } else if (file_.written_through()) {
        text += "what it wrote went through to it";
    } else {
        text += "nothing it wrote could be kept";
    }
    text += "; the records it had not written are kept by the profiler: events() and the exports read them";
    if (held_before_batch_ != 0) {
        text += "; " + std::to_string(held_before_batch_) + " records it held between batches are lost";
    }
    text += ")";
    try {
        std::rethrow_exception(error_);
    } catch (const std::system_error& e) {
        throw std::system_error(e.code(), text);  // what(): text, then the OS reason
    } catch (const std::exception& e) {
        throw std::runtime_error(text + ": " + e.what());
    } catch (...) {
        throw std::runtime_error(text);
    }
}

std::string trace_stream::reason_of(const std::exception_ptr& error) {
    try {
        std::rethrow_exception(error);
    } catch (const std::system_error& e) {
        return e.code().message();
    } catch (const std::exception& e) {
        return e.what();
    } catch (...) {
        return "an exception of unknown type";
    }
}

void trace_stream::run() noexcept {
    const own_allocation_scope own;  // the writer's memory is not the program's
    name_this_thread("stint stream");
    std::unique_lock lock(mutex_);
    while (!stopping_) {
        wake_.wait_for(lock, period, [this] { return stopping_; });
        if (stopping_) break;
        lock.unlock();
        record_store batch;
        try {
            held_before_batch_ = held_records();
            batch.stop_ticks = std::numeric_limits<std::uint64_t>::max();  // recording: all ended in it
            the_registry().take_written(state_, [&](taken_records&& t) { batch.add(std::move(t)); });
            write_batch(batch);
            // In the file before the chunks go back: a write that fails keeps the whole batch.
            out_.flush();
        } catch (...) {
            fail(std::move(batch));
            return;
        }
        for (record_store::thread_records& t : batch.threads()) {
            the_registry().give_back_streamed(state_, batch.take_chunks(t));
        }
        lock.lock();
    }
}

void trace_stream::fail(record_store&& batch) noexcept {
    error_ = std::current_exception();
    unwritten_ = std::move(batch);
    try {
        warn("the trace stream to '" + file_.path() + "' failed (" + reason_of(error_) +
             "): the session records on into its buffer budget (records beyond it are dropped and counted), "
             "and stop() throws, keeping what was written and the records not written");
    } catch (...) {
        // out of memory: stop() still reports it
    }
}

void trace_stream::write_batch(record_store& batch) {
    batch.calibration = calibration_;  // the stream's times all come from the session's start
    for (record_store::thread_records& t : batch.threads()) {
        thread_state& s = state_of(t);
        s.counts.recorded += t.counts.recorded;
        s.counts.overhead += t.counts.overhead;
        if (t.events != 0 || !t.timing_only) {  // (outputs and args records make no event, but are counted)
            if (!s.writer) s.writer.emplace(out_, calibration_, pid_, t.counts.os_tid, origin_of(batch, t));
            batch.for_each_record(t, [&](const record& r, const record_payload& payload) {
                const payload_kind kind = r.where()->payload;
                if (kind == payload_kind::outputs || kind == payload_kind::args) {
                    s.writer->leave_out_values();
                } else if (kind != payload_kind::device_link) {  // part of the scope before it
                    if (kind == payload_kind::point) balance_point(r.where()->kind, payload);
                    s.writer->add(r, payload, next_id_++);
                }
            });
            s.events += t.events;
            s.writer->own_held_names();  // the records' chunks go back after the batch
        }
    }
}

void trace_stream::balance_point(event_kind kind, const record_payload& payload) {
    const std::uint64_t id = read_point(payload).id;
    const bool flow = kind == event_kind::flow_begin || kind == event_kind::flow_end;
    const bool begin = kind == event_kind::flow_begin || kind == event_kind::async_begin;
    auto& open = flow ? open_flows_ : open_spans_;
    const auto at = open.try_emplace(id, 0).first;
    at->second += begin ? 1 : -1;
    if (at->second == 0) open.erase(at);
}

unmatched_points trace_stream::unmatched() const {
    unmatched_points u;
    const auto count = [](std::int64_t balance) { return static_cast<std::uint64_t>(std::abs(balance)); };
    for (const auto& [id, balance] : open_flows_) (balance > 0 ? u.flow_begins : u.flow_ends) += count(balance);
    for (const auto& [id, balance] : open_spans_) (balance > 0 ? u.async_open : u.async_ends) += count(balance);
    return u;
}

double trace_stream::origin_of(const record_store& batch, const record_store::thread_records& t) {
    const auto [at, added] = origins_.try_emplace(t.counts.os_tid, 0.0);
    if (added) {
        std::uint64_t first = t.first_start_ticks;
        for (const record_store::thread_records& other : batch.threads()) {
            if (other.counts.os_tid == t.counts.os_tid) first = std::min(first, other.first_start_ticks);
        }
        at->second = first == std::numeric_limits<std::uint64_t>::max()
                         ? std::numeric_limits<double>::infinity()  // instants only, as origin_of says
                         : trace_microseconds(calibration_.to_ns_since_anchor(first));
    }
    return at->second;
}

trace_stream::thread_state& trace_stream::state_of(const record_store::thread_records& t) {
    const auto [at, added] = index_.try_emplace(t.node, threads_.size());
    if (!added) return threads_[at->second];
    thread_state& s = threads_.emplace_back();
    s.node = t.node;
    s.counts.os_tid = t.counts.os_tid;
    s.counts.name = t.counts.name;
    return s;
}


}  // namespace stint::detail
