#pragma once
// One trace of a whole MPI job on one clock. Included only by programs that have MPI (the core never
// includes <mpi.h>): each rank's steady clock is compared with rank 0's by ping-pong at the session's
// start and stop (the minimum round trip wins, as in Cristian's algorithm; half of it bounds the
// error), each rank's trace records the offset, and rank 0 can write every rank's events into one
// file, each rank a process of its own on rank 0's timeline.
//
//     stint::profiler<> prof;
//     stint::mpi::job job(MPI_COMM_WORLD);
//     job.start(prof);                      // collective
//     ...                                   // the job's work, recorded on every rank
//     job.stop(prof);                       // collective
//     prof.export_chrome_trace(fmt::format("rank{}.pt.trace.json", job.rank()));  // with the offset
//     job.export_chrome_trace(prof, "job.pt.trace.json");                        // rank 0 writes it

#include <mpi.h>  // MPI_Comm

#include <cstddef>      // std::size_t
#include <cstdint>      // std::int64_t, std::uint64_t
#include <stdexcept>    // std::logic_error
#include <string>       // std::string
#include <string_view>  // std::string_view

#include "stint/analysis/event_list.hpp"
#include "stint/distributed/clock_alignment.hpp"
#include "stint/export/chrome_trace.hpp"
#include "stint/export/output_file.hpp"

namespace stint::mpi {

struct job_options {
    /// Ping-pong rounds per rank and sample; the round with the shortest round trip is kept.
    int rounds = 32;
};

namespace detail {

inline void check(int code, const char* what);

constexpr int ping_tag = 0x5717;
constexpr int text_tag = 0x5718;
// MPI counts are ints: texts travel in pieces of at most 1 GiB.
constexpr std::size_t max_piece = std::size_t{1} << 30;

inline void send_text(MPI_Comm comm, int to, std::string_view text);

inline std::string receive_text(MPI_Comm comm, int from);

/// Every rank learns whether rank 0 succeeded; the others throw rank 0's message.
inline void agree(MPI_Comm comm, int rank, const std::string& failure);

}  // namespace detail

/// Compares every rank's steady clock with rank 0's: collective over `comm`. Rank 0
/// answers each other rank in turn; a rank sends its reading t0, rank 0 answers with its own, the
/// rank reads t1 on arrival. Rank 0's reading was taken between t0 and t1, so the offset is
/// answer - (t0 + t1) / 2 within (t1 - t0) / 2. Rank 0 gets {now, 0, 0}.
inline clock_sample measure_clock(MPI_Comm comm, int rounds = 32);

/// A profiling session across the ranks of an MPI communicator. Every call but rank() and
/// alignment() is collective: each rank of the communicator makes it, in the same order.
class job {
public:
    /// Tells stint this process's rank (the traces' "distributedInfo", backend "mpi").
    inline explicit job(MPI_Comm comm, job_options options = {});

    [[nodiscard]] int rank() const noexcept { return rank_; }
    [[nodiscard]] int size() const noexcept { return size_; }

    /// Starts `prof` on every rank, then compares the clocks.
    template <class Profiler>
    void start(Profiler& prof) {
        prof.start();
        first_ = measure_clock(comm_, options_.rounds);
    }

    /// Compares the clocks again, stops `prof`, and records this rank's alignment in its traces'
    /// "distributedInfo" (clock_offset_ns, clock_error_ns, clock_drift_ppb, clock_reference_ns).
    template <class Profiler>
    void stop(Profiler& prof) {
        const clock_sample last = measure_clock(comm_, options_.rounds);
        prof.stop();
        prof.add_metadata_json("distributedInfo", align_to_root(last, prof.events()));
        stopped_ = true;
    }

    /// This rank's map onto rank 0's time (after stop()).
    [[nodiscard]] const clock_alignment& alignment() const noexcept { return alignment_; }

    /// After stop(): the trace's "clock_offset_ns", the offset of wall times (baseTimeNanoseconds + ts)
    /// to rank 0's. alignment().offset_ns differs from it by the two traces' base times: it maps times
    /// since each trace's own origin.
    [[nodiscard]] std::int64_t clock_offset_ns() const noexcept { return clock_offset_ns_; }

    /// Writes every rank's events of the last window into one Chrome trace at `path` on rank 0 (gzip
    /// when it ends in ".gz"): one process per rank (pid = rank, named "rank N"), each rank's devices
    /// on pids of their own (1000000 + 1000 rank + device), flow ids in ranges of their own, all on
    /// rank 0's timeline; the "stint" block sums the ranks' counts and lists each rank's, with the
    /// shift that moved its times and its error bound. Throws on every rank when rank 0 cannot write
    /// the file (each rank's own trace can still be exported).
    template <class Profiler>
    void export_chrome_trace(const Profiler& prof, const std::string& path) const {
        if (!stopped_) throw std::logic_error("stint: mpi::job::export_chrome_trace() before stop()");
        export_job_trace(prof.events(), prof.stats().truncated_names, path);
    }

private:
    /// Compares this rank's clock samples with rank 0's time origin (collective) and returns the
    /// "distributedInfo" of this rank's traces, with its alignment.
    inline std::string align_to_root(const clock_sample& last, const event_list& events);

    /// Writes every rank's events into one trace on rank 0 (export_chrome_trace's work: collective).
    inline void export_job_trace(const event_list& window_events, std::uint64_t truncated_names,
                                     const std::string& path) const;

    /// Rank 0: receives every rank's summary and events and writes them; returns what failed ("" when
    /// nothing did). It keeps receiving after a failure, so no rank waits forever on a send.
    inline std::string write_job_trace(stint::detail::output_file& file, const event_list& events,
                                           const stint::detail::chrome_trace_info& info, const std::string& own_summary,
                                           const std::uint64_t (&totals)[3], std::int64_t worst_error) const;

    MPI_Comm comm_;
    job_options options_;
    int rank_ = 0;
    int size_ = 1;
    clock_sample first_{};
    clock_alignment alignment_{};
    std::int64_t root_base_time_ns_ = 0;
    std::int64_t clock_offset_ns_ = 0;  // the trace's clock_offset_ns (stop())
    bool stopped_ = false;
};

}  // namespace stint::mpi

// Always inline, in either build: the glue needs <mpi.h>, so it is compiled in the MPI program's own
// files, never in <stint/impl/src.hpp>, which builds without MPI (design §16).
#include "stint/distributed/impl/mpi.ipp"
