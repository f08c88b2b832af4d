// A program that dies during a flight recorder's session, in the way its first argument names
// ("null": a null dereference, "abort", "noexcept": an exception thrown through a noexcept function,
// "second_handler": another SIGSEGV handler installed over stint's, then a null dereference), leaving
// its crash dump at the second argument. Each thread dies inside scopes: the main thread inside
// "crash.main_loop" > "crash.request 42" (named at run time), the worker inside "crash.worker_wait".
// tests/flight_recorder_test.cpp decodes it.

#include <atomic>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <thread>

#include "stint/stint.hpp"

namespace {

volatile int* volatile nowhere = nullptr;

[[gnu::noinline]] void throw_if(int n) {
    if (n > 0) throw std::runtime_error("through noexcept");
}
void throw_through(int n) noexcept { throw_if(n); }  // std::terminate

}  // namespace

int main(int argc, char** argv) {
    if (argc < 3) {
        std::fprintf(stderr, "usage: crash_in_flight null|abort|noexcept|second_handler DUMP_PATH\n");
        return 2;
    }
    const std::string mode = argv[1];
    stint::profiler_options<> options;
    options.flight_recorder = stint::flight_recorder_options{.budget_bytes = 4 << 20, .crash_dump_path = argv[2]};
    stint::profiler<> prof(options);
    prof.start();
    std::atomic<bool> ready{false};
    std::thread worker([&] {
        stint::set_thread_name("crash worker");
        for (int i = 0; i < 1000; ++i) {
            STINT_SCOPE("crash.worker_step");
        }
        STINT_SCOPE("crash.worker_wait");
        ready = true;
        for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));
    });
    worker.detach();
    for (int i = 0; i < 10000; ++i) {
        STINT_SCOPE("crash.main_step");
    }
    while (!ready) std::this_thread::yield();
    STINT_SCOPE("crash.main_loop");
    stint::record_function request("crash.request 42");
    { STINT_SCOPE("crash.last_before_crash"); }
    if (mode == "second_handler") {
        std::signal(SIGSEGV, [](int) { std::_Exit(3); });
        for (const std::string& line : stint::check_crash_handlers()) std::printf("%s\n", line.c_str());
        std::fflush(stdout);
    }
    if (mode == "null" || mode == "second_handler") return *nowhere;
    if (mode == "abort") std::abort();
    if (mode == "noexcept") throw_through(1);
    return 0;
}
