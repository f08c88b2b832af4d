// Hot-path cost: ns per scope with no session, with a timing-only session, and the ideal recorder
// (two tick reads + a 24-byte thread-local store into a preallocated array), measured in one run so
// their ratios are honest on a shared machine.
#include <benchmark/benchmark.h>

#include <array>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <stint/stint.hpp>

namespace {

struct ideal_record {
    const void* site;
    std::uint64_t begin;
    std::uint64_t end;
};
static_assert(sizeof(ideal_record) == 24);

constexpr std::size_t ideal_capacity = std::size_t{1} << 22;  // wraps: the store, not the memory, is measured
thread_local std::unique_ptr<ideal_record[]> ideal_storage;
thread_local std::size_t ideal_cursor = 0;

void baseline_empty_loop(benchmark::State& state) {
    for (auto _ : state) benchmark::ClobberMemory();
}
BENCHMARK(baseline_empty_loop);

void baseline_two_tick_reads(benchmark::State& state) {
    for (auto _ : state) {
        std::uint64_t a = stint::read_ticks();
        std::uint64_t b = stint::read_ticks();
        benchmark::DoNotOptimize(a);
        benchmark::DoNotOptimize(b);
    }
}
BENCHMARK(baseline_two_tick_reads)->ThreadRange(1, 2);

void baseline_two_steady_clock_reads(benchmark::State& state) {
    for (auto _ : state) {
        auto a = std::chrono::steady_clock::now();
        auto b = std::chrono::steady_clock::now();
        benchmark::DoNotOptimize(a);
        benchmark::DoNotOptimize(b);
    }
}
BENCHMARK(baseline_two_steady_clock_reads);

void baseline_ideal_recorder(benchmark::State& state) {
    if (!ideal_storage) ideal_storage = std::make_unique<ideal_record[]>(ideal_capacity);
    static constexpr int site = 0;
    for (auto _ : state) {
        const std::uint64_t begin = stint::read_ticks();
        benchmark::ClobberMemory();
        const std::uint64_t end = stint::read_ticks();
        ideal_storage[ideal_cursor] = {&site, begin, end};
        ideal_cursor = (ideal_cursor + 1) & (ideal_capacity - 1);
        benchmark::ClobberMemory();
    }
}
BENCHMARK(baseline_ideal_recorder)->ThreadRange(1, 2);

void stint_scope_no_session(benchmark::State& state) {
    for (auto _ : state) {
        STINT_SCOPE("bench");
        benchmark::ClobberMemory();
    }
}
BENCHMARK(stint_scope_no_session);

// Recording: one session per benchmark run, with a budget large enough for every iteration.
void stint_scope_timing_only(benchmark::State& state) {
    static stint::profiler<>* prof = nullptr;
    if (state.thread_index() == 0) {
        prof = new stint::profiler<>({.buffer_budget_bytes = std::size_t{8} << 30});
        prof->start();
    }
    for (auto _ : state) {
        STINT_SCOPE("bench");
        benchmark::ClobberMemory();
    }
    if (state.thread_index() == 0) {
        prof->stop();
        state.counters["dropped"] = static_cast<double>(prof->stats().dropped);
        delete prof;
    }
}
BENCHMARK(stint_scope_timing_only)->ThreadRange(1, 2);

// Ops: timing-only (the inputs are never evaluated; the same cost as a scope) and record_shapes with
// three rank-2 tensors (design §6: <= 3x timing-only). A fixed 65536 iterations per session keeps
// every record (160 bytes with shapes) within the chunks the pool keeps warm between sessions, so
// after the first repetition neither row pays page faults: run with --benchmark_repetitions and
// compare the minimums.
struct bench_tensor {
    std::vector<std::int64_t> dims;
    std::vector<std::int64_t> steps;
    std::string type = "float";
    const std::vector<std::int64_t>& sizes() const { return dims; }
    const std::vector<std::int64_t>& strides() const { return steps; }
    std::string_view dtype() const { return type; }
};

constexpr std::int64_t op_iterations = std::int64_t{1} << 16;

template <class Config, class Body>
void run_op_bench(benchmark::State& state, Body body, bench_tensor& a, bench_tensor& b, bench_tensor& c) {
    // The tensors escape, and ClobberMemory below makes every iteration read them again: the capture
    // cannot be folded into constants as it could for tensors the compiler sees through.
    benchmark::DoNotOptimize(a);
    benchmark::DoNotOptimize(b);
    benchmark::DoNotOptimize(c);
    stint::profiler<Config> prof({.buffer_budget_bytes = std::size_t{2} << 30});
    prof.start();
    for (auto _ : state) {
        body();
        benchmark::ClobberMemory();
    }
    prof.stop();  // after the loop: not timed
    state.counters["dropped"] = static_cast<double>(prof.stats().dropped);
}

void stint_op_timing_only(benchmark::State& state) {
    bench_tensor a{{64, 32}, {32, 1}}, b{{32, 16}, {16, 1}}, c{{64, 16}, {16, 1}};
    run_op_bench<stint::config<>>(state, [&] { STINT_OP(stint::config<>, "bench::op", a, b, c); }, a, b, c);
}
BENCHMARK(stint_op_timing_only)->Iterations(op_iterations);

using shapes_config = stint::config<stint::record_shapes>;

void stint_op_shapes_3x_rank2(benchmark::State& state) {
    bench_tensor a{{64, 32}, {32, 1}}, b{{32, 16}, {16, 1}}, c{{64, 16}, {16, 1}};
    run_op_bench<shapes_config>(state, [&] { STINT_OP(shapes_config, "bench::op", a, b, c); }, a, b, c);
}
BENCHMARK(stint_op_shapes_3x_rank2)->Iterations(op_iterations);

}  // namespace

BENCHMARK_MAIN();
