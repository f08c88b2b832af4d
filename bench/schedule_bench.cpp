// Cost of profiler::step(): disabled, in a wait step, in a record step (closing and opening the
// ProfilerStep#N annotation), and at the end of a one-step window (drain, build, on_trace_ready,
// reopen). All include the step tracker's increment.
#include <benchmark/benchmark.h>

#include <cstdint>

#include <stint/stint.hpp>

namespace {

void step_disabled(benchmark::State& state) {
    stint::profiler<> prof({.schedule = stint::schedule({.wait = 1, .active = 1}), .enabled = false});
    for (auto _ : state) prof.step();
}
BENCHMARK(step_disabled);

void step_wait(benchmark::State& state) {
    stint::profiler<> prof({.schedule = [](std::int64_t) { return stint::profiler_action::none; }});
    for (auto _ : state) prof.step();
}
BENCHMARK(step_wait);

void step_record(benchmark::State& state) {
    stint::profiler<> prof({.schedule = [](std::int64_t) { return stint::profiler_action::record; }});
    prof.start();
    for (auto _ : state) prof.step();
    prof.stop();  // after the timed loop
}
BENCHMARK(step_record);

void step_saving_one_step_windows(benchmark::State& state) {
    std::int64_t windows = 0;
    stint::profiler<> prof({
        .schedule = [](std::int64_t) { return stint::profiler_action::record_and_save; },
        .on_trace_ready = [&](stint::profiler<>& p) { windows += static_cast<std::int64_t>(p.events().size()); },
    });
    prof.start();
    for (auto _ : state) {
        {
            STINT_SCOPE("work");
        }
        prof.step();
    }
    prof.stop();
    benchmark::DoNotOptimize(windows);
}
BENCHMARK(step_saving_one_step_windows);

}  // namespace

BENCHMARK_MAIN();
