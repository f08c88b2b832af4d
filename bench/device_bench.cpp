// What stint::cuda_activities adds to an op on the CPU, in one run beside the timing-only op:
// compiled in with no device session (the policy's promise: nothing), and with a device session
// live, where each op pushes and pops an external correlation id and appends a link record. CUPTI's
// own push and pop are replaced by no-op functions (the tests' injectable table), so the figure is
// stint's part alone; tests/gpu/smoke_test.cpp measures a whole launch on a GPU.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <memory>

#include "cupti_fake.hpp"

namespace {

using gpu = stint::config<stint::cuda_activities>;
constexpr benchmark::IterationCount iterations = 2'000'000;

// One single-threaded session with its buffers reserved before the timed loop (as scope_bench's).
template <class Config>
class session {
public:
    session(benchmark::State& state, stint::activity_set activities, std::size_t record_bytes) : state_(state) {
        stint::profiler_options<Config> options;
        options.activities = activities;
        options.sync_device_on_stop = false;
        options.buffer_budget_bytes = std::size_t{8} << 30;
        options.reserve_buffer_bytes =
            static_cast<std::size_t>(state.max_iterations) * record_bytes + (std::size_t{128} << 10);
        profiler_ = std::make_unique<stint::profiler<Config>>(options);
        profiler_->start();
    }
    ~session() {
        profiler_->stop();
        state_.counters["dropped"] = static_cast<double>(profiler_->stats().dropped);
        state_.counters["events"] = static_cast<double>(profiler_->events().size());
    }
    session(const session&) = delete;
    session& operator=(const session&) = delete;

private:
    benchmark::State& state_;
    std::unique_ptr<stint::profiler<Config>> profiler_;
};

void device_op_timing_only(benchmark::State& state) {
    session<stint::config<>> s(state, {stint::activity::cpu}, 48);
    for (auto _ : state) {
        STINT_OP(stint::config<>, "aten::mm");
        benchmark::ClobberMemory();
    }
}
BENCHMARK(device_op_timing_only)->Iterations(iterations);

void device_op_policy_cpu_session(benchmark::State& state) {
    session<gpu> s(state, {stint::activity::cpu}, 48);
    for (auto _ : state) {
        STINT_OP(gpu, "aten::mm");
        benchmark::ClobberMemory();
    }
}
BENCHMARK(device_op_policy_cpu_session)->Iterations(iterations);

void device_op_live_device_session(benchmark::State& state) {
    stint_test::use_fake_cupti();
    auto table = stint_test::fake_table();
    table.push_external_id = [](CUpti_ExternalCorrelationKind, std::uint64_t) { return CUPTI_SUCCESS; };
    table.pop_external_id = [](CUpti_ExternalCorrelationKind, std::uint64_t*) { return CUPTI_SUCCESS; };
    stint::detail::the_cupti_collector().use_table_for_tests(table, std::nullopt, "no-op table");
    {
        session<gpu> s(state, {stint::activity::cpu, stint::activity::cuda}, 96);  // the op's record and its link
        for (auto _ : state) {
            STINT_OP(gpu, "aten::mm");
            benchmark::ClobberMemory();
        }
    }
    stint::detail::the_cupti_collector().stop_using_test_table();
}
BENCHMARK(device_op_live_device_session)->Iterations(iterations);

}  // namespace

BENCHMARK_MAIN();
