// stint::cuda_activities on a real GPU: a matmul, its copies and a memset under a session, checked
// for what a user reads (events linked to their ops, device time in the table, the trace's kernel
// rows and flows), and what profiling costs per kernel launch. Without a GPU it exits 77 (skipped):
// tests/device/cupti_test.cpp covers the same paths with hand-built records.

#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <dlfcn.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

#include <cuda_runtime_api.h>
#include <nlohmann/json.hpp>

#include "stint/device/cuda_activities.hpp"
#include "stint/stint.hpp"
#include "test_util.hpp"

extern "C" int stint_smoke_matmul_launch(const float* a, const float* b, float* c, int n, cudaStream_t stream);
extern "C" int stint_smoke_empty_launch(cudaStream_t stream);

using gpu = stint::config<stint::cuda_activities>;

namespace {

constexpr int n = 256;

std::optional<stint::event> find_prefix(const stint::event_list& events, std::string_view prefix) {
    for (const stint::event& e : events) {
        if (e.name.starts_with(prefix)) return e;
    }
    return std::nullopt;
}

std::vector<std::optional<stint::event>> named(const stint::event_list& events, std::string_view name) {
    std::vector<std::optional<stint::event>> found;
    for (const stint::event& e : events) {
        if (e.name == name) found.push_back(e);
    }
    return found;
}

// Device buffers for one n x n matmul, freed on every path out of a test.
struct matrices {
    float* a = nullptr;
    float* b = nullptr;
    float* c = nullptr;
    matrices() {
        const std::size_t bytes = sizeof(float) * n * n;
        for (float** p : {&a, &b, &c}) {
            void* memory = nullptr;
            REQUIRE(cudaMalloc(&memory, bytes) == cudaSuccess);
            *p = static_cast<float*>(memory);
        }
    }
    ~matrices() {
        cudaFree(a);
        cudaFree(b);
        cudaFree(c);
    }
    matrices(const matrices&) = delete;
    matrices& operator=(const matrices&) = delete;
};

// One profiled step: upload, matmul, download, clear; returns the product read back.
std::vector<float> step(matrices& m) {
    const std::size_t bytes = sizeof(float) * n * n;
    std::vector<float> host_a(n * n, 1.0F);
    std::vector<float> host_b(n * n, 2.0F);
    std::vector<float> host_c(n * n, 0.0F);
    {
        STINT_OP(gpu, "upload");
        REQUIRE(cudaMemcpy(m.a, host_a.data(), bytes, cudaMemcpyHostToDevice) == cudaSuccess);
        REQUIRE(cudaMemcpy(m.b, host_b.data(), bytes, cudaMemcpyHostToDevice) == cudaSuccess);
    }
    {
        STINT_OP(gpu, "matmul");
        REQUIRE(stint_smoke_matmul_launch(m.a, m.b, m.c, n, nullptr) == 0);
    }
    {
        STINT_OP(gpu, "download");
        REQUIRE(cudaMemcpy(host_c.data(), m.c, bytes, cudaMemcpyDeviceToHost) == cudaSuccess);
    }
    {
        STINT_OP(gpu, "clear");
        REQUIRE(cudaMemset(m.c, 0, bytes) == cudaSuccess);
    }
    return host_c;
}

}  // namespace

