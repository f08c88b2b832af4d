// The GPU check (tests/gpu/check.sh runs it): what the CUPTI stand-in cannot show, on a real GPU, one
// line each, "PASS|FAIL|INFO <check>: <what was seen>". Exit status 1 on any FAIL; 0 with one line where
// there is no GPU (`gpu_check probe` exits 3 there). `gpu_check launch-cost` and `gpu_check no-cupti
// FILE` are the parts that need a process of their own; the check runs them as children.

#include <dlfcn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <cuda.h>
#include <cuda_runtime_api.h>
#include <nlohmann/json.hpp>

#include "stint/device/cuda_activities.hpp"
#include "stint/stint.hpp"

extern "C" int stint_smoke_empty_launch(cudaStream_t stream);
extern "C" int stint_check_spin_launch(unsigned long long ns, cudaStream_t stream);
extern "C" int stint_check_empty_function(cudaFunction_t* function);
extern "C" int stint_check_make_graph(float* x, cudaStream_t stream, cudaGraphExec_t* exec);

using gpu = stint::config<stint::cuda_activities>;

namespace {

int failures = 0;

void line(bool pass, std::string_view check, const std::string& detail) {
    std::printf("%s %.*s: %s\n", pass ? "PASS" : "FAIL", static_cast<int>(check.size()), check.data(), detail.c_str());
    std::fflush(stdout);
    failures += pass ? 0 : 1;
}
void info(std::string_view check, const std::string& detail) {
    std::printf("INFO %.*s: %s\n", static_cast<int>(check.size()), check.data(), detail.c_str());
    std::fflush(stdout);
}

std::string str(double v, int precision = 3) {
    std::ostringstream out;
    out.precision(precision);
    out << std::fixed << v;
    return out.str();
}

std::vector<stint::event> named(const stint::event_list& events, std::string_view prefix) {
    std::vector<stint::event> found;
    for (const stint::event& e : events) {
        if (e.name.starts_with(prefix)) found.push_back(e);
    }
    return found;
}

std::vector<stint::event> kernels(const stint::event_list& events) {
    std::vector<stint::event> found;
    for (const stint::event& e : events) {
        if (e.kind == stint::event_kind::kernel) found.push_back(e);
    }
    return found;
}

std::string loss_text(const stint::device_loss& l) {
    return "dropped " + std::to_string(l.dropped_records) + ", incomplete " + std::to_string(l.incomplete_records) +
           ", unknown " + std::to_string(l.unknown_records) + ", out_of_window " +
           std::to_string(l.out_of_window_records) + ", stale " + std::to_string(l.stale_records) +
           ", gpu_before_launch " + std::to_string(l.gpu_before_launch) + ", foreign_buffers " +
           std::to_string(l.foreign_buffers);
}

// The driver's cuLaunchKernel, from the libcuda the runtime loaded.
decltype(&::cuLaunchKernel) driver_launch() {
    void* cuda = ::dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    return cuda == nullptr ? nullptr : reinterpret_cast<decltype(&::cuLaunchKernel)>(::dlsym(cuda, "cuLaunchKernel"));
}

void versions() {
    int driver = 0;
    int runtime = 0;
    cudaDriverGetVersion(&driver);
    cudaRuntimeGetVersion(&runtime);
    cudaDeviceProp prop{};
    cudaGetDeviceProperties(&prop, 0);
    stint::profiler<gpu> prof;
    prof.start();
    stint_smoke_empty_launch(nullptr);
    prof.stop();
    const stint::device_report& r = prof.events().device();
    info("versions", std::string(prop.name) + ", sm_" + std::to_string(prop.major) + std::to_string(prop.minor) +
                         ", driver CUDA " + std::to_string(driver) + ", runtime " + std::to_string(runtime) +
                         ", CUPTI " + std::to_string(r.cupti_version) + " (headers " + std::to_string(r.cupti_headers) +
                         ") from " + r.library);
    line(r.status == "active" && driver >= stint::detail::driver_version_needed(r.cupti_version), "device status",
         r.status + "; torn down after the session: " + (r.torn_down ? "yes" : "no"));
}

// The clock: CUPTI records in stint's ticks, and a 5 ms kernel (timed by the GPU's own globaltimer)
// measures 5 ms on stint's clock.
void clock_check() {
    stint::profiler<gpu> prof;
    prof.start();
    {
        STINT_OP(gpu, "spin");
        for (int i = 0; i < 3; ++i) stint_check_spin_launch(5'000'000ULL, nullptr);
    }
    cudaDeviceSynchronize();
    prof.stop();
    const stint::device_report& r = prof.events().device();
    line(r.clock_alignment.starts_with("ticks"), "clock mapping",
         r.clock_alignment + ", error " + str(r.clock_error_ns, 1) + " ns");
    const auto spins = named(prof.events(), "stint_check_spin");
    bool all = spins.size() == 3;
    std::string seen;
    for (const stint::event& k : spins) {
        const double ms = static_cast<double>(k.duration_ns()) / 1e6;
        all = all && std::abs(ms - 5.0) <= 0.05;
        seen += str(ms, 4) + " ms ";
    }
    line(all, "5 ms globaltimer spin kernel", seen + "(want 5 ms +- 1 %, 3 kernels; found " +
                                                  std::to_string(spins.size()) + ")");
}

// Each kind's record size as the real library lays records out, against the headers stint reads with.
void record_strides() {
    auto& collector = stint::detail::the_cupti_collector();
    if (!collector.start({.sync_events = true, .teardown = false})) {
        line(false, "record strides", "the collector did not start: " + collector.unavailable_reason());
        return;
    }
    float* x = nullptr;
    cudaMalloc(reinterpret_cast<void**>(&x), 4096);
    std::vector<float> host(1024, 1.0F);
    for (int i = 0; i < 4; ++i) {
        cudaMemcpy(x, host.data(), 4096, cudaMemcpyHostToDevice);
        cudaMemset(x, 0, 4096);
        stint_smoke_empty_launch(nullptr);
        cudaStreamSynchronize(nullptr);
        cudaMemcpy(host.data(), x, 4096, cudaMemcpyDeviceToHost);
    }
    cudaDeviceSynchronize();
    cudaFree(x);
    const stint::detail::device_capture capture = collector.stop(true);
    using namespace stint::detail;
    const std::pair<CUpti_ActivityKind, std::pair<const char*, std::size_t>> kinds[] = {
        {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, {"Kernel10", sizeof(cupti_kernel)}},
        {CUPTI_ACTIVITY_KIND_MEMCPY, {"Memcpy6", sizeof(cupti_memcpy)}},
        {CUPTI_ACTIVITY_KIND_MEMSET, {"Memset4", sizeof(cupti_memset)}},
        {CUPTI_ACTIVITY_KIND_RUNTIME, {"API (runtime)", sizeof(cupti_api_call)}},
        {CUPTI_ACTIVITY_KIND_DRIVER, {"API (driver)", sizeof(cupti_api_call)}},
        {CUPTI_ACTIVITY_KIND_SYNCHRONIZATION, {"Synchronization2", sizeof(cupti_sync)}},
        {CUPTI_ACTIVITY_KIND_OVERHEAD, {"Overhead3", sizeof(cupti_overhead)}},
        {CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION, {"ExternalCorrelation", sizeof(cupti_external_correlation)}},
    };
    for (const auto& [kind, what] : kinds) {
        const auto found = capture.record_strides.find(static_cast<std::uint32_t>(kind));
        if (found == capture.record_strides.end()) {
            info("record stride " + std::string(what.first), "no two consecutive records of this kind were seen");
            continue;
        }
        line(found->second == what.second, "record stride " + std::string(what.first),
             std::to_string(found->second) + " bytes in the buffer, " + std::to_string(what.second) + " in the header");
    }
    info("record strides, all kinds seen", [&] {
        std::string all;
        for (const auto& [kind, bytes] : capture.record_strides) {
            all += "kind " + std::to_string(kind) + ": " + std::to_string(bytes) + "; ";
        }
        return all;
    }());
}

// One launch through the runtime and one through the driver: each API record, its correlation id, its
// thread, and the kernel it launched, all under the op.
void one_launch() {
    cudaFunction_t function = nullptr;
    const auto launch = driver_launch();
    if (stint_check_empty_function(&function) != 0 || launch == nullptr) {
        line(false, "driver launch", "cannot get the kernel's CUfunction or cuLaunchKernel");
        return;
    }
    stint::profiler<gpu> prof;
    prof.start();
    {
        STINT_OP(gpu, "runtime launch");
        stint_smoke_empty_launch(nullptr);
    }
    {
        STINT_OP(gpu, "driver launch");
        launch(reinterpret_cast<CUfunction>(function), 1, 1, 1, 1, 1, 1, 0, nullptr, nullptr, nullptr);
    }
    cudaDeviceSynchronize();
    prof.stop();
    const stint::event_list& events = prof.events();
    const auto tid = static_cast<std::uint64_t>(stint::detail::current_os_tid());
    for (const auto& [op_name, api_name] : {std::pair<std::string, std::string>{"runtime launch", "cudaLaunchKernel"},
                                            {"driver launch", "cuLaunchKernel"}}) {
        const auto ops = named(events, op_name);
        const auto apis = named(events, api_name);
        std::optional<stint::event> api;
        for (const stint::event& a : apis) {
            if (!ops.empty() && events.parent(a) == ops[0]) api = a;
        }
        if (ops.size() != 1 || !api) {
            line(false, op_name, "op or " + api_name + " record under it missing (" + std::to_string(apis.size()) +
                                     " " + api_name + " records in all)");
            continue;
        }
        const stint::device_args* call = events.device_args_of(*api);
        std::optional<stint::event> kernel;
        for (const stint::event& k : kernels(events)) {
            const stint::device_args* args = events.device_args_of(k);
            if (args != nullptr && call != nullptr && args->correlation == call->correlation) kernel = k;
        }
        const std::uint64_t api_tid = events.threads()[api->thread].os_tid;
        const bool ok = call != nullptr && call->correlation != 0 && kernel && events.launcher(*kernel) == ops[0] &&
                        api_tid == tid && kernel->start_ns >= api->start_ns && api->start_ns >= ops[0].start_ns &&
                        api->end_ns <= ops[0].end_ns;
        line(ok, op_name,
             std::string(api->name) + " correlation " + std::to_string(call != nullptr ? call->correlation : 0) + ", threadId " +
                 std::to_string(api_tid) + " (gettid " + std::to_string(tid) + "), kernel " +
                 (kernel ? std::string(kernel->name) + " linked to the op: " + (events.launcher(*kernel) == ops[0] ? "yes" : "no") +
                               ", starts " + std::to_string(kernel->start_ns - api->start_ns) + " ns after the call"
                         : std::string("missing")));
    }
}

// Per-launch cost of an empty kernel under STINT_OP, in ns.
double launch_ns(int launches) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < launches; ++i) {
        STINT_OP(gpu, "launch");
        stint_smoke_empty_launch(nullptr);
    }
    cudaDeviceSynchronize();
    return std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count() / launches;
}

