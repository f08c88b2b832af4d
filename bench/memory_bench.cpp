// What memory reporting (profile_memory) adds to an allocation, in one run beside its baselines: a
// malloc/free pair alone, the pair reported with no session live (one relaxed load per report), and
// reported into a live session, against a timing-only scope measured here too.
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <memory>

#include <stint/stint.hpp>

namespace {

using mem = stint::config<stint::profile_memory>;
constexpr benchmark::IterationCount iterations = 500'000;

// A single-threaded session with its buffers reserved before the timed loop.
template <class Config>
class session {
public:
    session(benchmark::State& state, std::size_t record_bytes) : state_(state) {
        stint::profiler_options<Config> options;
        options.buffer_budget_bytes = std::size_t{4} << 30;
        options.reserve_buffer_bytes =
            static_cast<std::size_t>(state.max_iterations) * record_bytes + (std::size_t{1} << 20);
        profiler_ = std::make_unique<stint::profiler<Config>>(options);
        profiler_->start();
    }
    ~session() {
        profiler_->stop();
        state_.counters["dropped"] = static_cast<double>(profiler_->stats().dropped);
        state_.counters["memory_events"] = static_cast<double>(profiler_->stats().memory_events);
    }
    session(const session&) = delete;
    session& operator=(const session&) = delete;

private:
    benchmark::State& state_;
    std::unique_ptr<stint::profiler<Config>> profiler_;
};

void memory_malloc_free(benchmark::State& state) {
    for (auto _ : state) {
        void* p = std::malloc(64);
        benchmark::DoNotOptimize(p);
        std::free(p);
    }
}
BENCHMARK(memory_malloc_free)->Iterations(iterations);

void memory_reported_no_session(benchmark::State& state) {
    for (auto _ : state) {
        void* p = std::malloc(64);
        benchmark::DoNotOptimize(p);
        stint::report_alloc(p, 64);
        stint::report_free(p);
        std::free(p);
    }
}
BENCHMARK(memory_reported_no_session)->Iterations(iterations);

void memory_reported_live(benchmark::State& state) {
    session<mem> s(state, 2 * 80 * 2);  // two 80-byte memory records per iteration, 2x headroom
    for (auto _ : state) {
        void* p = std::malloc(64);
        benchmark::DoNotOptimize(p);
        stint::report_alloc(p, 64);
        stint::report_free(p);
        std::free(p);
    }
}
BENCHMARK(memory_reported_live)->Iterations(iterations);

void memory_timing_only_scope(benchmark::State& state) {
    session<stint::config<>> s(state, 48);
    for (auto _ : state) {
        STINT_SCOPE("bench");
        benchmark::ClobberMemory();
    }
}
BENCHMARK(memory_timing_only_scope)->Iterations(iterations);

}  // namespace

BENCHMARK_MAIN();
