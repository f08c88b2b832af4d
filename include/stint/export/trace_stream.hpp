#pragma once
// A Chrome trace written while its session records (profiler_options::stream_to): a thread of stint's
// takes the chunks that recording threads have filled, writes their events and gives the chunks back
// to the pool and their bytes back to the budget, so that a session of any length records in the
// memory of its budget (design §8). At stop, the records still in the buffers are written, then the
// counts and the threads' metadata, and the file lands under its name. A write that fails ends the
// streaming: the session keeps its records from then on, and the stop keeps both halves (design §8).

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <exception>
#include <limits>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <system_error>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "stint/detail/deferred.hpp"
#include "stint/detail/platform.hpp"
#include "stint/drain/record_store.hpp"
#include "stint/export/chrome_trace.hpp"
#include "stint/export/chrome_trace_records.hpp"
#include "stint/export/json_writer.hpp"
#include "stint/export/output_file.hpp"
#include "stint/profiler/warning.hpp"

namespace stint::detail {

/// What a streamed session wrote, for its stats.
struct streamed_totals {
    std::uint64_t events = 0;     ///< events written
    std::uint64_t recorded = 0;   ///< records of the program
    std::uint64_t overhead = 0;   ///< stint's own records
    std::uint64_t dropped = 0;
    std::uint64_t truncated = 0;  ///< runtime names cut
    std::uint64_t values_not_streamed = 0;  ///< records whose captured values were left out
};

template <class = void>
class basic_trace_stream;
/// basic_trace_stream's one form (a template only so that a file that does not use it does not compile it).
using trace_stream = basic_trace_stream<>;

/// One streamed session's trace file and the thread that writes it.
///
///     trace_stream stream("run.json", pid);        // opens the file (throws when it cannot)
///     stream.start(state, calibration, first_id);  // once the session records
///     ...
///     stream.stop();                               // before the session closes
///     streamed_totals t = stream.finish(rest, info, late);  // `rest`: what the close took
template <class Unused>
class basic_trace_stream {
    template <class T>
    using later = deferred_t<T, Unused>;  // checked when used (detail/deferred.hpp)

public:
    /// How often the writer looks for filled chunks.
    static constexpr std::chrono::milliseconds period{10};

    basic_trace_stream(const std::string& path, std::uint64_t pid) : file_(path), out_(file_), pid_(pid) {
        file_.keep_partial_at(path + ".partial");  // a long stream is worth keeping cut off
        chrome_trace_info info;
        info.pid = pid;
        out_.raw("{\n  \"schemaVersion\": 1,\n");
        write_trace_events_opening(out_, info);
    }
    basic_trace_stream(const basic_trace_stream&) = delete;
    basic_trace_stream& operator=(const basic_trace_stream&) = delete;
    ~basic_trace_stream() { stop(); }

    /// Starts writing session `state` (recording now): its events get ids from `first_id` in the order
    /// the writer reads them, and its times come from `calibration` (the session's start).
    void start(std::uint32_t state, const tick_calibration& calibration, std::uint64_t first_id) {
        state_ = state;
        calibration_ = calibration;
        next_id_ = first_id;
        thread_ = std::thread([this] { run(); });
    }

    /// Whether this is a forked child's copy: its writer thread and its file are the parent's, so it
    /// must be abandoned (leaked), never stopped or destroyed.
    [[nodiscard]] bool inherited() const noexcept { return current_pid() != pid_; }

    /// Stops the writer (joins it). What it failed with is thrown by finish().
    void stop() noexcept {
        {
            std::lock_guard lock(mutex_);
            stopping_ = true;
        }
        wake_.notify_one();
        if (thread_.joinable()) thread_.join();
    }

