// Throughput and memory of the back half: drain (stop: records → event list), the Chrome JSON
// export, plain and gzip, and the Perfetto protobuf export (its speed and its size beside the JSON's);
// bytes per record as stored and resident memory per event of a 10 M-event session. bench/run turns
// the JSON of this binary into rows of the design §6 table.
#include <benchmark/benchmark.h>

#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <optional>
#include <string>
#include <sys/stat.h>
#include <time.h>

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

// One 10 M-event session: bytes per record as stored, resident growth per event while recording and
// after stop (the event list), and the export's peak resident growth relative to the records' size.
void session_memory(benchmark::State& state) {
    const std::string path = output_path("memory.json");
    for (auto _ : state) {
        const memory_sample before = sample_memory();
        stint::profiler<> prof(big_session());
        prof.start();
        record_events(memory_events);
        const memory_sample recorded = sample_memory();
        reset_peak();
        prof.stop();
        const memory_sample stopped = sample_memory();
        reset_peak();
        prof.export_chrome_trace(path);
        const memory_sample exported = sample_memory();
        std::remove(path.c_str());

        const auto events = static_cast<double>(prof.stats().recorded);
        const double record_bytes = static_cast<double>(prof.stats().buffer_bytes);
        state.counters["events"] = events;
        state.counters["dropped"] = static_cast<double>(prof.stats().dropped);
        state.counters["stored_bytes_per_record"] = record_bytes / events;
        state.counters["rss_bytes_per_event_recording"] = (recorded.resident - before.resident) / events;
        state.counters["rss_bytes_per_event_event_list"] = (stopped.resident - recorded.resident) / events;
        state.counters["export_peak_over_records"] = (exported.peak - stopped.resident) / record_bytes;
        // What issue 18 bounds: stop and export together, from the recorded session's resident size.
        state.counters["stop_export_peak_over_records"] =
            (std::max(stopped.peak, exported.peak) - recorded.resident) / record_bytes;
    }
}
BENCHMARK(session_memory)->Iterations(1)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
