// Leaves a process in the middle of a session in the way argv[1] names, with worker threads still
// recording, so the test can check stint's static state survives process exit.
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "stint/stint.hpp"

namespace {
stint::profiler<> static_profiler;
std::atomic<bool> stop_workers{false};

void busy() {
    while (!stop_workers.load(std::memory_order_relaxed)) {
        STINT_SCOPE("worker");
    }
}
}  // namespace

int main(int argc, char** argv) {
    if (argc < 2) return 2;
    const bool use_static = std::strcmp(argv[1], "static") == 0;
    stint::profiler<> local;
    stint::profiler<>& prof = use_static ? static_profiler : local;
    prof.start();
    // Detached workers keep recording while the process exits.
    for (int i = 0; i < 2; ++i) std::thread(busy).detach();
    for (int i = 0; i < 1000; ++i) {
        STINT_SCOPE("main");
    }
    if (std::strcmp(argv[1], "exit") == 0) std::exit(0);
    if (std::strcmp(argv[1], "quick_exit") == 0) std::quick_exit(0);
    return 0;  // "return" and "static": destructors run with the session open
}
