// Reading and analysing a large Kineto-shaped Chrome trace (analysis/trace_analysis.hpp), for bench/run:
//
//     trace_analysis_bench generate PATH BYTES   # writes a trace of about BYTES bytes
//     trace_analysis_bench analyse PATH          # reads it once, runs every analysis, prints JSON
//
// `analyse` runs in a fresh process, so its peak RSS (getrusage) is the reader's and the analyses' own.
// Not a Google Benchmark: one pass over a 1 GB file is the measurement.

#include <chrono>     // std::chrono::steady_clock
#include <cstdint>    // std::int64_t, std::uint64_t
#include <cstdio>     // std::FILE, std::fopen, std::fwrite, std::fclose
#include <cstdlib>    // std::strtoull
#include <string>     // std::string
#include <string_view>

#include <fmt/format.h>
#include <sys/resource.h>

#include "stint/analysis/trace_analysis.hpp"
#include "stint/analysis/trace_diff.hpp"

namespace {

// One step of a training loop as Kineto writes it: ops with their args, launches, kernels, flows.
int generate(const char* path, std::uint64_t bytes) {
    std::FILE* f = std::fopen(path, "wb");
    if (f == nullptr) return 1;
    std::string out = R"({"schemaVersion": 1, "distributedInfo": {"backend": "nccl", "rank": 0, "world_size": 8},)"
                      "\n\"traceEvents\": [\n";
    std::uint64_t written = 0;
    std::int64_t ts_ns = 1695835535000000000;
    std::uint64_t correlation = 1;
    std::uint64_t n = 0;
    static constexpr const char* ops[] = {"aten::linear", "aten::addmm", "aten::relu", "aten::layer_norm",
                                          "aten::softmax", "aten::copy_", "aten::add", "aten::mul"};
    static constexpr const char* kernels[] = {
        "ampere_sgemm_128x64_tn", "void at::native::vectorized_elementwise_kernel<4, at::native::AddFunctor<float>>",
        "ncclKernel_AllReduce_RING_LL_Sum_float", "void at::native::(anonymous namespace)::softmax_warp_forward",
        "Memcpy HtoD (Pageable -> Device)"};
    bool first = true;
    while (written + out.size() < bytes) {
        const std::uint64_t i = n++;
        const char* op = ops[i % 8];
        const std::int64_t op_start = ts_ns;
        const std::int64_t launch_start = op_start + 2'345;
        const std::int64_t kernel_start = op_start + 9'876 + static_cast<std::int64_t>(i % 7) * 1'000;
        const auto us = [](std::int64_t ns) { return fmt::format("{}.{:03}", ns / 1000, ns % 1000); };
        const char* kernel = kernels[i % 5];
        const bool copy = i % 5 == 4;
        if (!first) out += ",\n";
        first = false;
        out += fmt::format(
            R"(  {{"ph": "X", "cat": "cpu_op", "name": "{}", "pid": 2868211, "tid": 2868211, "ts": {}, "dur": 12.345, )"
            R"("args": {{"External id": {}, "Sequence number": {}, "Fwd thread id": 0, "Record function id": 0, )"
            R"("Input Dims": [[64, 1024], [1024, 1024], [1024]], "Input type": ["float", "float", "float"], )"
            R"("Input Strides": [[1024, 1], [1024, 1], [1]], "Concrete Inputs": ["", "", ""], "Ev Idx": {}}}}},)"
            "\n",
            op, us(op_start), i, i, i);
        out += fmt::format(
            R"(  {{"ph": "X", "cat": "cuda_runtime", "name": "{}", "pid": 2868211, "tid": 2868211, "ts": {}, "dur": 4.321, )"
            R"("args": {{"External id": {}, "cbid": 211, "correlation": {}}}}},)"
            "\n",
            copy ? "cudaMemcpyAsync" : "cudaLaunchKernel", us(launch_start), i, correlation);
        out += fmt::format(
            R"(  {{"ph": "X", "cat": "{}", "name": "{}", "pid": 0, "tid": {}, "ts": {}, "dur": {}, )"
            R"("args": {{"External id": {}, "queued": 0, "device": 0, "context": 1, "stream": {}, "correlation": {}, )"
            R"("registers per thread": 128, "shared memory": 16384, "blocks per SM": 1.185185, "warps per SM": 9.481482, )"
            R"("grid": [128, 1, 1], "block": [256, 1, 1], "est. achieved occupancy %": 15}}}},)"
            "\n",
            copy ? "gpu_memcpy" : "kernel", kernel, i % 5 == 2 ? 20 : 7, us(kernel_start), us(5'000 + (i % 11) * 700), i,
            i % 5 == 2 ? 20 : 7, correlation);
        out += fmt::format(R"(  {{"ph": "s", "id": {}, "pid": 2868211, "tid": 2868211, "ts": {}, "cat": "ac2g", "name": "ac2g"}},)"
                           "\n"
                           R"(  {{"ph": "f", "id": {}, "pid": 0, "tid": 7, "ts": {}, "cat": "ac2g", "name": "ac2g", "bp": "e"}})",
                           correlation, us(launch_start), correlation, us(kernel_start));
        ++correlation;
        ts_ns += 15'000;
        if (out.size() > (1U << 20)) {
            written += std::fwrite(out.data(), 1, out.size(), f);
            out.clear();
        }
    }
    out += "\n]}\n";
    written += std::fwrite(out.data(), 1, out.size(), f);
    std::fclose(f);
    fmt::print("{{\"bytes\": {}, \"steps\": {}}}\n", written, n);
    return 0;
}

int analyse(const char* path) {
    const auto start = std::chrono::steady_clock::now();
    const auto profile = stint::trace_profile::from_file(path);
    const auto devices = profile.breakdown();
    const auto idle = profile.idle_time();
    const auto kernels = profile.kernels(10);
    const auto launches = profile.launches();
    const auto queues = profile.queue_lengths();
    const auto ops = profile.op_stats();
    const auto diff = stint::diff_ops(ops, ops);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    rusage usage{};
    getrusage(RUSAGE_SELF, &usage);
    // CPU time, as bench/run's other rows: a busy machine stretches the wall time, not the work.
    const auto cpu_seconds = [](const timeval& t) { return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) / 1e6; };
    const double cpu = cpu_seconds(usage.ru_utime) + cpu_seconds(usage.ru_stime);
    const std::uint64_t bytes = profile.read_stats().bytes;
    fmt::print(R"({{"bytes": {}, "events": {}, "seconds": {:.3f}, "cpu_seconds": {:.3f}, "mb_per_s": {:.1f}, "peak_rss_bytes": {}, )"
               R"("devices": {}, "idle_pct": {:.2f}, "streams": {}, "kernel_rows": {}, "launches": {}, "queues": {}, )"
               R"("ops": {}, "diff_rows": {}}})"
               "\n",
               bytes, profile.read_stats().events, seconds, cpu, static_cast<double>(bytes) / 1e6 / cpu,
               static_cast<std::uint64_t>(usage.ru_maxrss) * 1024, devices.size(),
               devices.empty() ? 0.0 : devices[0].percent(devices[0].idle_ns), idle.size(), kernels.size(),
               launches.matched, queues.size(), ops.size(), diff.size());
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc == 4 && std::string_view(argv[1]) == "generate") return generate(argv[2], std::strtoull(argv[3], nullptr, 10));
    if (argc == 3 && std::string_view(argv[1]) == "analyse") return analyse(argv[2]);
    fmt::print(stderr, "usage: trace_analysis_bench generate PATH BYTES | analyse PATH\n");
    return 2;
}
