// A program that dies during a flight recorder's session, in the way its first argument names
// ("null": a null dereference, "abort", "noexcept": an exception thrown through a noexcept function,
// "second_handler": another SIGSEGV handler installed over stint's, then a null dereference), leaving
// its crash dump at the second argument. Each thread dies inside scopes: the main thread inside
// "crash.main_loop" > "crash.request 42" (named at run time), the worker inside "crash.worker_wait".
// Other modes, each its own function below: "race MIB" (two threads fault at once while four record and
// three spin, ring of MIB MiB), "overflow" (a recursion overflows the stack), "fork" (a forked child
// crashes), "chdir" (a relative dump path, then a chdir before the crash).
// tests/flight_recorder_test.cpp decodes it.

#include <array>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <sys/wait.h>
#include <unistd.h>

#include "stint/stint.hpp"

namespace {

volatile int* volatile nowhere = nullptr;

[[gnu::noinline]] void throw_if(int n) {
    if (n > 0) throw std::runtime_error("through noexcept");
}
void throw_through(int n) noexcept { throw_if(n); }  // std::terminate

stint::profiler_options<> crash_options(const std::string& path, std::size_t budget) {
    stint::profiler_options<> options;
    options.flight_recorder = stint::flight_recorder_options{.budget_bytes = budget, .crash_dump_path = path};
    return options;
}

// Four threads record "w<k> <i>" scopes (i counting up) while three spin; threads 0 and 1 fault at the
// same instant. Before that the main thread prints, per recorder, the last i it had finished:
// "finished <k> <tid> <i>", so a test can check that the dump holds at least that.
int race(const std::string& path, std::size_t budget) {
    stint::profiler<> prof(crash_options(path, budget));
    prof.start();
    constexpr int recorders = 4;
    std::array<std::atomic<long>, recorders> finished{};
    std::array<std::atomic<long>, recorders> tids{};
    std::atomic<bool> crash{false};
    std::atomic<int> at_the_line{0};
    std::atomic<bool> stop_spinning{false};
    for (auto& f : finished) f = -1;
    std::vector<std::thread> threads;
    for (int k = 0; k < recorders; ++k) {
        threads.emplace_back([&, k] {
            stint::set_thread_name("recorder " + std::to_string(k));
            tids[static_cast<std::size_t>(k)] = static_cast<long>(::gettid());
            for (long i = 0;; ++i) {
                {
                    stint::record_function scope("w" + std::to_string(k) + " " + std::to_string(i));
                }
                finished[static_cast<std::size_t>(k)].store(i, std::memory_order_release);
                if (k < 2 && crash.load(std::memory_order_acquire)) break;
            }
            // Both faulting threads wait for each other, then fault together.
            at_the_line.fetch_add(1);
            while (at_the_line.load() < 2) {
            }
            const int value = *nowhere;
            std::printf("%d\n", value);
        });
    }
    for (int k = 0; k < 3; ++k) {
        threads.emplace_back([&] {
            volatile unsigned long spin = 0;
            while (!stop_spinning.load(std::memory_order_relaxed)) spin = spin + 1;
        });
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(400));
    for (int k = 0; k < recorders; ++k) {
        std::printf("finished %d %ld %ld\n", k, tids[static_cast<std::size_t>(k)].load(),
                    finished[static_cast<std::size_t>(k)].load());
    }
    std::fflush(stdout);
    crash = true;
    for (auto& t : threads) t.join();  // never returns: the faults end the process
    return 0;
}

// Each level records a scope and keeps a page of stack alive, far past any thread's stack.
volatile int overflow_levels = 1 << 30;
[[gnu::noinline]] int deeper(int level) {
    if (level >= overflow_levels) return 0;
    STINT_SCOPE("crash.recursion");
    volatile char page[4096];
    page[0] = static_cast<char>(level);
    return deeper(level + 1) + page[0];
}

int overflow(const std::string& path) {
    stint::profiler<> prof(crash_options(path, 4 << 20));
    prof.start();
    { STINT_SCOPE("crash.before_overflow"); }
    // On a thread of its own: its stack is the one that overflows (the main thread's may grow).
    std::thread t([] {
        stint::set_thread_name("overflowing");
        { STINT_SCOPE("crash.thread_began"); }
        std::printf("depth %d\n", deeper(0));
    });
    t.join();
    return 0;
}

// The parent records; a child forked during the session crashes; the parent stops normally.
int forked(const std::string& path) {
    stint::profiler<> prof(crash_options(path, 4 << 20));
    prof.start();
    { STINT_SCOPE("crash.parent_before_fork"); }
    const pid_t child = ::fork();
    if (child == 0) {
        STINT_SCOPE("crash.child");
        return *nowhere;
    }
    int status = 0;
    ::waitpid(child, &status, 0);
    if (WIFSIGNALED(status)) {
        std::printf("child crashed: signal %d\n", WTERMSIG(status));
    } else {
        std::printf("child %s: exit status %d\n", WEXITSTATUS(status) != 0 ? "crashed" : "exited", WEXITSTATUS(status));
    }
    prof.stop();
    return 0;
}

// The dump path is given relative to the dump's folder, then the program moves to "/" and crashes.
int relative(const std::string& path) {
    const std::filesystem::path absolute(path);
    std::filesystem::current_path(absolute.parent_path());
    stint::profiler<> prof(crash_options(absolute.filename().string(), 4 << 20));
    prof.start();
    std::filesystem::current_path("/");
    STINT_SCOPE("crash.after_chdir");
    return *nowhere;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 3) {
        std::fprintf(stderr, "usage: crash_in_flight null|abort|noexcept|second_handler|race|overflow|fork|chdir DUMP_PATH [MIB]\n");
        return 2;
    }
    const std::string mode = argv[1];
    if (mode == "race") return race(argv[2], argc > 3 ? std::stoul(argv[3]) << 20 : std::size_t{256} << 20);
    if (mode == "overflow") return overflow(argv[2]);
    if (mode == "fork") return forked(argv[2]);
    if (mode == "chdir") return relative(argv[2]);
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
