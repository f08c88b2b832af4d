// libtorch_training: a small conv net trained with libtorch, profiled by stint through its libtorch
// adapter. Every aten op, autograd node and libtorch user scope is recorded with its input shapes,
// flops, sequence number and forward thread, on every thread libtorch runs ops on. Prints the table
// and writes the trace to the path given as its first argument (libtorch_training.pt.trace.json by default).
// Build it with NDEBUG (the adapter's header says why); meson builds it where libtorch is found.
// IValue complete before torch.h: clang 14 in C++20 mode cannot otherwise compile libtorch 1.13's headers.
#include <ATen/core/ivalue.h>
#include <torch/torch.h>

#include <cstdio>
#include <string>

#include <stint/stint.hpp>
#include <stint/adapters/torch.hpp>

namespace {

struct small_net : torch::nn::Module {
    torch::nn::Conv2d conv{nullptr};
    torch::nn::Linear fc{nullptr};
    small_net() {
        conv = register_module("conv", torch::nn::Conv2d(torch::nn::Conv2dOptions(1, 8, 3)));
        fc = register_module("fc", torch::nn::Linear(8 * 26 * 26, 10));
    }
    torch::Tensor forward(torch::Tensor x) { return fc->forward(torch::relu(conv->forward(x)).flatten(1)); }
};

}  // namespace

int main(int argc, char** argv) {
    const std::string trace = argc > 1 ? argv[1] : "libtorch_training.pt.trace.json";
    torch::manual_seed(0);
    small_net net;
    torch::optim::SGD optimizer(net.parameters(), 0.01);
    const torch::Tensor images = torch::randn({32, 1, 28, 28});
    const torch::Tensor labels = torch::randint(0, 10, {32});

    using config = stint::config<stint::record_shapes, stint::with_flops>;
    stint::torch_observer<config> observe;  // libtorch's ops, recorded while stint records
    stint::profiler<config> prof;
    prof.start();
    for (int step = 0; step < 5; ++step) {
        optimizer.zero_grad();
        torch::Tensor loss = torch::nn::functional::cross_entropy(net.forward(images), labels);
        loss.backward();
        optimizer.step();
        prof.step();
    }
    prof.stop();

    std::puts(prof.key_averages({.group_by_input_shape = true})
                  .table({.sort_by = "cpu_time_total", .row_limit = 15})
                  .c_str());
    prof.export_chrome_trace(trace);
    std::printf("trace: %s (%zu events)\n", trace.c_str(), prof.events().size());
}