// A fresh process: launches before any session, during one, after one (CUPTI torn down), and after one
// that kept CUPTI attached. The best of 5 rounds of 20,000 each, printed for the parent to read.
int launch_cost_child() {
    constexpr int launches = 20000;
    const auto best = [&] {
        double b = 1e18;
        for (int round = 0; round < 5; ++round) b = std::min(b, launch_ns(launches));
        return b;
    };
    launch_ns(1000);  // module load, first launches
    const double before = best();
    double during = 0;
    {
        stint::profiler<gpu> prof;
        prof.start();
        during = launch_ns(launches);
        prof.stop();
    }
    const double after = best();
    {
        stint::profiler_options<gpu> options;
        options.teardown_cupti_on_stop = false;
        stint::profiler<gpu> prof(options);
        prof.start();
        launch_ns(1000);
        prof.stop();
    }
    const double attached = best();
    std::printf("%f %f %f %f\n", before, during, after, attached);
    return 0;
}

std::string run_child(const std::string& command) {
    std::string out;
    FILE* pipe = ::popen(command.c_str(), "r");
    if (pipe == nullptr) return out;
    char chunk[512];
    while (std::fgets(chunk, sizeof(chunk), pipe) != nullptr) out += chunk;
    const int status = ::pclose(pipe);
    if (status != 0) out += " (exit status " + std::to_string(WEXITSTATUS(status)) + ")";
    return out;
}

