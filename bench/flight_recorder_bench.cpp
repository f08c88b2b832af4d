// The flight recorder (design §7 "Flight recorder"): a timing-only scope while the ring wraps (every
// chunk change overwrites the thread's oldest chunk) against the ideal recorder, on 1 and 2 threads;
// a dump of 1 M events while two threads record, with what it costs them; and the crash handler's time
// for a full ring while four threads record.
#include <benchmark/benchmark.h>

#include <time.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <csignal>

#include <stint/profiler/crash_dump.hpp>
#include <stint/profiler/flight_recorder.hpp>
#include <stint/stint.hpp>

namespace {

struct flight_ideal_record {
    const void* site;
    std::uint64_t begin;
    std::uint64_t end;
};
constexpr std::size_t flight_ideal_capacity = std::size_t{1} << 22;  // 96 MiB, wraps: resident but not cached
thread_local std::unique_ptr<flight_ideal_record[]> flight_ideal_storage;
thread_local std::size_t flight_ideal_cursor = 0;
constexpr benchmark::IterationCount flight_iterations = 5'000'000;

// The ideal recorder, as scope_bench.cpp's, in this binary so that the ratio is taken in one run.
void flight_ideal_recorder(benchmark::State& state) {
    if (!flight_ideal_storage) flight_ideal_storage = std::make_unique<flight_ideal_record[]>(flight_ideal_capacity);
    static constexpr int site = 0;
    for (auto _ : state) {
        const std::uint64_t begin = stint::read_ticks();
        benchmark::ClobberMemory();
        const std::uint64_t end = stint::read_ticks();
        flight_ideal_storage[flight_ideal_cursor] = {&site, begin, end};
        flight_ideal_cursor = (flight_ideal_cursor + 1) & (flight_ideal_capacity - 1);
    }
}
BENCHMARK(flight_ideal_recorder)->Iterations(flight_iterations)->Threads(1)->Threads(2);

// A 64 MiB ring per thread (resident, not cached, as the ideal's 96 MiB), filled twice over before the
// timed loop: every chunk the loop takes overwrites the thread's oldest.
constexpr std::size_t flight_ring_per_thread = std::size_t{64} << 20;
std::unique_ptr<stint::profiler<>> flight_profiler;
std::atomic<bool> flight_started{false};

void flight_ring_wrapping(benchmark::State& state) {
    if (state.thread_index() == 0) {
        stint::profiler_options<> options;
        options.flight_recorder = stint::flight_recorder_options{
            .budget_bytes = flight_ring_per_thread * static_cast<std::size_t>(state.threads())};
        flight_profiler = std::make_unique<stint::profiler<>>(options);
        flight_profiler->start();
        flight_started = true;
    }
    while (!flight_started) std::this_thread::yield();
    for (std::size_t i = 0; i < 2 * flight_ring_per_thread / 24; ++i) {
        STINT_SCOPE("bench");
        benchmark::ClobberMemory();
    }
    for (auto _ : state) {
        STINT_SCOPE("bench");
        benchmark::ClobberMemory();
    }
    if (state.thread_index() == 0) {
        flight_profiler->stop();
        const double recorded = static_cast<double>(flight_profiler->stats().recorded);
        // Well below 1: the ring turned (it holds 64 MiB of the thread's 2 x 64 MiB + the loop's records).
        state.counters["kept_fraction"] = recorded / static_cast<double>(
            (static_cast<std::size_t>(state.iterations()) + 2 * flight_ring_per_thread / 24) *
            static_cast<std::size_t>(state.threads()));
        flight_profiler.reset();
        flight_started = false;
    }
}
BENCHMARK(flight_ring_wrapping)->Iterations(flight_iterations)->Threads(1)->Threads(2);

double flight_thread_cpu_ns() {
    timespec t{};
    ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return static_cast<double>(t.tv_sec) * 1e9 + static_cast<double>(t.tv_nsec);
}

// prof.dump() of a ring holding 1 M events (24 MB) while two threads record into it. Manual time: the
// dump's wall time. Counters: events written, and the recording threads' CPU time per scope during the
// dump over before it (what copying their chunks under the ring lock and sharing the cores cost them).
void flight_dump_while_recording(benchmark::State& state) {
    stint::profiler_options<> options;
    options.flight_recorder = stint::flight_recorder_options{.budget_bytes = std::size_t{1'000'000} * 24};
    stint::profiler<> prof(options);
    prof.start();
    std::atomic<int> phase{0};  // 0: fill, 1: measure before, 2: measure during the dump, 3: stop
    struct per_thread {
        std::atomic<std::uint64_t> scopes[3] = {0, 0, 0};
        std::atomic<double> cpu_ns[3] = {0, 0, 0};
    };
    std::vector<per_thread> counts(2);
    std::vector<std::thread> recorders;
    for (int t = 0; t < 2; ++t) {
        recorders.emplace_back([&, t] {
            int last = -1;
            double cpu_at = 0;
            std::uint64_t n = 0;
            for (;;) {
                const int p = phase.load(std::memory_order_relaxed);
                if (p != last) {
                    if (last >= 0 && last < 3) {
                        counts[t].scopes[last].fetch_add(n);
                        counts[t].cpu_ns[last] = counts[t].cpu_ns[last] + (flight_thread_cpu_ns() - cpu_at);
                    }
                    if (p == 3) return;
                    last = p;
                    n = 0;
                    cpu_at = flight_thread_cpu_ns();
                }
                for (int i = 0; i < 64; ++i) {
                    STINT_SCOPE("bench");
                    benchmark::ClobberMemory();
                }
                n += 64;
            }
        });
    }
    const std::string path = (std::filesystem::temp_directory_path() / "stint_flight_bench.pt.trace.json").string();
    std::this_thread::sleep_for(std::chrono::milliseconds(400));  // the ring fills (about 1 M records)
    std::uint64_t events = 0;
    for (auto _ : state) {
        phase = 1;
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
        phase = 2;
        const auto t0 = std::chrono::steady_clock::now();
        const stint::flight_dump d = prof.dump(path);
        const auto t1 = std::chrono::steady_clock::now();
        phase = 0;
        events = d.events;
        state.SetIterationTime(std::chrono::duration<double>(t1 - t0).count());
    }
    phase = 3;
    for (std::thread& t : recorders) t.join();
    prof.stop();
    std::filesystem::remove(path);
    std::filesystem::remove(stint::detail::table_path_for(path));
    const auto per_scope = [&](int p) {
        double cpu = 0;
        double n = 0;
        for (per_thread& c : counts) {
            cpu += c.cpu_ns[p];
            n += static_cast<double>(c.scopes[p]);
        }
        return n > 0 ? cpu / n : 0;
    };
    state.counters["events"] = static_cast<double>(events);
    state.counters["ns_per_scope_before"] = per_scope(1);
    state.counters["ns_per_scope_during"] = per_scope(2);
}
BENCHMARK(flight_dump_while_recording)->Iterations(3)->UseManualTime()->Unit(benchmark::kMillisecond);

// The crash handler's work (crash_dump::write_now, as a fault would run it) for a ring of range(0) MiB
// that four threads keep recording into: its wall time, and the bytes it wrote. Informative: what a
// crash costs before the process ends, and so how long a second crashing thread may wait.
void flight_crash_handler(benchmark::State& state) {
    const std::size_t budget = static_cast<std::size_t>(state.range(0)) << 20;
    const std::string path = (std::filesystem::temp_directory_path() / "stint_flight_bench.crash").string();
    double bytes = 0;
    for (auto _ : state) {
        stint::profiler_options<> options;
        options.flight_recorder = stint::flight_recorder_options{.budget_bytes = budget, .crash_dump_path = path};
        stint::profiler<> prof(options);
        prof.start();
        std::atomic<bool> done{false};
        std::vector<std::thread> recorders;
        for (int t = 0; t < 4; ++t) {
            recorders.emplace_back([&] {
                while (!done.load(std::memory_order_relaxed)) {
                    STINT_SCOPE("bench");
                    benchmark::ClobberMemory();
                }
            });
        }
        // The ring fills: four threads write about 1 GB/s of records on this machine.
        std::this_thread::sleep_for(std::chrono::milliseconds(budget > (64 << 20) ? 1500 : 200));
        const auto t0 = std::chrono::steady_clock::now();
        stint::detail::crash_dump::write_now(SIGSEGV);
        const auto t1 = std::chrono::steady_clock::now();
        state.SetIterationTime(std::chrono::duration<double>(t1 - t0).count());
        done = true;
        for (std::thread& t : recorders) t.join();
        prof.stop();
        bytes = static_cast<double>(std::filesystem::file_size(path));
        std::filesystem::remove(path);
    }
    state.counters["dump_bytes"] = bytes;
}
BENCHMARK(flight_crash_handler)->Arg(256)->Arg(4)->Iterations(1)->UseManualTime()->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