    /// Writes `rest` (the records the session's close took), the threads' metadata and the trace's
    /// keys, and commits the file. When writing failed, now or while the session recorded, it puts in
    /// front of `rest` the records the writer had taken and not written, keeps what was written at
    /// "<path>.partial" (cut off where the write failed) and throws: std::system_error with the OS
    /// reason, or what else writing threw. `rest` then holds every record not in that file but those
    /// the writer held between batches, which the error counts. `rest` is read, not given back.
    streamed_totals finish(record_store& rest, const chrome_trace_info& info) {
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

    /// The id the next event written would get: the first id of records not written.
    [[nodiscard]] std::uint64_t next_id() const noexcept { return next_id_; }

private:
    struct thread_state {
        const void* node = nullptr;
        drained_thread counts;
        std::uint64_t events = 0;
        later<std::optional<thread_trace_writer>> writer;
    };

    streamed_totals write_rest(record_store& rest, const chrome_trace_info& info) {
        write_batch(rest);
        for (const record_store::thread_records& t : rest.threads()) {
            thread_state& s = state_of(t);
            s.counts.dropped = t.counts.dropped;
            s.counts.truncated = t.counts.truncated;
            s.counts.name = t.counts.name;  // as named at the stop, like a stop's trace
        }
        // The threads in the order the close found them (every thread of the session is there), as a
        // normal stop lists them: one entry per OS thread, its buffers (one per shared object) merged.
        later<std::vector<thread_info>> threads;
        later<std::unordered_set<const void*>> listed;
        later<std::unordered_map<std::uint64_t, std::size_t>> row_of_tid;
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

    // Records the writers hold until a record of another end arrives.
    std::uint64_t held_records() const noexcept {
        std::uint64_t held = 0;
        for (const thread_state& s : threads_) held += s.writer ? s.writer->held_count() : 0;
        return held;
    }

    // What a failed write leaves: the file kept cut off where it could be, and the error stop() throws.
    [[noreturn]] void throw_failure() {
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

    // The reason of a failure, for the warning: the OS's when there is one.
    static std::string reason_of(const std::exception_ptr& error) {
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

    void run() noexcept {
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

    // The writer failed: it stops giving chunks back, so the session goes on as one that keeps its
    // records, in its budget (beyond it records are dropped and counted), and finish() keeps them. It
    // says so now rather than at the stop.
    void fail(record_store&& batch) noexcept {
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

    // Writes each thread's records of `batch` (its chunks stay in it).
    void write_batch(record_store& batch) {
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

    // Points of flows and async spans whose partner has not come yet, by kind and id: begins count up,
    // ends down (a stream cannot wait to pair them in time order as an event list does; for ids whose
    // ends follow their begins, the two count alike).
    void balance_point(event_kind kind, const record_payload& payload) {
        const std::uint64_t id = read_point(payload).id;
        const bool flow = kind == event_kind::flow_begin || kind == event_kind::flow_end;
        const bool begin = kind == event_kind::flow_begin || kind == event_kind::async_begin;
        auto& open = flow ? open_flows_ : open_spans_;
        const auto at = open.try_emplace(id, 0).first;
        at->second += begin ? 1 : -1;
        if (at->second == 0) open.erase(at);
    }

    [[nodiscard]] unmatched_points unmatched() const {
        unmatched_points u;
        const auto count = [](std::int64_t balance) { return static_cast<std::uint64_t>(std::abs(balance)); };
        for (const auto& [id, balance] : open_flows_) (balance > 0 ? u.flow_begins : u.flow_ends) += count(balance);
        for (const auto& [id, balance] : open_spans_) (balance > 0 ? u.async_open : u.async_ends) += count(balance);
        return u;
    }

    // The origin of t's row, shared by every buffer of its OS thread (one row to a viewer): the earliest
    // start of the thread's buffers in the first batch that had events of it (a normal stop takes the
    // earliest of the whole session, which a stream cannot wait for).
    double origin_of(const record_store& batch, const record_store::thread_records& t) {
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

    thread_state& state_of(const record_store::thread_records& t) {
        const auto [at, added] = index_.try_emplace(t.node, threads_.size());
        if (!added) return threads_[at->second];
        thread_state& s = threads_.emplace_back();
        s.node = t.node;
        s.counts.os_tid = t.counts.os_tid;
        s.counts.name = t.counts.name;
        return s;
    }

    later<output_file> file_;
    later<json_writer> out_;
    std::uint64_t pid_ = 0;
    std::uint32_t state_ = 0;
    tick_calibration calibration_;
    std::uint64_t next_id_ = 0;
    later<std::vector<thread_state>> threads_;  // per buffer, in the order first seen
    later<std::unordered_map<const void*, std::size_t>> index_;
    later<std::unordered_map<std::uint64_t, std::int64_t>> open_flows_;  // balance_point's
    later<std::unordered_map<std::uint64_t, std::int64_t>> open_spans_;
    later<std::unordered_map<std::uint64_t, double>> origins_;  // per OS thread
    std::thread thread_;
    std::mutex mutex_;
    std::condition_variable wake_;
    bool stopping_ = false;
    std::exception_ptr error_;      // what writing failed with (the writer's thread, or finish)
    record_store unwritten_;        // the batch the writer failed on
    std::uint64_t held_before_batch_ = 0;  // records the writers held when the last batch began
};

}  // namespace stint::detail