void launch_cost(const std::string& self) {
    const std::string out = run_child("'" + self + "' launch-cost");
    double before = 0, during = 0, after = 0, attached = 0;
    if (std::sscanf(out.c_str(), "%lf %lf %lf %lf", &before, &during, &after, &attached) != 4 || before <= 0) {
        line(false, "launch cost", "the child printed: " + out);
        return;
    }
    info("launch cost (fresh process, best of 5 x 20,000 empty kernels under STINT_OP)",
         "before any session " + str(before, 0) + " ns, during one " + str(during, 0) + " ns (" +
             str(during / before, 2) + " x), after one torn down " + str(after, 0) + " ns (" + str(after / before, 2) +
             " x), after one left attached " + str(attached, 0) + " ns (" + str(attached / before, 2) + " x)");
    line(after / before <= 1.10, "launches after a session cost what they did before", str(after / before, 3) + " x");
}

// 20 s of launches, a burst of 8 every 10 ms: the kernel's start less its launch's start must not drift.
// The first launch of a burst wakes an idle GPU (tens of us, varying from second to second: on an H100 a
// lone launch every 10 ms gave floors of 13 to 42 us); the rest find it awake, so each second's floor
// measures the clocks, not the GPU's power state.
void drift() {
    stint::profiler<gpu> prof;
    prof.start();
    const auto t0 = std::chrono::steady_clock::now();
    while (std::chrono::steady_clock::now() - t0 < std::chrono::seconds(20)) {
        for (int i = 0; i < 8; ++i) {
            {
                STINT_OP(gpu, "tick");
                stint_smoke_empty_launch(nullptr);
            }
            cudaDeviceSynchronize();
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    prof.stop();
    const stint::event_list& events = prof.events();
    std::map<std::uint32_t, std::int64_t> launch_start;
    for (const stint::event& a : named(events, "cudaLaunchKernel")) {
        if (const stint::device_args* args = events.device_args_of(a)) launch_start[args->correlation] = a.start_ns;
    }
    std::vector<std::pair<double, double>> points;  // (seconds into the session, kernel start - launch start in us)
    for (const stint::event& k : kernels(events)) {
        const stint::device_args* args = events.device_args_of(k);
        if (args == nullptr) continue;
        const auto found = launch_start.find(args->correlation);
        if (found == launch_start.end()) continue;
        points.emplace_back(static_cast<double>(found->second) / 1e9,
                            static_cast<double>(k.start_ns - found->second) / 1e3);
    }
    if (points.size() < 100) {
        line(false, "drift over 20 s", "only " + std::to_string(points.size()) + " kernels matched their launch");
        return;
    }
    if (const char* dir = std::getenv("STINT_GPU_CHECK_DIR")) {  // the series, for a closer look
        std::ofstream csv(std::string(dir) + "/drift.csv");
        csv << "seconds,kernel_minus_launch_us\n";
        for (const auto& [x, y] : points) csv << x << ',' << y << '\n';
    }
    // Launch latency varies by tens of us (queueing, clocks waking up): the clocks' drift shows in the
    // floor, so the trend is fitted through each second's smallest delay.
    const double first = points.front().first;
    std::map<int, double> floor;  // second of the session -> smallest delay in it
    for (const auto& [x, y] : points) {
        const int second = static_cast<int>(x - first);
        const auto [it, added] = floor.try_emplace(second, y);
        if (!added) it->second = std::min(it->second, y);
    }
    const auto fit = [](const std::vector<std::pair<double, double>>& xy) {
        double sx = 0, sy = 0, sxx = 0, sxy = 0;
        for (const auto& [x, y] : xy) {
            sx += x;
            sy += y;
            sxx += x * x;
            sxy += x * y;
        }
        const auto n = static_cast<double>(xy.size());
        return (n * sxy - sx * sy) / (n * sxx - sx * sx);  // us per s
    };
    std::vector<std::pair<double, double>> floors;
    for (const auto& [second, y] : floor) floors.emplace_back(second + 0.5, y);
    const double span = points.back().first - first;
    const double trend = fit(floors) * span;
    std::vector<double> deltas;
    for (const auto& p : points) deltas.push_back(p.second);
    std::sort(deltas.begin(), deltas.end());
    std::string floors_text;
    for (const auto& [x, y] : floors) floors_text += str(y, 1) + " ";
    line(std::abs(trend) <= 5.0, "drift over 20 s",
         std::to_string(points.size()) + " launches; kernel start - launch start: median " +
             str(deltas[deltas.size() / 2], 2) + " us, min " + str(deltas.front(), 2) + " us; trend of each second's "
             "floor " + str(trend, 3) + " us over " + str(span, 1) + " s (want <= 5 us; over all launches " +
             str(fit(points) * span, 3) + " us); floors (us): " + floors_text + "; loss: " +
             loss_text(prof.stats().device_loss));
}

// cuBLAS, from the toolkit or pip's wheel, loaded at run time.
void* load_cublas() {
    const char* tries[] = {"libcublas.so.13", "/usr/local/cuda/lib64/libcublas.so.13"};
    for (const char* path : tries) {
        if (void* h = ::dlopen(path, RTLD_NOW | RTLD_GLOBAL)) return h;
    }
    for (const char* pattern : {"/opt/*/.venv/lib/python3*/site-packages/nvidia/cu13/lib/libcublas.so.13",
                                "/usr/local/lib/python3*/dist-packages/nvidia/cu13/lib/libcublas.so.13",
                                "/usr/local/lib/python3*/site-packages/nvidia/cu13/lib/libcublas.so.13"}) {
        const std::string out = run_child(std::string("ls ") + pattern + " 2>/dev/null | head -n 1");
        const std::string path = out.substr(0, out.find('\n'));
        if (!path.empty()) {
            if (void* h = ::dlopen(path.c_str(), RTLD_NOW | RTLD_GLOBAL)) return h;
        }
    }
    return nullptr;
}

void graph_and_cublas() {
    float* x = nullptr;
    cudaMalloc(reinterpret_cast<void**>(&x), 64 * sizeof(float));
    cudaStream_t stream = nullptr;
    cudaStreamCreate(&stream);
    cudaGraphExec_t exec = nullptr;
    if (stint_check_make_graph(x, stream, &exec) != 0) {
        line(false, "CUDA graph", "could not capture the graph");
        return;
    }
    using create_fn = int (*)(void**);
    using destroy_fn = int (*)(void*);
    using sgemm_fn = int (*)(void*, int, int, int, int, int, const float*, const float*, int, const float*, int,
                             const float*, float*, int);
    void* cublas = load_cublas();
    const auto create = cublas ? reinterpret_cast<create_fn>(::dlsym(cublas, "cublasCreate_v2")) : nullptr;
    const auto destroy = cublas ? reinterpret_cast<destroy_fn>(::dlsym(cublas, "cublasDestroy_v2")) : nullptr;
    const auto sgemm = cublas ? reinterpret_cast<sgemm_fn>(::dlsym(cublas, "cublasSgemm_v2")) : nullptr;
    void* handle = nullptr;
    constexpr int n = 512;
    float* a = nullptr;
    float* c = nullptr;
    cudaMalloc(reinterpret_cast<void**>(&a), sizeof(float) * n * n);
    cudaMalloc(reinterpret_cast<void**>(&c), sizeof(float) * n * n);
    if (create != nullptr) create(&handle);
    if (handle != nullptr) {  // its first call loads kernels: outside the session
        const float one = 1.0F;
        const float zero = 0.0F;
        sgemm(handle, 0, 0, n, n, n, &one, a, n, a, n, &zero, c, n);
        cudaDeviceSynchronize();
    }
    stint::profiler<gpu> prof;
    prof.start();
    {
        STINT_OP(gpu, "graph");
        cudaGraphLaunch(exec, stream);
    }
    if (handle != nullptr) {
        STINT_OP(gpu, "sgemm");
        const float one = 1.0F;
        const float zero = 0.0F;
        sgemm(handle, 0, 0, n, n, n, &one, a, n, a, n, &zero, c, n);
    }
    cudaDeviceSynchronize();
    prof.stop();
    const stint::event_list& events = prof.events();
    const auto graph_ops = named(events, "graph");
    const auto graph_kernels = named(events, "stint_check_add_one");
    std::size_t linked = 0;
    for (const stint::event& k : graph_kernels) linked += events.launcher(k) == graph_ops.at(0) ? 1 : 0;
    line(graph_kernels.size() == 3 && linked == 3, "CUDA graph of 3 kernels",
         std::to_string(graph_kernels.size()) + " kernels, " + std::to_string(linked) +
             " linked to the op that called cudaGraphLaunch");
    if (handle == nullptr) {
        line(false, "cuBLAS sgemm", "libcublas.so.13 not found or cublasCreate failed");
    } else {
        const auto sgemm_ops = named(events, "sgemm");
        std::size_t total = 0;
        std::size_t under = 0;
        std::string names;
        for (const stint::event& k : kernels(events)) {
            if (k.name.starts_with("stint_check_add_one")) continue;
            ++total;
            under += events.launcher(k) == sgemm_ops.at(0) ? 1 : 0;
            names += std::string(k.name.substr(0, 60)) + "; ";
        }
        line(total >= 1 && under == total, "cuBLAS sgemm",
             std::to_string(under) + " of " + std::to_string(total) + " kernels linked to the op: " + names);
        destroy(handle);
    }
    cudaGraphExecDestroy(exec);
    cudaStreamDestroy(stream);
    cudaFree(x);
    cudaFree(a);
    cudaFree(c);
}

void back_to_back() {
    bool ok = true;
    std::string seen;
    stint::profiler<gpu> prof;
    for (int session = 0; session < 3; ++session) {
        prof.start();
        for (int i = 0; i < 200; ++i) {
            STINT_OP(gpu, "launch");
            stint_smoke_empty_launch(nullptr);
        }
        prof.stop();
        const stint::device_loss loss = prof.stats().device_loss;
        const std::size_t found = kernels(prof.events()).size();
        ok = ok && loss.lost() == 0 && loss.foreign_buffers == 0 && found == 200 &&
             prof.stats().device_status == "active";
        seen += "session " + std::to_string(session) + ": " + std::to_string(found) + " kernels, " + loss_text(loss) +
                "; ";
    }
    line(ok, "three back-to-back sessions", seen);
}

// STINT_CUPTI_LIBRARY=/nonexistent: a CPU trace that says why (the child writes it; the parent reads it).
int no_cupti_child(const char* path) {
    stint::profiler<gpu> prof;
    prof.start();
    {
        STINT_OP(gpu, "cpu only");
        stint_smoke_empty_launch(nullptr);
    }
    cudaDeviceSynchronize();
    prof.stop();
    prof.export_chrome_trace(path);
    return 0;
}

void no_cupti(const std::string& self) {
    const std::string path = "/tmp/stint-gpu-check-no-cupti-" + std::to_string(::getpid()) + ".json";
    const std::string out =
        run_child("STINT_CUPTI_LIBRARY=/nonexistent '" + self + "' no-cupti '" + path + "' 2>&1");
    std::ifstream in(path);
    nlohmann::json trace = nlohmann::json::parse(in, nullptr, false);
    std::remove(path.c_str());
    if (trace.is_discarded()) {
        line(false, "STINT_CUPTI_LIBRARY=/nonexistent", "no trace written; the child printed: " + out);
        return;
    }
    bool op = false;
    for (const auto& e : trace["traceEvents"]) op = op || e.value("name", "") == "cpu only";
    const std::string status = trace["stint"]["device"].value("status", "");
    line(op && status.starts_with("unavailable: cannot load /nonexistent (STINT_CUPTI_LIBRARY)"),
         "STINT_CUPTI_LIBRARY=/nonexistent", "CPU op in the trace: " + std::string(op ? "yes" : "no") +
                                                 "; status: " + status);
}

// Synchronisation records only with the option on (torch's test_profiler_cuda_sync_events): a stream and
// a device synchronisation under an op, with enable_cuda_sync_events on and off.
void sync_events() {
    cudaStream_t stream = nullptr;
    cudaStreamCreate(&stream);
    const auto run = [&](bool on) {
        stint::profiler_options<gpu> options;
        options.enable_cuda_sync_events = on;
        stint::profiler<gpu> prof(options);
        prof.start();
        {
            STINT_OP(gpu, "syncs");
            stint_smoke_empty_launch(stream);
            cudaStreamSynchronize(stream);
            stint_smoke_empty_launch(nullptr);
            cudaDeviceSynchronize();
        }
        prof.stop();
        std::size_t syncs = 0;
        for (const stint::event& e : prof.events()) syncs += e.kind == stint::event_kind::cuda_sync ? 1 : 0;
        return syncs;
    };
    const std::size_t on = run(true);
    const std::size_t off = run(false);
    cudaStreamDestroy(stream);
    line(on >= 2 && off == 0, "sync events only with enable_cuda_sync_events",
         "on: " + std::to_string(on) + " cuda_sync events (want >= 2: a stream and a device sync), off: " +
             std::to_string(off) + " (want 0)");
}

// CUPTI's overhead records (buffer requests, flushes) in a session that fills several buffers: decoded
// and named, none unknown (their placing and freeing are the stand-in test's, under ASan in CI).
void overhead_records() {
    stint::profiler<gpu> prof;
    prof.start();
    for (int i = 0; i < 20000; ++i) {  // ~6 MB of records: more than one 4 MiB buffer
        STINT_OP(gpu, "fill");
        stint_smoke_empty_launch(nullptr);
    }
    prof.stop();
    std::map<std::string, std::size_t> names;
    std::size_t total = 0;
    for (const stint::event& e : prof.events()) {
        if (e.kind != stint::event_kind::overhead || !e.name.starts_with("CUPTI ")) continue;
        ++total;
        ++names[std::string(e.name)];
    }
    std::string seen;
    for (const auto& [name, n] : names) seen += name + " x" + std::to_string(n) + ", ";
    line(total > 0 && prof.stats().device_loss.unknown_records == 0, "CUPTI overhead records",
         std::to_string(total) + " (" + seen + "unknown records " +
             std::to_string(prof.stats().device_loss.unknown_records) + "); status " + prof.stats().device_status);
}

// Sessions that stop and tear CUPTI down (cuptiFinalize, from an API exit callback) while 4 threads
// launch under their own ops: no crash, no hang (check.sh's timeout), every session active with kernels,
// and the threads' launches still succeed after the last teardown.
void teardown_while_launching() {
    std::atomic<bool> go{true};
    std::atomic<int> errors{0};
    std::atomic<std::uint64_t> launches{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t) {
        threads.emplace_back([&] {
            cudaStream_t stream = nullptr;
            cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
            while (go.load(std::memory_order_relaxed)) {
                STINT_OP(gpu, "launcher");
                if (stint_smoke_empty_launch(stream) != 0) errors.fetch_add(1);
                launches.fetch_add(1, std::memory_order_relaxed);
            }
            if (cudaStreamSynchronize(stream) != cudaSuccess) errors.fetch_add(1);
            cudaStreamDestroy(stream);
        });
    }
    int torn_down = 0;
    int with_kernels = 0;
    std::string status;
    constexpr int sessions = 10;
    for (int i = 0; i < sessions; ++i) {
        stint::profiler<gpu> prof;
        prof.start();
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        prof.stop();
        torn_down += prof.events().device().torn_down ? 1 : 0;
        with_kernels += kernels(prof.events()).empty() ? 0 : 1;
        status = prof.stats().device_status;
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    go.store(false);
    for (std::thread& t : threads) t.join();
    const cudaError_t last = cudaDeviceSynchronize();
    line(torn_down == sessions && with_kernels == sessions && errors.load() == 0 && last == cudaSuccess,
         "teardown while 4 threads launch",
         std::to_string(sessions) + " sessions: torn down " + std::to_string(torn_down) + ", with kernels " +
             std::to_string(with_kernels) + "; " + std::to_string(launches.load()) + " launches, " +
             std::to_string(errors.load()) + " failed; last status: " + status);
}

}  // namespace

int main(int argc, char** argv) {
    const std::string mode = argc > 1 ? argv[1] : "check";
    int devices = 0;
    const cudaError_t status = cudaGetDeviceCount(&devices);
    // No driver (the runtime then says "insufficient driver": there is no libcuda to load) or no device:
    // nothing to check. Any other error, a driver that loads and fails, is a failure.
    const bool driver = ::dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD) != nullptr;
    if (!driver || status == cudaErrorNoDevice || (status == cudaSuccess && devices == 0)) {
        std::printf("gpu check: no GPU here (%s); nothing to check\n",
                    !driver ? "no NVIDIA driver: libcuda.so.1 not found" : cudaGetErrorString(status));
        return mode == "probe" ? 3 : 0;
    }
    if (status != cudaSuccess) {  // a driver/runtime mismatch on a GPU machine is a failure, never a skip
        std::printf("FAIL cuda: cudaGetDeviceCount: %s\n", cudaGetErrorString(status));
        return 1;
    }
    if (mode == "probe") return 0;  // there is a GPU
    if (mode == "launch-cost") return launch_cost_child();
    if (mode == "no-cupti" && argc > 2) return no_cupti_child(argv[2]);
    const std::string self = argv[0];
    versions();
    clock_check();
    record_strides();
    one_launch();
    launch_cost(self);
    graph_and_cublas();
    back_to_back();
    sync_events();
    overhead_records();
    teardown_while_launching();
    no_cupti(self);
    drift();
    std::printf("gpu check: %d failed\n", failures);
    return failures == 0 ? 0 : 1;
}
