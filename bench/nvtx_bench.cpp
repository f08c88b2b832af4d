// What stint::emit_nvtx costs a recorded scope with no NVTX tool attached (issue 19: <= 1.1 x a
// timing-only scope in the same run): each push and pop is then one load of a flag and a branch.
#include <benchmark/benchmark.h>

#include <cstddef>
#include <memory>

#include <stint/annotations/nvtx.hpp>
#include <stint/stint.hpp>

namespace {

constexpr benchmark::IterationCount iterations = 2'000'000;

template <class Config>
class recording {
public:
    recording() {
        stint::profiler_options<Config> options;
        options.buffer_budget_bytes = std::size_t{1} << 30;
        options.reserve_buffer_bytes = static_cast<std::size_t>(iterations) * 48 + (std::size_t{128} << 10);
        profiler_ = std::make_unique<stint::profiler<Config>>(options);
        profiler_->start();
    }
    ~recording() { profiler_->stop(); }
    recording(const recording&) = delete;
    recording& operator=(const recording&) = delete;

private:
    std::unique_ptr<stint::profiler<Config>> profiler_;
};

using timing_only = stint::config<>;
using mirrored = stint::config<stint::emit_nvtx>;

void nvtx_timing_only_scope(benchmark::State& state) {
    recording<timing_only> session;
    for (auto _ : state) {
        STINT_OP(timing_only, "bench", 0);
        benchmark::ClobberMemory();
    }
}
BENCHMARK(nvtx_timing_only_scope)->Iterations(iterations);

void nvtx_mirrored_scope_no_tool(benchmark::State& state) {
    recording<mirrored> session;
    for (auto _ : state) {
        STINT_OP(mirrored, "bench", 0);
        benchmark::ClobberMemory();
    }
}
BENCHMARK(nvtx_mirrored_scope_no_tool)->Iterations(iterations);

}  // namespace

BENCHMARK_MAIN();
