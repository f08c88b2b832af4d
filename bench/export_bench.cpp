// Throughput and memory of the back half: drain (stop), the Chrome JSON export, plain and gzip, and
// the Perfetto protobuf export (its speed and its size beside the JSON's); bytes per record as stored
// and resident memory of sessions of 10 M and 100 M events. bench/run turns
// the JSON of this binary into rows of the design §6 table.
#include <benchmark/benchmark.h>

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <optional>
#include <string>
#include <sys/stat.h>
#include <thread>
#include <time.h>
#include <vector>

#include <stint/stint.hpp>

namespace {

constexpr std::int64_t throughput_events = 1'000'000;
constexpr std::int64_t memory_events = 10'000'000;

/// Four events per call, nested as a real trace is: a parent with two children and an instant.
void record_events(std::int64_t count) {
    for (std::int64_t i = 0; i < count / 4; ++i) {
        STINT_SCOPE("forward");
        {
            STINT_SCOPE("aten::linear");
        }
        {
            STINT_SCOPE("aten::relu");
        }
        STINT_INSTANT("tick");
    }
}

std::string output_path(const char* name) {
    // tmpfs where there is one: the formatter is measured, not the disk.
    struct stat info {};
    const std::string dir = ::stat("/dev/shm", &info) == 0 ? "/dev/shm" : "/tmp";
    return dir + "/stint-bench-" + std::to_string(::getpid()) + "-" + name;
}

double file_bytes(const std::string& path) {
    struct stat info {};
    return ::stat(path.c_str(), &info) == 0 ? static_cast<double>(info.st_size) : 0.0;
}

/// Resident and peak resident bytes of this process (Linux /proc).
struct memory_sample {
    double resident = 0;
    double peak = 0;
};
memory_sample sample_memory() {
    memory_sample m;
    std::ifstream status("/proc/self/status");
    std::string line;
    while (std::getline(status, line)) {
        const auto kib = [&] { return std::stod(line.substr(line.find(':') + 1)) * 1024; };
        if (line.starts_with("VmRSS:")) m.resident = kib();
        if (line.starts_with("VmHWM:")) m.peak = kib();
    }
    return m;
}
/// Makes VmHWM restart from the current resident size (Linux >= 4.0).
void reset_peak() {
    std::ofstream("/proc/self/clear_refs") << "5";
}

stint::profiler_options<> big_session() {
    stint::profiler_options<> options;
    options.buffer_budget_bytes = std::size_t{4} << 30;
    return options;
}

// Each iteration records into a fresh profiler outside the timed region; the profiler is destroyed
// outside it too.
void drain(benchmark::State& state) {
    std::optional<stint::profiler<>> prof;
    for (auto _ : state) {
        state.PauseTiming();
        prof.reset();
        prof.emplace(big_session());
        prof->start();
        record_events(throughput_events);
        state.ResumeTiming();
        prof->stop();
    }
    prof.reset();
    state.SetItemsProcessed(state.iterations() * throughput_events);
}
BENCHMARK(drain)->Unit(benchmark::kMillisecond);

double process_cpu_seconds() {
    timespec t{};
    ::clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}

// gzip compresses on worker threads, so it is timed by the wall clock (UseRealTime), and the CPU time
// of the whole process over the timed part says how many cores that took.
void export_trace(benchmark::State& state, const char* name, bool with_drain) {
    const std::string path = output_path(name);
    const bool perfetto = std::string(name).ends_with(".pftrace");
    double bytes = 0;
    double cpu = 0;
    std::optional<stint::profiler<>> prof;
    for (auto _ : state) {
        state.PauseTiming();
        std::remove(path.c_str());
        prof.reset();
        prof.emplace(big_session());
        prof->start();
        record_events(throughput_events);
        if (!with_drain) prof->stop();
        // Perfetto's writer reads the event list: built here, so that the export alone is timed.
        if (perfetto) benchmark::DoNotOptimize(prof->events().size());
        state.ResumeTiming();
        const double cpu_before = process_cpu_seconds();
        if (with_drain) prof->stop();
        if (perfetto) {
            prof->export_perfetto_trace(path);
        } else {
            prof->export_chrome_trace(path);
        }
        cpu += process_cpu_seconds() - cpu_before;
    }
    bytes = file_bytes(path);
    std::remove(path.c_str());
    prof.reset();
    state.SetItemsProcessed(state.iterations() * throughput_events);
    state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(bytes));
    state.counters["file_bytes_per_event"] = bytes / static_cast<double>(throughput_events);
    state.counters["events_per_process_cpu_s"] =
        static_cast<double>(state.iterations() * throughput_events) / cpu;
}
BENCHMARK_CAPTURE(export_trace, plain, "trace.json", false)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(export_trace, gzip, "trace.json.gz", false)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(export_trace, drain_and_plain, "trace.json", true)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(export_trace, perfetto, "trace.pftrace", false)->Unit(benchmark::kMillisecond);

