// flight_recorder: a service that keeps its last records in a bounded ring all the time, and writes
// them when something goes wrong. Three workers handle a batch of requests per step; step 60 runs slow,
// and the slow-step trigger writes the steps before it; at the end a dump is asked for by hand.
// Usage: flight_recorder [DIR (default: the current directory)] [crash]
//   With "crash" it dies of a null dereference at step 80 and leaves DIR/flight_recorder.crash; turn it
//   into a trace with: build/stint-crashdump DIR/flight_recorder.crash crash.pt.trace.json
#include <stint/stint.hpp>

#include <atomic>
#include <barrier>
#include <chrono>
#include <cmath>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

namespace {

volatile int* volatile no_request = nullptr;

double handle_request(int step, int n) {
    STINT_SCOPE("handle_request");
    double sum = 0;
    {
        STINT_SCOPE("parse");
        for (int i = 1; i < 3000; ++i) sum += std::sqrt(static_cast<double>(i * n));
    }
    {
        STINT_SCOPE("respond");
        if (step == 60 && n == 0) std::this_thread::sleep_for(std::chrono::milliseconds(60));  // the slow step
        for (int i = 1; i < 3000; ++i) sum += std::log(static_cast<double>(i + n));
    }
    return sum;
}

}  // namespace

int main(int argc, char** argv) {
    const std::string dir = argc > 1 ? argv[1] : ".";
    const bool crash = argc > 2 && std::string(argv[2]) == "crash";
    stint::profiler_options<> options;
    options.flight_recorder = stint::flight_recorder_options{
        .budget_bytes = 8 << 20,  // the last 8 MiB of records, over all threads
        .dump_dir = dir,
        .slow_step = {.factor = 5, .min_duration = std::chrono::milliseconds(20), .steps = 5},
        .hang_timeout = std::chrono::seconds(10),
        .crash_dump_path = crash ? dir + "/flight_recorder.crash" : std::string(),
    };
    stint::profiler<> prof(options);
    prof.start();

    constexpr int workers = 3;
    constexpr int steps = 100;
    std::atomic<int> step{0};
    std::atomic<double> total{0};
    std::barrier sync(workers + 1);
    std::vector<std::thread> pool;
    for (int w = 0; w < workers; ++w) {
        pool.emplace_back([&, w] {
            stint::set_thread_name("worker " + std::to_string(w));
            for (int s = 0; s < steps; ++s) {
                sync.arrive_and_wait();  // the step begins
                double sum = 0;
                for (int r = 0; r < 4; ++r) sum += handle_request(s, w * 4 + r);
                total = total + sum;
                sync.arrive_and_wait();  // the step ends
            }
        });
    }
    for (int s = 0; s < steps; ++s) {
        sync.arrive_and_wait();
        {
            STINT_SCOPE("dispatch");
            // Dies here: the crash dump holds every thread's records, and that this thread was inside
            // ProfilerStep#80 > dispatch.
            if (crash && s == 80) return *no_request;
        }
        sync.arrive_and_wait();
        step = s + 1;
        prof.step();
    }
    for (std::thread& t : pool) t.join();

    const stint::flight_dump last = prof.dump(dir + "/flight_recorder_end.pt.trace.json");
    prof.stop();
    for (const stint::flight_dump& d : prof.triggered_dumps()) std::cout << "slow step dumped: " << d.path << '\n';
    std::cout << "asked for: " << last.path << " (" << last.events << " events, " << last.overwritten
              << " records overwritten) and its table " << last.table_path << '\n';
    return total > 0 ? 0 : 1;
}
