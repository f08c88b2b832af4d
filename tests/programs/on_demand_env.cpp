// A program that never calls enable_on_demand(): STINT_ON_DEMAND=1 in its environment alone must turn
// on-demand capture on (tests/on_demand/run.py). It includes on_demand.hpp, as
// docs/guide/07-production.md says a program must (stint.hpp does not). Prints its pid, then records
// scopes until SIGTERM or argv[1] seconds (default 30) have passed.
#include <stint/profiler/on_demand.hpp>
#include <stint/stint.hpp>

#include <unistd.h>

#include <chrono>
#include <csignal>
#include <iostream>
#include <string>
#include <thread>

namespace {
volatile std::sig_atomic_t stopping = 0;
}  // namespace

int main(int argc, char** argv) {
    std::signal(SIGTERM, [](int) { stopping = 1; });
    const double seconds = argc > 1 ? std::stod(argv[1]) : 30.0;
    std::cout << "on_demand_env: pid " << ::getpid() << std::endl;
    const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    while (stopping == 0 && std::chrono::steady_clock::now() < until) {
        STINT_SCOPE("env_work");
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
}
