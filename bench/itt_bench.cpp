// What stint::emit_itt costs a recorded op with no ITT collector (INTEL_LIBITTNOTIFY64 unset, as outside
// VTune): each push and pop is then one load of a process-wide flag and a branch. Same shape as
// nvtx_bench.cpp, with its own timing-only baseline from the same run.
#include <benchmark/benchmark.h>

#include <cstddef>
#include <cstdlib>
#include <memory>

#include <stint/annotations/itt.hpp>
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
using mirrored = stint::config<stint::emit_itt>;

void itt_timing_only_scope(benchmark::State& state) {
    recording<timing_only> session;
    for (auto _ : state) {
        STINT_OP(timing_only, "bench", 0);
        benchmark::ClobberMemory();
    }
}
BENCHMARK(itt_timing_only_scope)->Iterations(iterations);

void itt_mirrored_scope_no_collector(benchmark::State& state) {
    if (const char* collector = std::getenv("INTEL_LIBITTNOTIFY64"); collector != nullptr && *collector != '\0') {
        state.SkipWithError("INTEL_LIBITTNOTIFY64 is set: this row measures a run without a collector");
        return;
    }
    recording<mirrored> session;
    for (auto _ : state) {
        STINT_OP(mirrored, "bench", 0);
        benchmark::ClobberMemory();
    }
}
BENCHMARK(itt_mirrored_scope_no_collector)->Iterations(iterations);

}  // namespace

BENCHMARK_MAIN();
