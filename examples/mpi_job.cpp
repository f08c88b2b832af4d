// An MPI job profiled as one: each rank computes for a time of its own, then all meet at a barrier,
// five times. Every rank writes its own trace (rank<N>.pt.trace.json, with its clock offset to rank 0)
// and rank 0 writes the whole job's (job.pt.trace.json), one process per rank on one timeline.
//
//     mpirun -np 4 ./mpi_job [output directory, made if missing]   (as root: --allow-run-as-root;
//                                                                  fewer cores than ranks: --oversubscribe)
//     tools/stint-merge out/rank*.pt.trace.json -o merged.json   # the same from the per-rank files

#include <mpi.h>

#include <chrono>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <system_error>
#include <string>

#include <fmt/format.h>

#include "stint/distributed/mpi.hpp"
#include "stint/stint.hpp"

namespace {

void compute(std::chrono::microseconds span) {
    const auto until = std::chrono::steady_clock::now() + span;
    while (std::chrono::steady_clock::now() < until) {
    }
}

}  // namespace

int main(int argc, char** argv) {
    MPI_Init(&argc, &argv);
    int status = 0;
    try {
        const std::string dir = argc > 1 ? argv[1] : ".";
        std::error_code ignored;  // made by whichever rank comes first; a real failure shows at export
        std::filesystem::create_directories(dir, ignored);
        stint::profiler<> prof;
        stint::mpi::job job(MPI_COMM_WORLD);
        job.start(prof);
        for (int phase = 0; phase < 5; ++phase) {
            STINT_SCOPE("phase");
            {
                // Unequal work: the later ranks arrive at the barrier later, and the others wait.
                STINT_SCOPE("compute");
                compute(std::chrono::microseconds(2'000 * (job.rank() + 1)));
            }
            {
                STINT_SCOPE("barrier");
                MPI_Barrier(MPI_COMM_WORLD);
            }
        }
        job.stop(prof);
        prof.export_chrome_trace(fmt::format("{}/rank{}.pt.trace.json", dir, job.rank()));
        job.export_chrome_trace(prof, dir + "/job.pt.trace.json");
        if (job.rank() == 0) {
            fmt::print("{}\n", prof.key_averages().table({.sort_by = "cpu_time_total", .row_limit = 5}));
            fmt::print("wrote {}/job.pt.trace.json and one rank<N>.pt.trace.json per rank\n", dir);
        }
        const stint::mpi::clock_alignment& a = job.alignment();
        // The trace's clock_offset_ns: wall time to rank 0's (alignment().offset_ns is between the
        // traces' own origins, and differs by their base times).
        fmt::print("rank {}: clock_offset_ns {}, clock_error_ns {}, clock_drift_ppb {:.1f}\n", job.rank(),
                   job.clock_offset_ns(), a.error_ns, a.drift * 1e9);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "%s\n", e.what());
        status = 1;
    }
    MPI_Finalize();
    return status;
}
