// Cost of what a framework embeds, beside STINT_SCOPE measured in the same run: STINT_REGION (its
// counters are always on), STINT_SCOPE_DYNAMIC (a cached name per type) and compiled_region (a
// per-thread cache of names), without a session and recording timing-only into reserved buffers.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <memory>
#include <string_view>

#include <stint/stint.hpp>

namespace {

constexpr benchmark::IterationCount recorded_iterations = 2'000'000;

struct bench_kind {
    static constexpr std::string_view label = "bench";
};

/// A session around the timed loop, with buffers for every record reserved (faulted in) first.
class bench_session {
public:
    explicit bench_session(benchmark::State& state) {
        profiler_ = std::make_unique<stint::profiler<>>(stint::profiler_options<>{
            .buffer_budget_bytes = std::size_t{8} << 30,
            .reserve_buffer_bytes = static_cast<std::size_t>(state.max_iterations) * 48 + (std::size_t{128} << 10),
        });
        profiler_->start();
    }
    ~bench_session() { profiler_->stop(); }
    bench_session(const bench_session&) = delete;
    bench_session& operator=(const bench_session&) = delete;

private:
    std::unique_ptr<stint::profiler<>> profiler_;
};

class module_base {
public:
    virtual ~module_base() = default;
    void forward() { STINT_SCOPE_DYNAMIC("Module.forward", "forward", *this); }
};
class linear : public module_base {};
class conv : public module_base {};

void scope_no_session(benchmark::State& state) {
    for (auto _ : state) {
        STINT_SCOPE("bench");
        benchmark::ClobberMemory();
    }
}
BENCHMARK(scope_no_session);

void region_no_session(benchmark::State& state) {
    for (auto _ : state) {
        STINT_REGION(bench_kind, "bench");
        benchmark::ClobberMemory();
    }
}
BENCHMARK(region_no_session);

void dynamic_scope_no_session(benchmark::State& state) {
    linear l;
    module_base* m = &l;
    benchmark::DoNotOptimize(m);
    for (auto _ : state) {
        m->forward();
        benchmark::ClobberMemory();
    }
}
BENCHMARK(dynamic_scope_no_session);

void scope_timing_only(benchmark::State& state) {
    bench_session session(state);
    for (auto _ : state) {
        STINT_SCOPE("bench");
        benchmark::ClobberMemory();
    }
}
BENCHMARK(scope_timing_only)->Iterations(recorded_iterations);

void region_timing_only(benchmark::State& state) {
    bench_session session(state);
    for (auto _ : state) {
        STINT_REGION(bench_kind, "bench");
        benchmark::ClobberMemory();
    }
}
BENCHMARK(region_timing_only)->Iterations(recorded_iterations);

// Two types called in turn at one site: both are found in the site's cache.
void dynamic_scope_timing_only(benchmark::State& state) {
    linear l;
    conv c;
    module_base* modules[2] = {&l, &c};
    benchmark::DoNotOptimize(modules);
    std::uint32_t i = 0;
    bench_session session(state);
    for (auto _ : state) {
        modules[i++ & 1]->forward();
        benchmark::ClobberMemory();
    }
}
BENCHMARK(dynamic_scope_timing_only)->Iterations(recorded_iterations);

void compiled_region_timing_only(benchmark::State& state) {
    std::uint32_t i = 0;
    bench_session session(state);
    for (auto _ : state) {
        stint::compiled_region region(i++ & 3, 0);
        benchmark::ClobberMemory();
    }
}
BENCHMARK(compiled_region_timing_only)->Iterations(recorded_iterations);

}  // namespace

BENCHMARK_MAIN();
