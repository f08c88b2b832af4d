// What an execution trace costs (issue 17), in one run beside its baselines: an op with record_shapes
// (three rank-2 tensors in, one out through STINT_OUTPUTS) in a profiler session, the same op while an
// execution trace records (tensor identities captured), and a timing-only op; then the drain and the
// ET write of 200 000 such ops: ops per second and file bytes per op.
#include <benchmark/benchmark.h>

#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include <stint/stint.hpp>

namespace {

constexpr benchmark::IterationCount iterations = 1'000'000;
constexpr std::int64_t written_ops = 200'000;

struct bench_tensor {
    std::array<std::int64_t, 2> dims;
    std::array<std::int64_t, 2> stride;
    const float* storage;
    const std::array<std::int64_t, 2>& sizes() const { return dims; }
    const std::array<std::int64_t, 2>& strides() const { return stride; }
    std::string_view dtype() const { return "float"; }
    const float* data() const { return storage; }
};

using shapes = stint::config<stint::record_shapes>;

std::string output_path(const char* name) {
    struct stat info {};
    const std::string dir = ::stat("/dev/shm", &info) == 0 ? "/dev/shm" : "/tmp";  // the writer, not the disk
    return dir + "/stint-bench-" + std::to_string(::getpid()) + "-" + name;
}

double file_bytes(const std::string& path) {
    struct stat info {};
    return ::stat(path.c_str(), &info) == 0 ? static_cast<double>(info.st_size) : 0.0;
}

// A single-threaded profiler session, buffers reserved before the timed loop, optionally with an
// execution trace attached (its file written when the session ends).
template <class Config>
class session {
public:
    session(benchmark::State& state, std::size_t record_bytes, bool execution_trace) : state_(state) {
        stint::profiler_options<Config> options;
        options.buffer_budget_bytes = std::size_t{4} << 30;
        options.reserve_buffer_bytes =
            static_cast<std::size_t>(state.max_iterations) * record_bytes + (std::size_t{1} << 20);
        if (execution_trace) {
            path_ = output_path("bench.et.json");
            observer_.register_callback(path_);
            options.execution_trace_observer = &observer_;
        }
        profiler_ = std::make_unique<stint::profiler<Config>>(options);
        profiler_->start();
    }
    ~session() {
        profiler_->stop();
        state_.counters["dropped"] = static_cast<double>(profiler_->stats().dropped);
        profiler_.reset();
        if (!path_.empty()) std::remove(path_.c_str());
    }
    session(const session&) = delete;
    session& operator=(const session&) = delete;

private:
    benchmark::State& state_;
    stint::execution_trace_observer observer_;
    std::string path_;
    std::unique_ptr<stint::profiler<Config>> profiler_;
};

std::vector<float> storage(1024, 1.0f);
bench_tensor a{{64, 32}, {32, 1}, storage.data()};
bench_tensor b{{32, 16}, {16, 1}, storage.data() + 256};
bench_tensor c{{64, 16}, {16, 1}, storage.data() + 512};
bench_tensor out{{64, 16}, {16, 1}, storage.data() + 768};

void op_with_output() {
    STINT_OP(shapes, "bench::op", a, b, c);
    benchmark::ClobberMemory();
    STINT_OUTPUTS(out);
}

void et_op_timing_only(benchmark::State& state) {
    session<stint::config<>> s(state, 48, false);
    for (auto _ : state) {
        STINT_OP(stint::config<>, "bench::op", a, b, c);
        benchmark::ClobberMemory();
    }
}
BENCHMARK(et_op_timing_only)->Iterations(iterations);

void et_op_shapes_no_trace(benchmark::State& state) {
    session<shapes> s(state, 512, false);
    for (auto _ : state) op_with_output();
}
BENCHMARK(et_op_shapes_no_trace)->Iterations(iterations);

void et_op_shapes_trace_live(benchmark::State& state) {
    session<shapes> s(state, 768, true);
    for (auto _ : state) op_with_output();
}
BENCHMARK(et_op_shapes_trace_live)->Iterations(iterations);

// stop() of a standalone observer (the drain with inputs kept whole, then the nodes written) and
// unregister_callback() (the end, the rename), for 200 000 recorded ops.
void et_write(benchmark::State& state) {
    const std::string path = output_path("write.et.json");
    double bytes = 0;
    for (auto _ : state) {
        state.PauseTiming();
        stint::execution_trace_observer et({.reserve_buffer_bytes = written_ops * 768});
        et.register_callback(path).start();
        for (std::int64_t i = 0; i < written_ops; ++i) op_with_output();
        state.ResumeTiming();
        et.stop();
        et.unregister_callback();
        state.PauseTiming();
        bytes = file_bytes(path);
        std::remove(path.c_str());
        state.ResumeTiming();
    }
    state.SetItemsProcessed(state.iterations() * written_ops);
    state.counters["file_bytes_per_op"] = bytes / static_cast<double>(written_ops);
}
BENCHMARK(et_write)->Iterations(3)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
