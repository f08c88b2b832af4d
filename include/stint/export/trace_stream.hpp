#pragma once
// A Chrome trace written while its session records (profiler_options::stream_to): a thread of stint's
// takes the chunks that recording threads have filled, writes their events and gives the chunks back
// to the pool and their bytes back to the budget, so that a session of any length records in the
// memory of its budget (design §8). At stop, the records still in the buffers are written, then the
// counts and the threads' metadata, and the file lands under its name. A write that fails ends the
// streaming: the session keeps its records from then on, and the stop keeps both halves (design §8).

#include <chrono>              // std::chrono::milliseconds
#include <condition_variable>  // std::condition_variable
#include <cstddef>             // std::size_t
#include <cstdint>             // std::uint64_t, std::int64_t, std::uint32_t
#include <exception>           // std::exception_ptr
#include <mutex>               // std::mutex
#include <optional>            // std::optional
#include <string>              // std::string
#include <thread>              // std::thread
#include <unordered_map>       // std::unordered_map
#include <vector>              // std::vector

#include "stint/detail/platform.hpp"
#include "stint/detail/separate_compilation.hpp"
#include "stint/drain/record_store.hpp"
#include "stint/export/chrome_trace.hpp"
#include "stint/export/chrome_trace_records.hpp"
#include "stint/export/json_writer.hpp"
#include "stint/export/output_file.hpp"
#include "stint/export/stream_target.hpp"

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

/// One streamed session's trace file and the thread that writes it.
///
///     trace_stream stream("run.json", pid);        // opens the file (throws when it cannot)
///     stream.start(state, calibration, first_id);  // once the session records
///     ...
///     stream.stop();                               // before the session closes
///     streamed_totals t = stream.finish(rest, info, late);  // `rest`: what the close took
class trace_stream {
public:
    /// How often the writer looks for filled chunks.
    static constexpr std::chrono::milliseconds period{10};

    STINT_DECL trace_stream(const std::string& path, std::uint64_t pid);
    trace_stream(const trace_stream&) = delete;
    trace_stream& operator=(const trace_stream&) = delete;
    ~trace_stream() { stop(); }

    /// Starts writing session `state` (recording now): its events get ids from `first_id` in the order
    /// the writer reads them, and its times come from `calibration` (the session's start).
    STINT_DECL void start(std::uint32_t state, const tick_calibration& calibration, std::uint64_t first_id);

    /// Whether this is a forked child's copy: its writer thread and its file are the parent's, so it
    /// must be abandoned (leaked), never stopped or destroyed.
    [[nodiscard]] bool inherited() const noexcept { return current_pid() != pid_; }

    /// Stops the writer (joins it). What it failed with is thrown by finish().
    STINT_DECL void stop() noexcept;

    /// Writes `rest` (the records the session's close took), the threads' metadata and the trace's
    /// keys, and commits the file. When writing failed, now or while the session recorded, it puts in
    /// front of `rest` the records the writer had taken and not written, keeps what was written at
    /// "<path>.partial" (cut off where the write failed) and throws: std::system_error with the OS
    /// reason, or what else writing threw. `rest` then holds every record not in that file but those
    /// the writer held between batches, which the error counts. `rest` is read, not given back.
    STINT_DECL streamed_totals finish(record_store& rest, const chrome_trace_info& info);

    /// The id the next event written would get: the first id of records not written.
    [[nodiscard]] std::uint64_t next_id() const noexcept { return next_id_; }

private:
    struct thread_state {
        const void* node = nullptr;
        drained_thread counts;
        std::uint64_t events = 0;
        std::optional<thread_trace_writer> writer;
    };

    STINT_DECL streamed_totals write_rest(record_store& rest, const chrome_trace_info& info);

    // Records the writers hold until a record of another end arrives.
    STINT_DECL std::uint64_t held_records() const noexcept;

    // What a failed write leaves: the file kept cut off where it could be, and the error stop() throws.
    [[noreturn]] STINT_DECL void throw_failure();

    // The reason of a failure, for the warning: the OS's when there is one.
    STINT_DECL static std::string reason_of(const std::exception_ptr& error);

    STINT_DECL void run() noexcept;