TEST_CASE("gpu: a matmul, its copies and a memset land under their ops, in the table and the trace") {
    matrices m;
    // Twice: a second session in one process collects as the first did.
    for (int session = 0; session < 2; ++session) {
        CAPTURE(session);
        stint::profiler<gpu> prof;
        prof.start();
        const std::vector<float> product = step(m);
        prof.stop();
        CHECK(product[0] == doctest::Approx(2.0 * n));
        CHECK(product[n * n - 1] == doctest::Approx(2.0 * n));

        const stint::profiler_stats stats = prof.stats();
        REQUIRE(stats.device_status == "active");
        CHECK(stats.device_loss.lost() == 0);
        const stint::event_list& events = prof.events();
        MESSAGE("clock alignment: " << events.device().clock_alignment
                                    << ", CUPTI " << events.device().cupti_version);

        std::optional<stint::event> matmul = named(events, "matmul").at(0);
        std::optional<stint::event> kernel = find_prefix(events, "stint_smoke_matmul(");
        std::optional<stint::event> launch = find_prefix(events, "cudaLaunchKernel");
        REQUIRE(kernel != std::nullopt);
        REQUIRE(launch != std::nullopt);
        CHECK(kernel->kind == stint::event_kind::kernel);
        CHECK(kernel->device == stint::device{stint::device_type::cuda, 0});
        CHECK(events.launcher(*kernel) == matmul);
        CHECK(events.parent(*launch) == matmul);
        CHECK(kernel->start_ns >= launch->start_ns);  // the clocks agree: no kernel starts before its launch
        CHECK(kernel->duration_ns() > 0);
        const stint::device_args* grid = events.device_args_of(*kernel);
        REQUIRE(grid != nullptr);
        CHECK(grid->grid[0] == n / 16);
        CHECK(grid->block[0] == 16);
        CHECK(matmul->self_device_ns == kernel->duration_ns());

        const auto uploads = named(events, "Memcpy HtoD (Pageable -> Device)");
        const auto downloads = named(events, "Memcpy DtoH (Device -> Pageable)");
        const auto clears = named(events, "Memset (Device)");
        REQUIRE(uploads.size() == 2);
        REQUIRE(downloads.size() == 1);
        REQUIRE(clears.size() == 1);
        for (std::optional<stint::event> e : uploads) CHECK(events.launcher(*e) == named(events, "upload").at(0));
        CHECK(events.launcher(*downloads[0]) == named(events, "download").at(0));
        CHECK(events.launcher(*clears[0]) == named(events, "clear").at(0));
        CHECK(events.device_args_of(*downloads[0])->bytes == sizeof(float) * n * n);

        bool matmul_row = false;
        for (const auto& row : prof.key_averages()) {
            if (row.key == "matmul") {
                matmul_row = true;
                CHECK(row.self_device_time_total > 0);
            }
        }
        CHECK(matmul_row);
        const std::string table = prof.key_averages().table({.sort_by = "cuda_time_total"});
        CHECK(table.find("Self CUDA") != std::string::npos);
        if (session == 0) MESSAGE(table);

        stint_test::temp_dir dir;
        prof.export_chrome_trace(dir.file("gpu.json"));
        const nlohmann::json trace = stint_test::read_json(dir.file("gpu.json"));
        REQUIRE(trace["deviceProperties"].is_array());
        CHECK(!trace["deviceProperties"].empty());
        bool kernel_row = false;
        int flow_starts = 0;
        int flow_ends = 0;
        for (const auto& e : trace["traceEvents"]) {
            const std::string cat = e.value("cat", "");
            if (cat == "kernel") {
                kernel_row = true;
                CHECK(e["args"]["External id"] == matmul->id);
            }
            if (cat == "ac2g") (e["ph"] == "s" ? flow_starts : flow_ends) += 1;
        }
        CHECK(kernel_row);
        CHECK(flow_starts >= 5);  // kernel, three copies, memset: each joined to its API call
        CHECK(flow_starts == flow_ends);
    }
}

TEST_CASE("gpu: every launch of a long run is recorded; what profiling adds per launch") {
    constexpr int launches = 20000;
    const auto run = [&](bool profiled) {
        stint::profiler<gpu> prof;
        if (profiled) prof.start();
        const auto t0 = std::chrono::steady_clock::now();
        for (int i = 0; i < launches; ++i) {
            STINT_OP(gpu, "launch");
            REQUIRE(stint_smoke_empty_launch(nullptr) == 0);
        }
        REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
        const double ns = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count();
        if (profiled) {
            prof.stop();
            CHECK(named(prof.events(), "launch").size() == launches);
            std::size_t kernels = 0;
            for (const stint::event& e : prof.events()) kernels += e.kind == stint::event_kind::kernel ? 1 : 0;
            CHECK(kernels == launches);
            CHECK(prof.stats().device_loss.lost() == 0);
        }
        return ns / launches;
    };
    run(false);  // warm-up: module load, first launches
    const double plain = run(false);
    const double profiled = run(true);
    MESSAGE("per launch: " << plain << " ns unprofiled, " << profiled << " ns profiled, ratio "
                           << profiled / plain);
}

TEST_CASE("gpu: a device-only session records kernels and no CPU ops") {
    matrices m;
    stint::profiler_options<gpu> options;
    options.activities = {stint::activity::cuda};
    stint::profiler<gpu> prof(options);
    prof.start();
    step(m);
    prof.stop();
    CHECK(named(prof.events(), "matmul").empty());
    std::optional<stint::event> kernel = find_prefix(prof.events(), "stint_smoke_matmul(");
    REQUIRE(kernel != std::nullopt);
    CHECK(prof.events().launcher(*kernel) == std::nullopt);
}

int main(int argc, char** argv) {
    int devices = 0;
    const cudaError_t status = cudaGetDeviceCount(&devices);
    // Skipped only where there is no GPU: no driver (the runtime then says "insufficient driver", having
    // found no libcuda to load) or no device. A driver that loads and fails (a driver/runtime mismatch on
    // a GPU machine) is a failure.
    const bool driver = ::dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD) != nullptr;
    if (!driver || status == cudaErrorNoDevice || (status == cudaSuccess && devices == 0)) {
        std::printf("gpu smoke test skipped: no GPU (%s)\n",
                    !driver ? "no NVIDIA driver: libcuda.so.1 not found"
                    : status != cudaSuccess ? cudaGetErrorString(status)
                                            : "no devices");
        return 77;
    }
    if (status != cudaSuccess) {
        std::printf("gpu smoke test FAILED: cudaGetDeviceCount: %s (a driver is loaded, so this is no skip)\n",
                    cudaGetErrorString(status));
        return 1;
    }
    doctest::Context context(argc, argv);
    return context.run();
}