// One session of state.range(0) events, in a fresh process (bench/run runs each size alone): bytes
// per record as stored, resident growth per event while recording, the peak resident growth of stop +
// export relative to the records' size (issue 18: <= 1.1 x; the trace is written from the records),
// and the resident growth per event of the event list when it is then built.
void session_memory(benchmark::State& state) {
    const std::int64_t count = state.range(0);
    // A big trace goes to disk: on tmpfs its pages would be memory too.
    const std::string path = count > memory_events ? "/tmp/stint-bench-" + std::to_string(::getpid()) + "-memory.json"
                                                   : output_path("memory.json");
    for (auto _ : state) {
        const memory_sample before = sample_memory();
        stint::profiler<> prof(big_session());
        prof.start();
        record_events(count);
        const memory_sample recorded = sample_memory();
        reset_peak();
        prof.stop();
        const memory_sample stopped = sample_memory();
        prof.export_chrome_trace(path);
        const memory_sample exported = sample_memory();
        std::remove(path.c_str());
        const auto events = static_cast<double>(prof.stats().recorded);
        const double record_bytes = static_cast<double>(prof.stats().buffer_bytes);
        state.counters["events"] = events;
        state.counters["dropped"] = static_cast<double>(prof.stats().dropped);
        state.counters["stored_bytes_per_record"] = record_bytes / events;
        state.counters["rss_bytes_per_event_recording"] = (recorded.resident - before.resident) / events;
        state.counters["stop_export_peak_over_records"] =
            (std::max(stopped.peak, exported.peak) - recorded.resident) / record_bytes;
        // The event list, built from the records when asked for (their chunks go back to the allocator
        // as it is built, which may or may not return them to the system).
        const memory_sample listed_before = sample_memory();
        benchmark::DoNotOptimize(prof.events().size());
        const memory_sample listed = sample_memory();
        state.counters["rss_bytes_per_event_event_list"] = (listed.resident - listed_before.resident) / events;
        state.counters["list_bytes_per_event"] = static_cast<double>(prof.events().event_bytes()) / events;
    }
}
BENCHMARK(session_memory)->Arg(memory_events)->Arg(memory_events * 10)->Iterations(1)->Unit(benchmark::kMillisecond);

// A streamed session (profiler_options::stream_to): 8 threads record bursts of nested scopes for
// state.range(0) seconds while the writer appends them to a file on disk. Resident memory is sampled
// every 100 ms from the first second on: it must stay flat (max - min within the buffer budget), and
// the file must hold every event the session kept.
void stream_session(benchmark::State& state) {
    const auto seconds = static_cast<double>(state.range(0));
    const std::string path = "/tmp/stint-bench-" + std::to_string(::getpid()) + "-stream.json";
    constexpr std::size_t budget = std::size_t{64} << 20;
    for (auto _ : state) {
        stint::profiler<> prof({.buffer_budget_bytes = budget, .stream_to = path});
        std::atomic<bool> done{false};
        prof.start();
        std::vector<std::thread> threads;
        for (int t = 0; t < 8; ++t) {
            threads.emplace_back([&] {
                while (!done.load(std::memory_order_relaxed)) {
                    for (int i = 0; i < 25; ++i) {
                        STINT_SCOPE("burst");
                        STINT_SCOPE("inner");
                    }
                    std::this_thread::sleep_for(std::chrono::milliseconds(1));
                }
            });
        }
        double low = 0;
        double high = 0;
        const auto begin = std::chrono::steady_clock::now();
        for (;;) {
            std::this_thread::sleep_for(std::chrono::milliseconds(100));
            const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
            if (elapsed >= seconds) break;
            if (elapsed < 1) continue;  // the pool and the writer's buffers fill in the first second
            const double rss = sample_memory().resident;
            low = low == 0 ? rss : std::min(low, rss);
            high = std::max(high, rss);
        }
        done = true;
        for (auto& t : threads) t.join();
        prof.stop();
        // Events in the file: one "Record function id" each.
        std::ifstream file(path, std::ios::binary);
        const std::string key = "\"Record function id\": ";
        std::uint64_t written = 0;
        std::string carry;
        std::vector<char> block(std::size_t{1} << 20);
        while (file.read(block.data(), static_cast<std::streamsize>(block.size())) || file.gcount() > 0) {
            std::string text = carry + std::string(block.data(), static_cast<std::size_t>(file.gcount()));
            for (std::size_t at = text.find(key); at != std::string::npos; at = text.find(key, at + key.size())) {
                ++written;
            }
            carry = text.substr(text.size() - std::min(text.size(), key.size() - 1));
        }
        const stint::profiler_stats stats = prof.stats();
        state.counters["events"] = static_cast<double>(stats.number_of_events);
        state.counters["events_in_file"] = static_cast<double>(written);
        state.counters["dropped"] = static_cast<double>(stats.dropped);
        state.counters["rss_range_over_budget"] = (high - low) / static_cast<double>(budget);
        state.counters["rss_min_mib"] = low / (1 << 20);
        state.counters["rss_max_mib"] = high / (1 << 20);
        state.counters["events_per_s"] = static_cast<double>(stats.number_of_events) / seconds;
        std::remove(path.c_str());
    }
}
BENCHMARK(stream_session)->Arg(5)->Arg(60)->Iterations(1)->UseRealTime()->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