    // The writer failed: it stops giving chunks back, so the session goes on as one that keeps its
    // records, in its budget (beyond it records are dropped and counted), and finish() keeps them. It
    // says so now rather than at the stop.
    STINT_DECL void fail(record_store&& batch) noexcept;

    // Writes each thread's records of `batch` (its chunks stay in it).
    STINT_DECL void write_batch(record_store& batch);

    // Points of flows and async spans whose partner has not come yet, by kind and id: begins count up,
    // ends down (a stream cannot wait to pair them in time order as an event list does; for ids whose
    // ends follow their begins, the two count alike).
    STINT_DECL void balance_point(event_kind kind, const record_payload& payload);

    [[nodiscard]] STINT_DECL unmatched_points unmatched() const;

    // The origin of t's row, shared by every buffer of its OS thread (one row to a viewer): the earliest
    // start of the thread's buffers in the first batch that had events of it (a normal stop takes the
    // earliest of the whole session, which a stream cannot wait for).
    STINT_DECL double origin_of(const record_store& batch, const record_store::thread_records& t);

    STINT_DECL thread_state& state_of(const record_store::thread_records& t);

    output_file file_;
    json_writer out_;
    std::uint64_t pid_ = 0;
    std::uint32_t state_ = 0;
    tick_calibration calibration_;
    std::uint64_t next_id_ = 0;
    std::vector<thread_state> threads_;  // per buffer, in the order first seen
    std::unordered_map<const void*, std::size_t> index_;
    std::unordered_map<std::uint64_t, std::int64_t> open_flows_;  // balance_point's
    std::unordered_map<std::uint64_t, std::int64_t> open_spans_;
    std::unordered_map<std::uint64_t, double> origins_;  // per OS thread
    std::thread thread_;
    std::mutex mutex_;
    std::condition_variable wake_;
    bool stopping_ = false;
    std::exception_ptr error_;      // what writing failed with (the writer's thread, or finish)
    record_store unwritten_;        // the batch the writer failed on
    std::uint64_t held_before_batch_ = 0;  // records the writers held when the last batch began
};

/// The streaming writer's code as the profiler's core calls it: plain function pointers (as the flight
/// recorder's, profiler/flight_recorder_options.hpp), reached only through a stream_target made from a path.
struct trace_stream_code {
    trace_stream* (*open)(const std::string& path, std::uint64_t pid);  ///< the caller owns it: `destroy`
    void (*start)(trace_stream& stream, std::uint32_t state, const tick_calibration& calibration,
                  std::uint64_t first_id);
    void (*stop)(trace_stream& stream) noexcept;
    streamed_totals (*finish)(trace_stream& stream, record_store& rest, const chrome_trace_info& info);
    void (*destroy)(trace_stream* stream) noexcept;
};

/// A streamed window while it records, as the profiler's core holds it: its stream_target's writer,
/// called through that target's code. Destroyed before finish() completed the file, it discards it.
class streaming_session {
public:
    streaming_session(const stream_target& target, std::uint64_t pid)
        : code_(target.code()), stream_(code_->open(target.path(), pid)) {}
    ~streaming_session() {
        if (stream_ != nullptr) code_->destroy(stream_);
    }
    streaming_session(const streaming_session&) = delete;
    streaming_session& operator=(const streaming_session&) = delete;

    void start(std::uint32_t state, const tick_calibration& calibration, std::uint64_t first_id) {
        code_->start(*stream_, state, calibration, first_id);
    }
    /// Whether this process is a fork of the one that started it.
    [[nodiscard]] bool inherited() const noexcept { return stream_->inherited(); }
    /// A forked child: the writer thread and the file are the parent's; forget both.
    void abandon() noexcept { stream_ = nullptr; }
    void stop() noexcept { code_->stop(*stream_); }
    streamed_totals finish(record_store& rest, const chrome_trace_info& info) {
        return code_->finish(*stream_, rest, info);
    }
    [[nodiscard]] std::uint64_t next_id() const noexcept { return stream_->next_id(); }

private:
    const trace_stream_code* code_;
    trace_stream* stream_;
};

}  // namespace stint::detail

#if defined(STINT_HEADER_ONLY)
#include "stint/export/impl/trace_stream.ipp"
#endif
