// on_demand_service: a service that can be profiled while it runs, without a restart. It enables
// on-demand capture (as STINT_ON_DEMAND=1 would) and handles requests, one step each. From another
// shell, as the same user:
//   tools/stint-capture --pid <pid> --duration 2s --output trace.json
//   tools/stint-capture --pid <pid> --steps 10 --output steps.json
// With --flight it runs a flight recorder instead, always on, and a request writes what it holds:
//   tools/stint-capture --pid <pid> --dump --output last_seconds.pt.trace.json
// Usage: on_demand_service [seconds to run (default 2)] [--exit-after-ms N: leave main early] [--flight]
// SIGTERM or SIGINT ends it in order: a capture in progress is written and answered.
#include <stint/profiler/on_demand.hpp>
#include <stint/stint.hpp>

#include <chrono>
#include <csignal>
#include <cmath>
#include <cstring>
#include <iostream>
#include <string>
#include <thread>

namespace {

volatile std::sig_atomic_t stopping = 0;  // SIGTERM or SIGINT: leave the loop, and main, in order

double handle_request(int n) {
    STINT_SCOPE("handle_request");
    double sum = 0;
    {
        STINT_SCOPE("parse");
        for (int i = 1; i < 2000; ++i) sum += std::sqrt(static_cast<double>(i * n));
    }
    {
        STINT_SCOPE("respond");
        for (int i = 1; i < 1000; ++i) sum -= std::sqrt(static_cast<double>(i));
    }
    return sum;
}

}  // namespace

int main(int argc, char** argv) {
    double seconds = 2;
    long exit_after_ms = -1;
    bool flight = false;
    for (int i = 1; i < argc; ++i) {
        if (std::strcmp(argv[i], "--flight") == 0) {
            flight = true;
        } else if (std::strcmp(argv[i], "--exit-after-ms") == 0 && i + 1 < argc) {
            exit_after_ms = std::stol(argv[++i]);
        } else {
            seconds = std::stod(argv[i]);
        }
    }
    std::signal(SIGTERM, [](int) { stopping = 1; });
    std::signal(SIGINT, [](int) { stopping = 1; });
    const std::string socket = stint::enable_on_demand();
    std::cout << "on_demand_service: pid " << ::getpid() << ", listening on " << socket << std::endl;
    // Not started: its step() advances the global step a capture counts. With --flight it records always,
    // into the last 16 MiB, and answers dump requests.
    stint::profiler_options<> options;
    if (flight) options.flight_recorder = stint::flight_recorder_options{.budget_bytes = 16 << 20};
    stint::profiler<> steps(options);
    if (flight) steps.start();
    const auto began = std::chrono::steady_clock::now();
    const auto run_for = exit_after_ms >= 0 ? std::chrono::milliseconds(exit_after_ms)
                                            : std::chrono::milliseconds(static_cast<long>(seconds * 1000));
    double total = 0;
    for (int n = 0; stopping == 0 && std::chrono::steady_clock::now() - began < run_for; ++n) {
        total += handle_request(n);
        steps.step();
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    std::cout << "on_demand_service: done (" << total << ")" << std::endl;
    // Leaving main ends a capture in progress: its trace is written and the requester answered.
}
