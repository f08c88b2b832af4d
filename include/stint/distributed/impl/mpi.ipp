#pragma once
// The bodies of distributed/mpi.hpp: the clock ping-pong, the texts sent between ranks and the job's trace.
#include "stint/distributed/mpi.hpp"

#include <algorithm>  // std::min, std::max
#include <exception>  // std::exception
#include <limits>     // std::numeric_limits
#include <memory>     // std::unique_ptr, std::make_unique
#include <stdexcept>  // std::runtime_error
#include <utility>    // std::move
#include <vector>     // std::vector

#include <fmt/format.h>  // fmt::format

#include "stint/detail/platform.hpp"
#include "stint/export/json_writer.hpp"
#include "stint/profiler/distributed.hpp"
#include "stint/recording/clock.hpp"

namespace stint::mpi {

namespace detail {

void check(int code, const char* what) {
    if (code == MPI_SUCCESS) return;
    char text[MPI_MAX_ERROR_STRING] = {};
    int length = 0;
    MPI_Error_string(code, text, &length);
    throw std::runtime_error(
        fmt::format("stint: {} failed: {}", what, std::string_view(text, static_cast<std::size_t>(length))));
}

void send_text(MPI_Comm comm, int to, std::string_view text) {
    auto size = static_cast<std::uint64_t>(text.size());
    check(MPI_Send(&size, 1, MPI_UINT64_T, to, text_tag, comm), "MPI_Send");
    for (std::size_t at = 0; at < text.size(); at += max_piece) {
        const std::size_t piece = std::min(max_piece, text.size() - at);
        check(MPI_Send(text.data() + at, static_cast<int>(piece), MPI_BYTE, to, text_tag, comm), "MPI_Send");
    }
}

std::string receive_text(MPI_Comm comm, int from) {
    std::uint64_t size = 0;
    check(MPI_Recv(&size, 1, MPI_UINT64_T, from, text_tag, comm, MPI_STATUS_IGNORE), "MPI_Recv");
    std::string text(static_cast<std::size_t>(size), '\0');
    for (std::size_t at = 0; at < text.size(); at += max_piece) {
        const std::size_t piece = std::min(max_piece, text.size() - at);
        check(MPI_Recv(text.data() + at, static_cast<int>(piece), MPI_BYTE, from, text_tag, comm, MPI_STATUS_IGNORE),
              "MPI_Recv");
    }
    return text;
}

struct string_sink {
    std::string text;
    void write(std::string_view bytes) { text.append(bytes); }
};

/// What `write(json_writer&)` writes, as a string (to send to rank 0).
template <class Write>
std::string written(Write&& write) {
    string_sink sink;
    stint::detail::json_writer out(sink);
    write(out);
    out.flush();
    return std::move(sink.text);
}

void agree(MPI_Comm comm, int rank, const std::string& failure) {
    std::string message = rank == 0 ? failure : std::string();
    std::uint64_t size = message.size();
    check(MPI_Bcast(&size, 1, MPI_UINT64_T, 0, comm), "MPI_Bcast");
    if (size == 0) return;
    message.resize(static_cast<std::size_t>(size));
    check(MPI_Bcast(message.data(), static_cast<int>(std::min<std::uint64_t>(size, max_piece)), MPI_BYTE, 0, comm),
          "MPI_Bcast");
    throw std::runtime_error(message);
}

}  // namespace detail

clock_sample measure_clock(MPI_Comm comm, int rounds) {
    int rank = 0;
    int size = 1;
    detail::check(MPI_Comm_rank(comm, &rank), "MPI_Comm_rank");
    detail::check(MPI_Comm_size(comm, &size), "MPI_Comm_size");
    rounds = std::max(rounds, 1);
    const auto now = [] { return stint::detail::steady_now_ns(); };
    clock_sample best{now(), 0, 0};
    if (rank == 0) {
        for (int peer = 1; peer < size; ++peer) {
            for (int round = 0; round < rounds; ++round) {
                std::int64_t reading = 0;
                detail::check(MPI_Recv(&reading, 1, MPI_INT64_T, peer, detail::ping_tag, comm, MPI_STATUS_IGNORE),
                              "MPI_Recv");
                reading = now();
                detail::check(MPI_Send(&reading, 1, MPI_INT64_T, peer, detail::ping_tag, comm), "MPI_Send");
            }
        }
    } else {
        std::int64_t best_round_trip = std::numeric_limits<std::int64_t>::max();
        for (int round = 0; round < rounds; ++round) {
            std::int64_t t0 = now();
            detail::check(MPI_Send(&t0, 1, MPI_INT64_T, 0, detail::ping_tag, comm), "MPI_Send");
            std::int64_t answer = 0;
            detail::check(MPI_Recv(&answer, 1, MPI_INT64_T, 0, detail::ping_tag, comm, MPI_STATUS_IGNORE), "MPI_Recv");
            const std::int64_t t1 = now();
            if (t1 - t0 < best_round_trip) {
                best_round_trip = t1 - t0;
                const std::int64_t middle = t0 + (t1 - t0) / 2;
                best = {middle, answer - middle, (t1 - t0 + 1) / 2};
            }
        }
    }
    return best;
}

job::job(MPI_Comm comm, job_options options) : comm_(comm), options_(options) {
    detail::check(MPI_Comm_rank(comm_, &rank_), "MPI_Comm_rank");
    detail::check(MPI_Comm_size(comm_, &size_), "MPI_Comm_size");
    set_distributed_info({.rank = rank_, .world_size = size_, .backend = "mpi"});
}

std::string job::align_to_root(const clock_sample& last, const event_list& events) {
    std::int64_t root[2] = {events.base_time_ns(), events.base_steady_ns()};
    detail::check(MPI_Bcast(root, 2, MPI_INT64_T, 0, comm_), "MPI_Bcast");
    root_base_time_ns_ = root[0];
    alignment_ = align(first_, last, events.base_steady_ns(), root[1]);
    clock_offset_ns_ = root_base_time_ns_ + alignment_.offset_ns - events.base_time_ns();
    // In this rank's own trace, wall time tau = baseTimeNanoseconds + ts (ns) is rank 0's
    // tau + clock_offset_ns + drift * (tau - clock_reference_ns): what stint-merge applies.
    return fmt::format("{{\"backend\": \"mpi\", \"rank\": {}, \"world_size\": {}, \"clock_offset_ns\": {}, "
                       "\"clock_error_ns\": {}, \"clock_drift_ppb\": {:.3f}, \"clock_reference_ns\": {}}}",
                       rank_, size_, clock_offset_ns_,
                       alignment_.error_ns, alignment_.drift * 1e9, events.base_time_ns() + alignment_.reference_ns);
}

void job::export_job_trace(const event_list& window_events, std::uint64_t truncated_names,
                           const std::string& path) const {
    event_list events = window_events;
    events.retime(alignment_.offset_ns, alignment_.drift, alignment_.reference_ns, root_base_time_ns_);
    stint::detail::chrome_trace_info info;
    info.pid = static_cast<std::uint64_t>(rank_);
    info.truncated_names = truncated_names;
    info.process_name = fmt::format("rank {}", rank_);
    info.sort_index = rank_;
    info.device_pid_base = 1'000'000 + 1'000 * static_cast<std::uint64_t>(rank_);
    info.flow_id_base = static_cast<std::uint64_t>(rank_) << 40;

    // This rank's summary: its counts and clock, as rank 0 lists them.
    const std::string summary = detail::written([&](stint::detail::json_writer& out) {
        out.raw("{\"rank\": ");
        out.number(rank_);
        out.raw(", \"os_pid\": ");
        out.number(stint::detail::current_pid());
        out.raw(", \"shift_ns\": ");  // what moved its times onto rank 0's: t + shift + drift (t - ref)
        out.number(alignment_.offset_ns);
        out.raw(", \"clock_error_ns\": ");
        out.number(alignment_.error_ns);
        out.raw(", \"clock_drift_ppb\": ");
        out.number(alignment_.drift * 1e9);
        out.raw(", \"stint\": ");
        stint::detail::write_stint_block(out, stint::detail::chrome_trace_head::of(events), info);
        out.raw("}");
    });
    std::uint64_t counts[3] = {events.recorded(), events.dropped(), events.late()};
    std::uint64_t totals[3] = {};
    detail::check(MPI_Reduce(counts, totals, 3, MPI_UINT64_T, MPI_SUM, 0, comm_), "MPI_Reduce");
    std::int64_t worst_error = 0;
    detail::check(MPI_Reduce(&alignment_.error_ns, &worst_error, 1, MPI_INT64_T, MPI_MAX, 0, comm_), "MPI_Reduce");

    std::unique_ptr<stint::detail::output_file> file;
    std::string failure;
    if (rank_ == 0) {
        try {
            file = std::make_unique<stint::detail::output_file>(path);
        } catch (const std::exception& e) {
            failure = fmt::format("stint: mpi::job::export_chrome_trace(): {}", e.what());
        }
    }
    detail::agree(comm_, rank_, failure);
    if (rank_ != 0) {
        detail::send_text(comm_, 0, summary);
        detail::send_text(comm_, 0, detail::written([&](stint::detail::json_writer& out) {
                              stint::detail::write_trace_events(out, events, info, false);
                          }));
        detail::agree(comm_, rank_, "");
        return;
    }
    detail::agree(comm_, rank_, write_job_trace(*file, events, info, summary, totals, worst_error));
}

std::string job::write_job_trace(stint::detail::output_file& file, const event_list& events,
                                 const stint::detail::chrome_trace_info& info, const std::string& own_summary,
                                 const std::uint64_t (&totals)[3], std::int64_t worst_error) const {
    // Every rank sends its summary, then its events. The summaries are read first, for the head;
    // then one rank's events at a time, each written out before the next is received.
    std::vector<std::string> summaries{own_summary};
    for (int peer = 1; peer < size_; ++peer) summaries.push_back(detail::receive_text(comm_, peer));
    std::string failure;
    const auto attempt = [&](auto&& write) {
        if (!failure.empty()) return;
        try {
            write();
        } catch (const std::exception& e) {
            failure = fmt::format("stint: mpi::job::export_chrome_trace(): {}", e.what());
            file.abandon();
        }
    };
    stint::detail::json_writer out(file);
    attempt([&] {
        out.raw("{\n  \"schemaVersion\": 1,\n  \"deviceProperties\": [");
        stint::detail::write_device_properties(out, events.device().devices);
        out.raw("],\n  \"distributedInfo\": {\"backend\": \"mpi\", \"rank\": 0, \"world_size\": ");
        out.number(size_);
        out.raw(", \"clock_error_ns\": ");
        out.number(worst_error);
        out.raw("},\n  \"stint\": {\"version\": \"" STINT_VERSION_STRING "\", \"job\": true, \"recorded\": ");
        out.number(totals[0]);
        out.raw(", \"dropped\": ");
        out.number(totals[1]);
        out.raw(", \"late\": ");
        out.number(totals[2]);
        out.raw(", \"ranks\": [");
        for (std::size_t i = 0; i < summaries.size(); ++i) {
            out.raw(i == 0 ? "\n    " : ",\n    ");
            out.raw(summaries[i]);
        }
        out.raw("\n  ]},\n  \"traceEvents\": [");
        stint::detail::write_trace_events(out, events, info, true);
    });
    for (int peer = 1; peer < size_; ++peer) {
        const std::string rank_events = detail::receive_text(comm_, peer);
        attempt([&] { out.raw(rank_events); });
    }
    attempt([&] {
        stint::detail::write_trace_end(out, events.base_time_ns());
        file.commit();
    });
    return failure;
}

}  // namespace stint::mpi
