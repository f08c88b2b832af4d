// What stint's libtorch adapter (stint/adapters/torch.hpp) costs a libtorch training step, against the
// same step unprofiled and under libtorch's own profiler with input shapes, in the same run: a tiny
// MLP, whose steps are a few hundred small ops, so that per-op costs dominate. One intra-op thread,
// so that a step's time is its ops'. The profiled rows record a session of their own per batch of
// steps, as a user's schedule would.
#include <benchmark/benchmark.h>

#include <torch/csrc/autograd/profiler_kineto.h>
#include <torch/csrc/autograd/profiler_legacy.h>
#include <torch/torch.h>

#include <cstdint>
#include <memory>

#include <stint/stint.hpp>
#include <stint/adapters/torch.hpp>

namespace {

constexpr benchmark::IterationCount steps = 400;
using shapes = stint::config<stint::record_shapes>;
namespace libtorch_profiler = torch::autograd::profiler;
namespace impl = torch::profiler::impl;

struct tiny_mlp : torch::nn::Module {
    torch::nn::Linear a{nullptr};
    torch::nn::Linear b{nullptr};
    torch::nn::Linear c{nullptr};
    tiny_mlp() {
        a = register_module("a", torch::nn::Linear(16, 32));
        b = register_module("b", torch::nn::Linear(32, 32));
        c = register_module("c", torch::nn::Linear(32, 4));
    }
    torch::Tensor forward(torch::Tensor x) {
        return c->forward(torch::relu(b->forward(torch::relu(a->forward(x)))));
    }
};

class training {
public:
    training() {
        torch::set_num_threads(1);
        torch::manual_seed(0);
        for (int i = 0; i < 20; ++i) step();  // allocations settle
    }
    void step() {
        optimizer_.zero_grad();
        torch::Tensor loss = torch::mse_loss(net_.forward(x_), y_);
        loss.backward();
        optimizer_.step();
    }

private:
    tiny_mlp net_;
    torch::optim::SGD optimizer_{net_.parameters(), 0.01};
    torch::Tensor x_ = torch::randn({8, 16});
    torch::Tensor y_ = torch::randn({8, 4});
};

// The RecordFunctions one step makes, as stint counts them.
std::int64_t ops_per_step(training& t) {
    stint::torch_observer<> observe;
    stint::profiler<> prof;
    prof.start();
    t.step();
    prof.stop();
    std::int64_t ops = 0;
    for (const stint::event& e : prof.events()) {
        ops += e.kind == stint::event_kind::cpu_op || e.kind == stint::event_kind::user_annotation ? 1 : 0;
    }
    return ops;
}

std::int64_t measured_ops = 0;

// Made (and its ops counted) before any benchmark makes an observer of its own.
training& the_training() {
    static training t;
    static const bool counted = (measured_ops = ops_per_step(t), true);
    (void)counted;
    return t;
}

void report(benchmark::State& state) { state.counters["ops_per_step"] = static_cast<double>(measured_ops); }

void unprofiled(benchmark::State& state) {
    training& t = the_training();
    for (auto _ : state) t.step();
    report(state);
}
BENCHMARK(unprofiled)->Iterations(steps);

// The observer made, no session: its callback is not in libtorch's list.
void adapter_idle(benchmark::State& state) {
    training& t = the_training();
    stint::torch_observer<shapes> observe;
    for (auto _ : state) t.step();
    report(state);
}
BENCHMARK(adapter_idle)->Iterations(steps);

void adapter_recording_shapes(benchmark::State& state) {
    training& t = the_training();
    stint::torch_observer<shapes> observe;
    stint::profiler<shapes> prof;
    prof.start();
    for (auto _ : state) t.step();
    prof.stop();  // after the loop: not timed
    state.counters["dropped"] = static_cast<double>(prof.stats().dropped);
    report(state);
}
BENCHMARK(adapter_recording_shapes)->Iterations(steps);

// libtorch's own cost of calling an observer around each op: a callback that does nothing (with and
// without inputs handed to it), the floor under any observer's.
std::unique_ptr<at::ObserverContext> empty_start(const at::RecordFunction&) { return nullptr; }
void empty_end(const at::RecordFunction&, at::ObserverContext*) {}

void empty_callback(benchmark::State& state) {
    training& t = the_training();
    at::RecordFunctionCallback callback(&empty_start, &empty_end);
    callback.needsInputs(state.range(0) != 0);
    const at::CallbackHandle handle = at::addGlobalCallback(callback);
    for (auto _ : state) t.step();
    at::removeCallback(handle);
    report(state);
}
BENCHMARK(empty_callback)->Arg(0)->Arg(1)->Iterations(steps);

// Names and times only: what the shapes cost is the difference.
void adapter_recording(benchmark::State& state) {
    training& t = the_training();
    stint::torch_observer<> observe;
    stint::profiler<> prof;
    prof.start();
    for (auto _ : state) t.step();
    prof.stop();  // after the loop: not timed
    state.counters["dropped"] = static_cast<double>(prof.stats().dropped);
    report(state);
}
BENCHMARK(adapter_recording)->Iterations(steps);

// libtorch's Kineto-API profiler where this libtorch has it, its legacy one otherwise (counter "kineto").
void libtorch_profiler_shapes(benchmark::State& state) {
    training& t = the_training();
    bool kineto = true;
    try {
        libtorch_profiler::prepareProfiler(impl::ProfilerConfig(impl::ProfilerState::KINETO, true),
                                           {impl::ActivityType::CPU});
        libtorch_profiler::enableProfiler(impl::ProfilerConfig(impl::ProfilerState::KINETO, true),
                                          {impl::ActivityType::CPU});
    } catch (const std::exception&) {
        kineto = false;
        libtorch_profiler::enableProfilerLegacy(impl::ProfilerConfig(impl::ProfilerState::CPU, true));
    }
    for (auto _ : state) t.step();
    if (kineto) {  // after the loop: not timed
        (void)libtorch_profiler::disableProfiler();
    } else {
        (void)libtorch_profiler::disableProfilerLegacy();
    }
    state.counters["kineto"] = kineto ? 1 : 0;
    report(state);
}
BENCHMARK(libtorch_profiler_shapes)->Iterations(steps);

}  // namespace

BENCHMARK_MAIN();
