// training_loop: a toy training loop profiled with a step schedule. Each active window is written
// by the TensorBoard trace handler to ./log/<host>_<pid>.<ms>.pt.trace.json, and its key-averages
// table is printed; the data loader and optimizer step the global step count too.
#include <stint/stint.hpp>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <numeric>
#include <vector>

namespace {

std::vector<float> load_batch(int step) {
    STINT_OP(stint::config<>, "data::load_batch", step);
    std::vector<float> batch(4096);
    std::iota(batch.begin(), batch.end(), static_cast<float>(step));
    stint::step_tracker::increment_step("data_loader");
    return batch;
}

float forward(const std::vector<float>& batch, std::vector<float>& weights) {
    STINT_SCOPE("forward");
    float loss = 0;
    for (std::size_t i = 0; i < batch.size(); ++i) loss += std::tanh(batch[i] * weights[i % weights.size()]);
    return loss / static_cast<float>(batch.size());
}

void backward_and_update(float loss, std::vector<float>& weights) {
    {
        STINT_SCOPE("backward");
        for (float& w : weights) w -= 1e-3F * loss * std::cos(w);
    }
    STINT_OP(stint::config<>, "optim::sgd_step", weights.size());
    stint::step_tracker::increment_step("optimizer");
}

}  // namespace

int main() {
    const std::string log_dir = "log";
    const stint::tensorboard_trace_handler to_tensorboard(log_dir);
    int windows = 0;
    stint::profiler<> prof({
        // Skip 1 step, then twice: wait 1, warm up 1, record 3 (the last one saves).
        .schedule = stint::schedule({.skip_first = 1, .wait = 1, .warmup = 1, .active = 3, .repeat = 2}),
        .on_trace_ready =
            [&](stint::profiler<>& p) {
                ++windows;
                std::cout << "window " << windows << ":\n"
                          << p.key_averages().table({.sort_by = "self_cpu_time_total", .row_limit = 6}) << "\n";
                to_tensorboard(p);
            },
    });
    prof.add_metadata("example", "training_loop");

    // Requesters join the step tracker at the current global step (the profiler joined at
    // construction), so all three advance it once per iteration.
    stint::step_tracker::init_step_count("data_loader");
    stint::step_tracker::init_step_count("optimizer");
    std::vector<float> weights(256, 0.5F);
    prof.start();
    for (int step = 0; step < 14; ++step) {
        const std::vector<float> batch = load_batch(step);
        const float loss = forward(batch, weights);
        backward_and_update(loss, weights);
        prof.step();  // ends step `step`: records, saves or waits, as the schedule says
    }
    prof.stop();

    std::cout << windows << " windows saved under " << std::filesystem::absolute(log_dir).string()
              << "; global step " << stint::step_tracker::current_step() << "\n"
              << "view them with: tensorboard --logdir " << log_dir << " (torch-tb-profiler plugin)\n";
}
