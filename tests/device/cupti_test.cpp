// stint::cuda_activities without a GPU: hand-built CUDA 13 records fed through CUPTI's own callbacks
// (cupti_fake.hpp) to the real collector, decoder and drain; and the real libcupti where no driver is.

#include <doctest/doctest.h>

#include <dlfcn.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <optional>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "cupti_fake.hpp"
#include "memory_leak_check.hpp"
#include "reliability/size.hpp"
#include <stint/export/device_trace.hpp>
#include "test_util.hpp"

using gpu = stint::config<stint::cuda_activities>;
using stint_test::api;
using stint_test::buffer_writer;
using stint_test::external;
using stint_test::fake;
using stint_test::kernel;
using stint_test::memcpy_record;
using stint_test::memset_record;

namespace {

// Spins until the tick clock has passed `ticks`, so hand-built device records end inside the session.
void wait_past(std::uint64_t ticks) {
    while (stint::read_ticks() <= ticks) {
    }
}

using stint_test::count_named;
using stint_test::find;

// Resident bytes less the chunks the registry keeps warm between sessions (bounded on their own).
std::size_t resident_without_cached_chunks() {
    return static_cast<std::size_t>(stint_test::memory_now().resident) -
           stint::detail::the_registry().cached_buffer_bytes();
}

stint::profiler_options<gpu> no_sync() {
    stint::profiler_options<gpu> options;
    options.sync_device_on_stop = false;
    return options;
}

}  // namespace

TEST_CASE("cupti: kernels, copies and memsets land under the ops that launched them, with their API calls") {
    stint_test::use_fake_cupti();
    stint::profiler<gpu> prof(no_sync());
    prof.start();
    std::uint64_t mm = 0;
    std::uint64_t copy = 0;
    std::uint64_t l0 = 0, l1 = 0, c0 = 0, c1 = 0, s0 = 0, s1 = 0;
    {
        STINT_OP(gpu, "aten::mm");
        REQUIRE(fake().pushed.size() == 1);
        mm = fake().pushed.back();
        l0 = stint::read_ticks();
        l1 = l0 + 50;
        wait_past(l1);
        {
            STINT_OP(gpu, "aten::copy_");
            copy = fake().pushed.back();
            c0 = stint::read_ticks();
            c1 = c0 + 40;
            s0 = c1 + 10;
            s1 = s0 + 20;
            wait_past(s1);
        }
    }
    CHECK(fake().pops == 2);
    const std::uint64_t t = stint::read_ticks();
    buffer_writer b;
    REQUIRE(b.granted());
    // The copy's external correlation comes after the work it names: the decoder reads all records first.
    b.add(external(10, mm));
    b.add(api(211, l0, l1, 10));
    b.add(kernel("_Z11gemm_kernelPfS_i", t + 100, t + 5100, 10));
    b.add(api(31, c0, c1, 11));
    b.add(memcpy_record(t + 6000, t + 7000, 11, 1 << 20));
    b.add(api(2000, s0, s1, 12));  // an API call without device work (cbid without a name)
    b.add(memset_record(t + 7100, t + 7200, 12, 4096));
    b.add(external(11, copy));
    b.add(external(12, copy));
    b.finish();
    wait_past(t + 7200);
    prof.stop();

    const stint::event_list& events = prof.events();
    std::optional<stint::event> op = find(events, "aten::mm");
    std::optional<stint::event> inner = find(events, "aten::copy_");
    std::optional<stint::event> gemm = find(events, "gemm_kernel(float*, float*, int)");
    std::optional<stint::event> copy_event = find(events, "Memcpy HtoD (Pageable -> Device)");
    std::optional<stint::event> set = find(events, "Memset (Device)");
    std::optional<stint::event> launch = find(events, "cudaLaunchKernel");
    std::optional<stint::event> memcpy_call = find(events, "cudaMemcpy");
    std::optional<stint::event> unnamed_call = find(events, "cuda_runtime_cbid_2000");
    REQUIRE(op != std::nullopt);
    REQUIRE(inner != std::nullopt);
    REQUIRE(gemm != std::nullopt);
    REQUIRE(copy_event != std::nullopt);
    REQUIRE(set != std::nullopt);
    REQUIRE(launch != std::nullopt);
    REQUIRE(memcpy_call != std::nullopt);
    REQUIRE(unnamed_call != std::nullopt);

    CHECK(gemm->kind == stint::event_kind::kernel);
    CHECK(gemm->device == stint::device{stint::device_type::cuda, 0});
    CHECK(gemm->stream == 7);
    CHECK(events.launcher(*gemm) == op);
    CHECK(events.launcher(*copy_event) == inner);
    CHECK(events.launcher(*set) == inner);
    CHECK(events.parent(*launch) == op);  // the API call nests in the op that made it
    CHECK(events.parent(*memcpy_call) == inner);
    CHECK(events.launcher(*launch) == op);
    CHECK(launch->kind == stint::event_kind::cuda_runtime);
    CHECK(events.device_args_of(*launch)->cbid == 211);
    CHECK(events.device_args_of(*launch)->correlation == 10);
    const stint::device_args* k = events.device_args_of(*gemm);
    REQUIRE(k != nullptr);
    CHECK(k->grid[0] == 64);
    CHECK(k->block[0] == 256);
    CHECK(k->registers_per_thread == 32);
    CHECK(k->static_shared_memory == 1024);
    CHECK(k->dynamic_shared_memory == 512);
    CHECK(events.device_args_of(*copy_event)->bytes == (1u << 20));

    std::vector<std::string_view> of_op;
    for (const stint::event& e : events.kernels(*op)) of_op.push_back(e.name);
    CHECK(of_op == std::vector<std::string_view>{"gemm_kernel(float*, float*, int)"});
    std::vector<std::string_view> of_inner;
    for (const stint::event& e : events.kernels(*inner)) of_inner.push_back(e.name);
    CHECK(of_inner == std::vector<std::string_view>{"Memcpy HtoD (Pageable -> Device)", "Memset (Device)"});

    // Device time: a device event's own duration; an op's own launches (self) and its subtree's (total).
    CHECK(gemm->device_ns == gemm->duration_ns());
    CHECK(gemm->self_ns == 0);
    CHECK(gemm->cpu_time_total() == 0);
    CHECK(op->self_device_ns == gemm->duration_ns());
    CHECK(inner->self_device_ns == copy_event->duration_ns() + set->duration_ns());
    CHECK(op->device_ns == op->self_device_ns + inner->device_ns);
    CHECK(gemm->start_ns >= launch->start_ns);

    const stint::profiler_stats stats = prof.stats();
    CHECK(stats.device_status == "active");
    CHECK(stats.device_events == 3);
    CHECK(stats.device_api_calls == 3);
    CHECK(stats.device_loss.unlinked_records == 0);
    CHECK(stats.device_loss.lost() == 0);
    CHECK(events.device().clock_alignment == "ticks (cuptiActivityRegisterTimestampCallback)");
    CHECK(events.device().cupti_version == 130001);
    CHECK(stats.recorded == 2);  // the link records are not counted as records
}

TEST_CASE("cupti: nested scopes link their work to the innermost, a scope outside the session to none") {
    stint_test::use_fake_cupti();
    using plain = stint::config<>;
    stint::profiler<gpu> prof(no_sync());
    { STINT_OP(gpu, "before start"); }  // no session: nothing pushed
    CHECK(fake().pushed.empty());
    prof.start();
    std::uint64_t inner_id = 0;
    std::uint64_t a = 0;
    {
        STINT_SCOPE("outer, not a cuda_activities site");  // STINT_CONFIG is config<>: pushes nothing
        STINT_OP(gpu, "outer");
        STINT_OP(plain, "plain op");  // no device backend in its config: pushes nothing
        {
            STINT_OP(gpu, "inner");
            inner_id = fake().pushed.back();
            a = stint::read_ticks();
            wait_past(a + 20);
        }
    }
    CHECK(fake().pushed.size() == 2);
    CHECK(fake().pops == 2);
    const std::uint64_t t = stint::read_ticks();
    buffer_writer b;
    b.add(external(1, inner_id));
    b.add(api(211, a, a + 10, 1));
    b.add(kernel("k_inner", t + 10, t + 20, 1));
    b.add(kernel("k_nobody", t + 30, t + 40, 99));  // its launch was not recorded
    b.add(api(211, a + 12, a + 15, 2));              // a call outside any linked scope, no external id
    b.finish();
    wait_past(t + 40);
    prof.stop();
    const stint::event_list& events = prof.events();
    std::optional<stint::event> inner = find(events, "inner");
    REQUIRE(inner != std::nullopt);
    REQUIRE(find(events, "k_inner") != std::nullopt);
    CHECK(events.launcher(*find(events, "k_inner")) == inner);
    std::optional<stint::event> nobody = find(events, "k_nobody");
    REQUIRE(nobody != std::nullopt);
    CHECK(nobody->linked == stint::no_index);
    CHECK(prof.stats().device_loss.unlinked_records == 2);  // the kernel and the unlinked call
    CHECK(count_named(events, "cudaLaunchKernel") == 2);
}

TEST_CASE("cupti: records outside the window, incomplete, of unknown kinds, dropped and stale are counted") {
    stint_test::use_fake_cupti();
    auto options = no_sync();
    stint::profiler<gpu> prof(options);
    prof.start();
    std::uint64_t id = 0;
    std::uint64_t a = 0;
    {
        STINT_OP(gpu, "op");
        id = fake().pushed.back();
        a = stint::read_ticks();
        wait_past(a + 10);
    }
    const std::uint64_t t = stint::read_ticks();
    {
        buffer_writer b;
        b.add(external(1, id));
        b.add(api(211, a, a + 5, 1));
        b.add(kernel("ok", t + 1, t + 2, 1));
        b.add(kernel("before the session", 5, 6, 1));
        b.add(kernel("not finished", t + 3, 0, 1));   // a forced flush's record of work still running
        b.add(kernel("reversed", t + 9, t + 4, 1));
        stint::detail::cupti_api_call unknown{};
        unknown.kind = CUPTI_ACTIVITY_KIND_MARKER;    // a kind stint does not decode (and the fake cannot walk)
        b.add(unknown);
        b.add(kernel("after the unknown record", t + 5, t + 6, 1));
        b.finish();
    }
    fake().dropped_next = 3;  // CUPTI reports 3 records it could not store
    wait_past(t + 10);
    prof.stop();
    const stint::device_loss loss = prof.stats().device_loss;
    CHECK(loss.out_of_window_records == 1);
    CHECK(loss.incomplete_records == 2);
    CHECK(loss.unknown_records == 1);
    CHECK(loss.unparsed_bytes == sizeof(stint::detail::cupti_api_call) + sizeof(stint::detail::cupti_kernel));
    CHECK(loss.dropped_records == 3);
    CHECK(loss.lost() == 1 + 2 + 1 + 3);
    CHECK(find(prof.events(), "ok") != std::nullopt);
    CHECK(find(prof.events(), "after the unknown record") == std::nullopt);
    CHECK(prof.events().device().loss.dropped_records == 3);

    // A buffer completed after stop belongs to no session: the next one counts its records as stale.
    {
        buffer_writer late;
        late.add(kernel("late", t + 1, t + 2, 1));
        late.add(kernel("late too", t + 3, t + 4, 1));
        late.complete();
    }
    prof.start();
    prof.stop();
    CHECK(prof.stats().device_loss.stale_records == 2);
    CHECK(find(prof.events(), "late") == std::nullopt);
}

TEST_CASE("cupti: a buffer request over the budget is refused and counted") {
    stint_test::use_fake_cupti();
    auto options = no_sync();
    options.device_buffer_budget_bytes = std::size_t{6} << 20;  // one 4 MiB buffer fits, not two
    stint::profiler<gpu> prof(options);
    prof.start();
    buffer_writer first;
    buffer_writer second;
    CHECK(first.granted());
    CHECK_FALSE(second.granted());
    first.finish();
    prof.stop();
    CHECK(prof.stats().device_loss.rejected_buffers == 1);
}

TEST_CASE("cupti: two devices and two streams get a track each; a graph launch links every kernel") {
    stint_test::use_fake_cupti();
    stint::profiler<gpu> prof(no_sync());
    prof.start();
    std::uint64_t id = 0;
    std::uint64_t a = 0;
    {
        STINT_OP(gpu, "graph op");
        id = fake().pushed.back();
        a = stint::read_ticks();
        wait_past(a + 10);
    }
    const std::uint64_t t = stint::read_ticks();
    buffer_writer b;
    b.add(kernel("node 0", t + 10, t + 20, 5, 0, 7));
    b.add(kernel("node 1", t + 21, t + 30, 5, 0, 7));
    b.add(kernel("node 2", t + 31, t + 40, 5, 1, 9));
    b.add(api(311, a, a + 5, 5));
    b.add(external(5, id));
    b.finish();
    wait_past(t + 40);
    prof.stop();
    const stint::event_list& events = prof.events();
    std::optional<stint::event> op = find(events, "graph op");
    REQUIRE(op != std::nullopt);
    CHECK(events.kernels(*op).size() == 3);
    CHECK(find(events, "node 2")->device == stint::device{stint::device_type::cuda, 1});
    CHECK(find(events, "node 2")->stream == 9);
    std::size_t tracks = 0;
    for (const stint::thread_info& info : events.threads()) tracks += info.is_device_track() ? 1 : 0;
    CHECK(tracks == 2);
    CHECK(find(events, "cudaGraphLaunch") != std::nullopt);
    CHECK(events.parent(*find(events, "cudaGraphLaunch")) == op);
}

TEST_CASE("cupti: the latch: a failed first enable turns CUPTI off for the process, said once, CPU kept") {
    stint_test::use_fake_cupti();
    fake().enable_result[CUPTI_ACTIVITY_KIND_MEMSET] = CUPTI_ERROR_UNKNOWN;
    std::vector<std::string> warnings;
    auto previous = stint::set_warning_handler([&](std::string_view text) { warnings.emplace_back(text); });
    stint::profiler<gpu> prof(no_sync());
    prof.start();
    { STINT_OP(gpu, "cpu op"); }
    prof.stop();
    CHECK(prof.stats().device_status.starts_with(
        "unavailable: cuptiActivityEnable returned CUPTI_ERROR_UNKNOWN (999)"));
    CHECK(find(prof.events(), "cpu op") != std::nullopt);
    CHECK(fake().pushed.empty());
    const std::size_t calls = fake().calls;
    prof.start();
    for (int i = 0; i < 100; ++i) {
        STINT_OP(gpu, "cpu op");
    }
    prof.stop();
    CHECK(fake().calls == calls);  // never called again
    CHECK(prof.stats().device_status == prof.events().device().status);
    CHECK(warnings.size() == 1);
    stint::set_warning_handler(previous);
    stint_test::temp_dir dir;
    prof.export_chrome_trace(dir.file("t.json"));
    const nlohmann::json trace = nlohmann::json::parse(stint_test::read_file(dir.file("t.json")));
    CHECK(trace.contains("traceEvents"));
}

TEST_CASE("cupti: a session that stops inside a scope still pops what the scope pushed") {
    stint_test::use_fake_cupti();
    stint::profiler<gpu> prof(no_sync());
    prof.start();
    {
        STINT_OP(gpu, "spans the stop");
        prof.stop();
        CHECK(fake().pops == 0);
        { STINT_OP(gpu, "after the stop"); }  // no session: pushes nothing
    }
    CHECK(fake().pushed.size() == 1);
    CHECK(fake().pops == 1);
}

TEST_CASE("cupti: activities choose CPU only, device only, or both") {
    stint_test::use_fake_cupti();
    SUBCASE("cpu only: no device session, nothing pushed") {
        stint::profiler<gpu> prof({.activities = {stint::activity::cpu}});
        prof.start();
        { STINT_OP(gpu, "op"); }
        prof.stop();
        CHECK(fake().pushed.empty());
        CHECK(fake().enabled.empty());
        CHECK(prof.stats().device_status == "off");
        CHECK(find(prof.events(), "op") != std::nullopt);
    }
    SUBCASE("device only: device events, no scopes") {
        auto options = no_sync();
        options.activities = {stint::activity::cuda};
        stint::profiler<gpu> prof(options);
        prof.start();
        { STINT_OP(gpu, "op"); }
        const std::uint64_t t = stint::read_ticks();
        buffer_writer b;
        b.add(kernel("k", t + 1, t + 2, 1));
        b.finish();
        wait_past(t + 2);
        prof.stop();
        CHECK(find(prof.events(), "op") == std::nullopt);
        CHECK(find(prof.events(), "k") != std::nullopt);
        CHECK(prof.stats().device_status == "active");
    }
    SUBCASE("a config without the policy refuses device only") {
        CHECK_THROWS_WITH_AS(stint::profiler<>({.activities = {stint::activity::cuda}}),
                             "stint: profiler_options::activities names nothing this config records; give "
                             "activity::cpu, or activity::cuda with stint::cuda_activities in the config",
                             std::invalid_argument);
    }
}

TEST_CASE("cupti: names: kernels demangled, API version suffixes stripped, Kineto's copy and memset names") {
    using stint::detail::strip_api_version;
    CHECK(strip_api_version("cudaLaunchKernel_v7000") == "cudaLaunchKernel");
    CHECK(strip_api_version("cudaStreamGetCaptureInfo_v2_v11030") == "cudaStreamGetCaptureInfo_v2");
    CHECK(strip_api_version("cuLaunchKernel") == "cuLaunchKernel");
    CHECK(strip_api_version("cuMemAlloc_v2") == "cuMemAlloc_v2");  // fewer than 4 digits: not a version
    CHECK(stint::detail::memcpy_kind_name(CUPTI_ACTIVITY_MEMCPY_KIND_DTOH) == "DtoH");
    CHECK(stint::detail::memcpy_kind_name(CUPTI_ACTIVITY_MEMCPY_KIND_PTOP) == "PtoP");
    CHECK(stint::detail::memcpy_kind_name(99) == "<unknown>");
    CHECK(stint::detail::memory_kind_name(CUPTI_ACTIVITY_MEMORY_KIND_PINNED) == "Pinned");
    CHECK(stint::detail::memory_kind_name(CUPTI_ACTIVITY_MEMORY_KIND_MANAGED_STATIC) == "Managed Static");
    CHECK(stint::sync_type_name(CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE) == "Stream Sync");
}

TEST_CASE("cupti: the record layout the fake walks is the one the real libcupti walks") {
    // Relies on observed behaviour of libcupti 13: records at the stride of the newest struct.
    const stint::detail::cupti_library real = stint::detail::load_cupti_library(nullptr);
    REQUIRE_MESSAGE(real.error.empty(), real.error);
    alignas(8) std::uint8_t bytes[4096] = {};
    std::size_t used = 0;
    const auto put = [&](const auto& record) {
        std::memcpy(bytes + used, &record, sizeof(record));
        used += sizeof(record);
    };
    put(external(1, 42));
    put(api(211, 1, 2, 1));
    put(kernel("k", 3, 4, 1));
    put(memcpy_record(5, 6, 1, 8));
    put(memset_record(7, 8, 1, 8));
    const auto walk = [&](const stint::detail::cupti_table& t) {
        std::vector<std::pair<int, std::size_t>> seen;
        CUpti_Activity* r = nullptr;
        while (t.get_next_record(bytes, used, &r) == CUPTI_SUCCESS) {
            const auto offset = static_cast<std::size_t>(reinterpret_cast<std::uint8_t*>(r) - bytes);
            seen.emplace_back(static_cast<int>(r->kind), offset);
        }
        return seen;
    };
    const auto by_fake = walk(stint_test::fake_table());
    CHECK(by_fake.size() == 5);
    CHECK(walk(real.table) == by_fake);
    const char* name = nullptr;
    REQUIRE(real.table.get_callback_name(CUPTI_CB_DOMAIN_RUNTIME_API, 211, &name) == CUPTI_SUCCESS);
    CHECK(stint::detail::strip_api_version(name) == "cudaLaunchKernel");
}

TEST_CASE("cupti: the real libcupti where it cannot run: a CPU-only session that says why, within a second") {
    auto& collector = stint::detail::the_cupti_collector();
    std::vector<std::string> warnings;
    auto previous = stint::set_warning_handler([&](std::string_view text) { warnings.emplace_back(text); });
    struct restore {
        ~restore() {
            ::unsetenv("STINT_CUPTI_LIBRARY");
            stint::detail::the_cupti_collector().stop_using_test_table();
        }
    } restore_env;
    const auto run = [&](const char* library) {
        if (library != nullptr) ::setenv("STINT_CUPTI_LIBRARY", library, 1);
        else ::unsetenv("STINT_CUPTI_LIBRARY");
        collector.stop_using_test_table();
        const auto t0 = std::chrono::steady_clock::now();
        stint::profiler<gpu> prof;
        prof.start();
        for (int i = 0; i < 1000; ++i) {
            STINT_OP(gpu, "op");
        }
        prof.stop();
        const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        // An absolute bound, not a ratio: what it guards against is a stall of its own (a driver's or a
        // loader's time-out, seconds long), not work that scales; the session itself takes milliseconds.
        CHECK(seconds < 1.0);
        CHECK(count_named(prof.events(), "op") == 1000);
        stint_test::temp_dir dir;
        prof.export_chrome_trace(dir.file("cpu_only.json"));
        const nlohmann::json trace = nlohmann::json::parse(stint_test::read_file(dir.file("cpu_only.json")));
        CHECK(trace["traceEvents"].is_array());
        return prof.stats().device_status;
    };
    // The toolkit's libcupti: without a driver (this build's machines) the session says so, exactly; on a
    // machine with a driver and a GPU the session is active.
    void* driver = ::dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
    const bool has_driver = driver != nullptr;
    if (driver != nullptr) ::dlclose(driver);
    const std::string status = run(nullptr);
    if (has_driver) {
        CHECK(status == "active");
        CHECK(stint::supported_activities() == stint::activity_set{stint::activity::cpu, stint::activity::cuda});
    } else {
        CHECK(status == "unavailable: no NVIDIA driver: libcuda.so.1 not found");
        CHECK(stint::supported_activities() == stint::activity_set{stint::activity::cpu});
    }
    CHECK(run("/nonexistent/libcupti.so.13") ==
          "unavailable: cannot load /nonexistent/libcupti.so.13 (STINT_CUPTI_LIBRARY): /nonexistent/libcupti.so.13: "
          "no such file");
    CHECK(run("libm.so.6") == "unavailable: symbol cuptiGetVersion missing in libm.so.6");
    CHECK(warnings.size() >= 2);
    stint::set_warning_handler(previous);
}

TEST_CASE("cupti: a thousand device sessions with kernels leave memory where the fifth left it") {
    // torch's test_mem_leak for CUDA sessions: buffers, names, event lists and the collector's state
    // are all returned when a session is read and its profiler goes away. The chunks the registry keeps
    // warm between sessions (bounded, reliability/churn_test.cpp) are left out of the count.
    stint_test::use_fake_cupti();
    constexpr int ops = 500;
    std::size_t rss_warm = 0;
    for (int session = 0; session < 1000; ++session) {
        fake().pushed.clear();  // the fake's own log: kept at its capacity, not grown
        stint::profiler<gpu> prof(no_sync());
        prof.start();
        std::vector<std::uint64_t> ids;
        std::vector<std::uint64_t> launches;
        for (int i = 0; i < ops; ++i) {
            STINT_OP(gpu, "aten::mm");
            ids.push_back(fake().pushed.back());
            launches.push_back(stint::read_ticks());
            wait_past(launches.back() + 2);
        }
        const std::uint64_t t = stint::read_ticks();
        {
            buffer_writer b;
            REQUIRE(b.granted());
            for (int i = 0; i < ops; ++i) {
                const auto correlation = static_cast<std::uint32_t>(i + 1);
                const std::uint64_t at = t + 10 * static_cast<std::uint64_t>(i);
                b.add(external(correlation, ids[static_cast<std::size_t>(i)]));
                b.add(api(211, launches[static_cast<std::size_t>(i)], launches[static_cast<std::size_t>(i)] + 1,
                          correlation));
                b.add(kernel("_Z11gemm_kernelPfS_i", at + 1, at + 5, correlation));
            }
            b.finish();
        }
        wait_past(t + 10 * ops);
        prof.stop();
        REQUIRE(prof.stats().device_events == ops);
        REQUIRE(prof.stats().device_loss.lost() == 0);
        REQUIRE(prof.stats().device_loss.unlinked_records == 0);
        if (session == 4) rss_warm = resident_without_cached_chunks();
    }
    const std::size_t rss_last = resident_without_cached_chunks();
    INFO("resident after session 5: " << rss_warm << " B, after session 1000: " << rss_last << " B");
    // One activity buffer leaked per session (500 kernel records written into each) would show as
    // well over 100 MB here.
    if (!stint_test::sanitized) CHECK(rss_last <= rss_warm + (std::size_t{4} << 20));
}

TEST_CASE("cupti: peer copies, stream and context syncs and CUPTI's overhead are decoded and placed") {
    stint_test::use_fake_cupti();
    auto options = no_sync();
    options.enable_cuda_sync_events = true;
    stint::profiler<gpu> prof(options);
    prof.start();
    std::uint64_t id = 0;
    std::uint64_t a = 0;
    {
        STINT_OP(gpu, "aten::to");
        id = fake().pushed.back();
        a = stint::read_ticks();
        wait_past(a + 10);
    }
    const std::uint64_t t = stint::read_ticks();
    const auto no_stream = static_cast<std::uint32_t>(CUPTI_SYNCHRONIZATION_INVALID_VALUE);
    {
        buffer_writer b;
        b.add(external(20, id));
        b.add(api(31, a, a + 2, 20));
        b.add(stint_test::peer_record(t + 1, t + 9, 20, 1 << 16, 0, 1));
        b.add(kernel("on_gpu1", t + 10, t + 20, 21, 1, 9));  // context 2 ran on device 1
        b.add(stint_test::sync_record(CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE, t + 21, t + 22, 22, 1,
                                      7));
        b.add(stint_test::sync_record(CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE, t + 23, t + 24, 23, 2,
                                      no_stream));
        b.add(stint_test::sync_record(CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE, t + 25, t + 26, 24, 9,
                                      no_stream));  // a context no other work names, two devices: unplaceable
        b.add(stint_test::overhead_record(t + 27, t + 28));
        b.finish();
    }
    wait_past(t + 30);
    prof.stop();
    const stint::event_list& events = prof.events();

    std::optional<stint::event> peer = find(events, "Memcpy PtoP (Device -> Device)");
    REQUIRE(peer != std::nullopt);
    CHECK(peer->kind == stint::event_kind::gpu_memcpy);
    CHECK(peer->device == stint::device{stint::device_type::cuda, 0});
    CHECK(events.launcher(*peer) == find(events, "aten::to"));
    const stint::device_args* copy = events.device_args_of(*peer);
    REQUIRE(copy != nullptr);
    CHECK(copy->peer);
    CHECK(copy->src_device == 0);
    CHECK(copy->dst_device == 1);
    CHECK(copy->bytes == (1u << 16));

    std::optional<stint::event> stream_sync = find(events, "Stream Sync");
    std::optional<stint::event> context_sync = find(events, "Context Sync");
    REQUIRE(stream_sync != std::nullopt);
    REQUIRE(context_sync != std::nullopt);
    CHECK(count_named(events, "Context Sync") == 1);  // the unplaceable one is counted, not drawn
    CHECK(stream_sync->kind == stint::event_kind::cuda_sync);
    CHECK(stream_sync->device.index == 0);  // context 1: the peer copy's
    CHECK(stream_sync->stream == 7);
    CHECK(context_sync->device.index == 1);  // context 2: the kernel's
    CHECK(context_sync->stream == no_stream);
    CHECK(prof.stats().device_loss.unknown_records == 1);

    std::optional<stint::event> overhead = find(events, "CUPTI Activity Buffer Request");
    REQUIRE(overhead != std::nullopt);
    CHECK(overhead->kind == stint::event_kind::overhead);
    CHECK(!overhead->on_device());
    CHECK(overhead->parent == stint::no_index);

    // The trace draws the stream sync on its stream's sync row and the context sync on the device's own
    // row with stream -1, as Kineto does.
    stint_test::temp_dir dir;
    prof.export_chrome_trace(dir.file("syncs.json"));
    const nlohmann::json trace = stint_test::read_json(dir.file("syncs.json"));
    int seen = 0;
    for (const auto& e : trace["traceEvents"]) {
        if (e.value("cat", "") != "cuda_sync") continue;
        if (e["name"] == "Stream Sync") {
            CHECK(e["pid"] == 0);
            CHECK(e["tid"] == 1'000'007);
            CHECK(e["args"]["stream"] == 7);
            ++seen;
        } else if (e["name"] == "Context Sync") {
            CHECK(e["pid"] == 1);
            CHECK(e["tid"] == 1);
            CHECK(e["args"]["stream"] == -1);
            ++seen;
        }
    }
    CHECK(seen == 2);
}

TEST_CASE("cupti: test_mem_leak with profile_memory beside cuda_activities: resident memory stays flat") {
    using both = stint::config<stint::cuda_activities, stint::profile_memory>;
    stint_test::use_fake_cupti();
    const auto samples = stint_test::memory_after_sessions([] {
        fake().pushed.clear();
        stint::profiler_options<both> options;
        options.sync_device_on_stop = false;
        stint::profiler<both> prof(options);
        prof.start();
        for (int i = 0; i < 1024; ++i) {
            STINT_OP(both, "aten::add");
            std::vector<float, stint::tracking_allocator<float>> temporary(64);
            temporary[0] = static_cast<float>(i);
        }
        prof.stop();
        REQUIRE(prof.stats().memory_events == 2 * 1024);
        REQUIRE(prof.stats().device_status == "active");
    });
    const std::int64_t growth = stint_test::sustained_growth(samples);
    MESSAGE("after each session (resident, held by the chunk pool, rest):\n" << stint_test::describe(samples)
            << "sustained growth of the rest: " << growth << " bytes");
    // What the pool holds stays within its bound however many sessions ran.
    CHECK(samples.back().held <= static_cast<std::int64_t>(stint::detail::chunk_pool::default_retained_bytes));
    // Sanitizers' allocators keep freed memory in quarantine: resident memory says nothing there.
    if (!stint_test::sanitized) CHECK(growth < stint_test::leak_bound_bytes);
}

// The review of issue 34: each defect, shown with the stand-in.

namespace {

// A CUPTI clock of its own (ns, another origin) for a library that ignores the timestamp callback.
std::uint64_t cupti_own_ns() {
    const double ns = static_cast<double>(stint::read_ticks()) * stint::detail::the_registry().calibration().ns_per_tick;
    return std::uint64_t{1'700'000'000'000'000'000} + static_cast<std::uint64_t>(ns);
}

void spin_for_us(double us) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double, std::micro>(us);
    while (std::chrono::steady_clock::now() < until) {
    }
}

// Records one op with a kernel between `clock`'s readings inside it; returns the op's external id.
struct launched {
    std::uint64_t id = 0;
    std::uint64_t k0 = 0;
    std::uint64_t k1 = 0;
};
launched op_with_kernel(std::uint64_t (*clock)()) {
    launched l;
    STINT_OP(gpu, "op");
    l.id = fake().pushed.back();
    l.k0 = clock();
    spin_for_us(200);
    l.k1 = clock();
    return l;
}

void deliver_kernel(const launched& l) {
    buffer_writer b;
    b.add(external(1, l.id));
    b.add(kernel("k", l.k0, l.k1, 1));
    b.finish();
}

}  // namespace

TEST_CASE("cupti: a registered timestamp callback that cuptiGetTimestamp does not read is trusted, and said unverified") {
    stint_test::use_fake_cupti();
    fake().own_clock = &cupti_own_ns;  // cuptiGetTimestamp reads another clock than the records use
    stint::profiler<gpu> prof(no_sync());
    prof.start();
    const launched l = op_with_kernel(&stint::read_ticks);
    deliver_kernel(l);
    prof.stop();
    CHECK(prof.stats().device_loss.out_of_window_records == 0);
    const auto k = find(prof.events(), "k");
    REQUIRE(k != std::nullopt);
    CHECK(prof.events().launcher(*k) == find(prof.events(), "op"));
    const std::string unverified = "ticks (cuptiActivityRegisterTimestampCallback; unverified: cuptiGetTimestamp "
                                   "does not read the callback)";
    CHECK(prof.events().device().clock_alignment == unverified);
    CHECK(prof.events().device().clock_error_ns == 0);
    CHECK(prof.stats().device_status == "active");
    stint_test::temp_dir dir;
    prof.export_chrome_trace(dir.file("t.json"));
    const nlohmann::json device = stint_test::read_json(dir.file("t.json"))["stint"]["device"];
    CHECK(device["clock_alignment"] == unverified);
    CHECK(device["clock_error_ns"] == 0);
}

TEST_CASE("cupti: without the timestamp callback, CUPTI's clock is mapped by a line over at least 10 ms") {
    stint_test::use_fake_cupti();
    fake().timestamp_result = CUPTI_ERROR_NOT_SUPPORTED;
    fake().own_clock = &cupti_own_ns;
    stint::profiler<gpu> prof(no_sync());
    const auto t0 = std::chrono::steady_clock::now();
    prof.start();
    const launched l = op_with_kernel(&cupti_own_ns);
    deliver_kernel(l);
    prof.stop();
    CHECK(std::chrono::steady_clock::now() - t0 >= std::chrono::milliseconds(10));
    const stint::device_report& report = prof.events().device();
    CHECK(report.clock_alignment == "linear (CUPTI's clock in ns, mapped to ticks over the session)");
    CHECK(report.clock_error_ns > 0);
    CHECK(report.clock_error_ns < 20'000);
    CHECK(prof.stats().device_loss.lost() == 0);
    const auto k = find(prof.events(), "k");
    const auto op = find(prof.events(), "op");
    REQUIRE(k != std::nullopt);
    REQUIRE(op != std::nullopt);
    // The kernel lies inside its op, as it ran, within the mapping's error and a tick.
    const double slack = report.clock_error_ns + 100;
    CHECK(static_cast<double>(k->start_ns) >= static_cast<double>(op->start_ns) - slack);
    CHECK(static_cast<double>(k->end_ns) <= static_cast<double>(op->end_ns) + slack);
    CHECK(static_cast<double>(k->duration_ns()) == doctest::Approx(static_cast<double>(l.k1 - l.k0)).epsilon(0.02));
}

TEST_CASE("cupti: every session registers its callbacks again: another client's session in between takes nothing") {
    stint_test::use_fake_cupti();
    stint::profiler<gpu> prof(no_sync());
    prof.start();
    prof.stop();
    // Kineto's session in between: its own callbacks, its own thread-id type.
    static int foreign_requests = 0;
    fake().request = [](std::uint8_t** buffer, std::size_t* size, std::size_t* max) {
        ++foreign_requests;
        *buffer = nullptr;
        *size = 0;
        *max = 0;
    };
    fake().complete = [](CUcontext, std::uint32_t, std::uint8_t*, std::size_t, std::size_t) {};
    const std::size_t registrations = fake().registrations;
    prof.start();
    CHECK(fake().registrations == registrations + 1);
    CHECK(fake().thread_id_type == CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM);
    const launched l = op_with_kernel(&stint::read_ticks);
    deliver_kernel(l);
    prof.stop();
    CHECK(foreign_requests == 0);
    CHECK(find(prof.events(), "k") != std::nullopt);
    CHECK(prof.stats().device_status == "active");
    // The thread-id type is the process's: stint's session leaves it as it found it.
    CHECK(fake().thread_id_type == CUPTI_ACTIVITY_THREAD_ID_TYPE_DEFAULT);
    // stint's ids are of a kind Kineto does not push.
    for (const CUpti_ExternalCorrelationKind kind : fake().pushed_kinds) {
        CHECK(kind == CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM2);
    }
    CHECK(!fake().pushed_kinds.empty());
}

TEST_CASE("cupti: Kineto's correlation ids link nothing of stint's, even when their numbers collide") {
    stint_test::use_fake_cupti();
    stint::profiler<gpu> prof(no_sync());
    prof.start();
    const launched l = op_with_kernel(&stint::read_ticks);
    {
        buffer_writer b;
        b.add(external(1, l.id, CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0));  // Kineto's op id, same number
        b.add(kernel("theirs", l.k0, l.k1, 1));
        b.finish();
    }
    prof.stop();
    const auto k = find(prof.events(), "theirs");
    REQUIRE(k != std::nullopt);
    CHECK(prof.events().launcher(*k) == std::nullopt);
    CHECK(prof.stats().device_loss.unlinked_records == 1);
}

TEST_CASE("cupti: another client that takes the buffers during a session is said in the status and counted") {
    stint_test::use_fake_cupti();
    const std::size_t held_before = stint::detail::the_cupti_collector().held_bytes();
    stint::profiler<gpu> prof(no_sync());
    prof.start();
    buffer_writer mine;  // handed out by stint's callback
    mine.add(kernel("lost", stint::read_ticks(), stint::read_ticks() + 1, 1));
    static std::vector<std::uint8_t*> taken;
    taken.clear();
    fake().complete = [](CUcontext, std::uint32_t, std::uint8_t* buffer, std::size_t, std::size_t) {
        taken.push_back(buffer);  // the other client now owns it
    };
    mine.finish();
    prof.stop();
    REQUIRE(taken.size() == 1);
    std::free(taken[0]);
    const std::string status = prof.stats().device_status;
    CHECK(status.starts_with("active, shared: another CUPTI client registered its own buffer callbacks"));
    CHECK(status.find("took 1 of the 1 activity buffers") != std::string::npos);
    CHECK(prof.stats().device_loss.foreign_buffers == 1);
    CHECK(stint::detail::the_cupti_collector().held_bytes() == held_before);  // the other client owns it now
    stint_test::temp_dir dir;
    prof.export_chrome_trace(dir.file("t.json"));
    const nlohmann::json device = stint_test::read_json(dir.file("t.json"))["stint"]["device"];
    CHECK(device["status"] == status);
    CHECK(device["foreign_buffers"] == 1);
    // The next session registers again and collects.
    prof.start();
    deliver_kernel(op_with_kernel(&stint::read_ticks));
    prof.stop();
    CHECK(prof.stats().device_status == "active");
    CHECK(find(prof.events(), "k") != std::nullopt);
}

TEST_CASE("cupti: torn down after a synchronised session, attached again by the next; never under a subscriber") {
    stint_test::use_fake_cupti(stint_test::fake_driver());
    stint::profiler<gpu> prof;  // syncs at stop: the default
    prof.start();
    {
        STINT_OP(gpu, "spans the stop");
        prof.stop();
        CHECK(fake().finalized == 1);
        CHECK(prof.events().device().torn_down);
        CHECK(fake().subscribed == 0);  // the probe's subscription is gone
    }
    CHECK(fake().pops == 0);  // CUPTI's stacks went with it: a pop would only attach CUPTI again
    const std::size_t registrations = fake().registrations;
    prof.start();
    CHECK(fake().registrations == registrations + 1);
    deliver_kernel(op_with_kernel(&stint::read_ticks));
    CHECK(fake().pops == 1);
    prof.stop();
    CHECK(find(prof.events(), "k") != std::nullopt);
    CHECK(fake().finalized == 2);

    SUBCASE("not when asked not to, nor without the sync at stop") {
        auto options = stint::profiler_options<gpu>{};
        options.teardown_cupti_on_stop = false;
        stint::profiler<gpu> kept(options);
        kept.start();
        kept.stop();
        stint::profiler<gpu> unsynced(no_sync());
        unsynced.start();
        unsynced.stop();
        CHECK(fake().finalized == 2);
        CHECK_FALSE(unsynced.events().device().torn_down);
    }
    SUBCASE("not while another client is subscribed: it would lose CUPTI too") {
        fake().subscribe_result = CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
        prof.start();
        prof.stop();
        CHECK(fake().finalized == 2);
        CHECK(prof.stats().device_status.starts_with("active, shared: another CUPTI client is subscribed"));
    }
}

TEST_CASE("cupti: a buffer delivered between sessions is stale in the next one, never out of its window") {
    stint_test::use_fake_cupti();
    stint::profiler<gpu> prof(no_sync());
    prof.start();
    prof.stop();
    {
        buffer_writer late;  // filled after the stop, still in CUPTI: the next start's flush delivers it
        const std::uint64_t t = stint::read_ticks();
        late.add(kernel("late", t, t + 1, 1));
        late.add(kernel("late too", t + 2, t + 3, 1));
        late.finish();
    }
    prof.start();
    prof.stop();
    CHECK(prof.stats().device_loss.stale_records == 2);
    CHECK(prof.stats().device_loss.out_of_window_records == 0);
    CHECK(prof.stats().device_loss.foreign_buffers == 0);
}

TEST_CASE("cupti: overheads sit where their object is, their details freed, every kind named") {
    stint_test::use_fake_cupti();
    stint::profiler<gpu> prof(no_sync());
    prof.start();
    const std::uint64_t t = stint::read_ticks();
    constexpr std::uint32_t garbage = 0xDEADBEEF;  // a stream id CUPTI does not fill for a device or context
    {
        buffer_writer b;
        b.add(stint_test::device_overhead_record(CUPTI_ACTIVITY_OBJECT_DEVICE, CUPTI_ACTIVITY_OVERHEAD_UVM_ACTIVITY_INIT,
                                                 t + 1, t + 2, 0, garbage));
        b.add(stint_test::device_overhead_record(CUPTI_ACTIVITY_OBJECT_CONTEXT,
                                                 CUPTI_ACTIVITY_OVERHEAD_CUPTI_INSTRUMENTATION, t + 3, t + 4, 0,
                                                 garbage));
        b.add(stint_test::device_overhead_record(CUPTI_ACTIVITY_OBJECT_STREAM, CUPTI_ACTIVITY_OVERHEAD_CUPTI_RESOURCE,
                                                 t + 5, t + 6, 0, 7));
        b.add(stint_test::overhead_record(t + 7, t + 8, std::malloc(16)));
        b.finish();
    }
    wait_past(t + 10);
    prof.stop();
    {
        buffer_writer stale;  // a later session's stale buffer frees its details too (LeakSanitizer checks)
        stale.add(stint_test::overhead_record(t + 9, t + 10, std::malloc(16)));
        stale.complete();
    }
    const stint::event_list& events = prof.events();
    const auto uvm = find(events, "CUPTI UVM Activity Init");
    const auto instrumentation = find(events, "CUPTI Instrumentation");
    const auto resource = find(events, "CUPTI Resource");
    REQUIRE(uvm != std::nullopt);
    REQUIRE(instrumentation != std::nullopt);
    REQUIRE(resource != std::nullopt);
    CHECK(uvm->device == stint::device{stint::device_type::cuda, 0});
    CHECK(uvm->stream == stint::detail::cupti_no_stream);
    CHECK(instrumentation->stream == stint::detail::cupti_no_stream);
    CHECK(resource->stream == 7);
    CHECK(find(events, "CUPTI Activity Buffer Request")->on_device() == false);
    for (const stint::event& e : events) CHECK(e.stream != garbage);
    prof.start();
    prof.stop();
    CHECK(prof.stats().device_loss.stale_records == 1);
}

TEST_CASE("cupti: synchronisations are off by default, as torch's; stint's own sync at stop is never collected") {
    stint_test::use_fake_cupti(stint_test::fake_driver());
    const auto has = [](const std::vector<CUpti_ActivityKind>& kinds, CUpti_ActivityKind kind) {
        return std::find(kinds.begin(), kinds.end(), kind) != kinds.end();
    };
    {
        stint::profiler<gpu> prof;
        prof.start();
        prof.stop();
        CHECK_FALSE(has(fake().enabled, CUPTI_ACTIVITY_KIND_SYNCHRONIZATION));
        CHECK(has(fake().enabled, CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL));
    }
    fake().enabled.clear();
    fake().disabled.clear();
    stint::profiler_options<gpu> options;
    options.enable_cuda_sync_events = true;
    stint::profiler<gpu> prof(options);
    prof.start();
    CHECK(has(fake().enabled, CUPTI_ACTIVITY_KIND_SYNCHRONIZATION));
    prof.stop();
    // When stint synchronised the device, sync records were already off and kernels still on.
    CHECK(has(fake().disabled_at_sync, CUPTI_ACTIVITY_KIND_SYNCHRONIZATION));
    CHECK_FALSE(has(fake().disabled_at_sync, CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL));
}

TEST_CASE("cupti: a driver too old for this CUPTI is said up front, before any session") {
    stint_test::use_fake_cupti(stint_test::fake_driver(12080));
    std::vector<std::string> warnings;
    auto previous = stint::set_warning_handler([&](std::string_view text) { warnings.emplace_back(text); });
    CHECK(stint::supported_activities() == stint::activity_set{stint::activity::cpu});
    const std::string reason = stint::detail::the_cupti_collector().unavailable_reason();
    CHECK(reason == "the NVIDIA driver supports CUDA 12.8 (cuDriverGetVersion 12080); CUPTI 130001 needs a driver "
                    "for CUDA 13.0 or newer (CUPTI has no minor version compatibility; R580 or newer for CUDA 13.0). "
                    "Fix: update the driver, use the CUPTI of the driver's CUDA version (STINT_CUPTI_LIBRARY), or "
                    "profile the CPU only");
    CHECK(fake().enabled.empty());
    CHECK(warnings.size() == 1);
    stint::set_warning_handler(previous);
    stint_test::use_fake_cupti(stint_test::fake_driver(13000));
    CHECK(stint::supported_activities() == stint::activity_set{stint::activity::cpu, stint::activity::cuda});
    CHECK(stint::detail::driver_version_needed(130001) == 13000);
    // CUPTI has no minor version compatibility: a 13.1 CUPTI needs a 13.1 driver, a 13.0 one any 13 driver.
    CHECK(stint::detail::driver_version_needed(130100) == 13010);
    CHECK(stint::detail::driver_version_needed(130000) == 13000);
    CHECK(stint::detail::driver_version_needed(131205) == 13120);
    stint::detail::cuda_driver_table d = stint_test::fake_driver(13000);
    CHECK(stint::detail::driver_version_problem(d, 130001).empty());
    CHECK(stint::detail::driver_version_problem(d, 130100).starts_with(
        "the NVIDIA driver supports CUDA 13.0 (cuDriverGetVersion 13000); CUPTI 130100 needs a driver for CUDA 13.1"));
    stint_test::fake_driver(13010);
    CHECK(stint::detail::driver_version_problem(d, 130100).empty());
    CHECK(stint::detail::driver_version_problem(d, 130200) != "");
}

TEST_CASE("cupti: not found: every place tried is listed, with the override to set") {
    stint_test::temp_dir dir;
    const std::string env = dir.file("venv");
    const std::string wheel_dir = env + "/lib/python3.11/site-packages/nvidia/cu13/lib";
    REQUIRE(std::system(("mkdir -p '" + wheel_dir + "' && echo not-an-elf > '" + wheel_dir + "/libcupti.so.13'").c_str()) ==
            0);
    struct restore {
        ~restore() {
            ::unsetenv("VIRTUAL_ENV");
            ::unsetenv("CUDA_HOME");
        }
    } restore_env;
    ::setenv("VIRTUAL_ENV", env.c_str(), 1);
    ::setenv("CUDA_HOME", "/nonexistent/cuda", 1);
    const std::vector<std::string> candidates = stint::detail::cupti_library_candidates(nullptr);
    const auto listed = [&](const std::string& path) {
        return std::find(candidates.begin(), candidates.end(), path) != candidates.end();
    };
    CHECK(candidates.front() == "libcupti.so.13");
    CHECK(listed("/nonexistent/cuda/lib64/libcupti.so.13"));
    CHECK(listed("/nonexistent/cuda/extras/CUPTI/lib64/libcupti.so.13"));
    CHECK(listed("/opt/cuda/lib64/libcupti.so.13"));
    CHECK(listed(wheel_dir + "/libcupti.so.13"));
    CHECK(stint::detail::cupti_library_candidates("/x/libcupti.so.13") == std::vector<std::string>{"/x/libcupti.so.13"});

    const stint::detail::cupti_library none = stint::detail::load_cupti_library_from(
        {"libstint-no-such-cupti.so.13", "/nonexistent/cuda/lib64/libcupti.so.13", wheel_dir + "/libcupti.so.13"},
        false);
    INFO(none.error);
    CHECK(none.error.starts_with("cannot load libstint-no-such-cupti.so.13 (CUPTI 13, from the CUDA 13 toolkit or "
                                 "pip's nvidia-cuda-cupti); tried libstint-no-such-cupti.so.13 ("));
    CHECK(none.error.find(", /nonexistent/cuda/lib64/libcupti.so.13, ") != std::string::npos);
    CHECK(none.error.find(wheel_dir + "/libcupti.so.13 (") != std::string::npos);  // there, but not a library
    CHECK(none.error.ends_with("Fix: set STINT_CUPTI_LIBRARY to its path, or CUDA_HOME to the toolkit"));
}

TEST_CASE("cupti: the collector records each kind's record size as the library walked it") {
    stint_test::use_fake_cupti();
    auto& collector = stint::detail::the_cupti_collector();
    REQUIRE(collector.start({}));
    const std::uint64_t t = stint::read_ticks();
    {
        buffer_writer b;
        b.add(external(1, 1));
        b.add(api(211, t, t + 1, 1));
        b.add(kernel("k", t + 1, t + 2, 1));
        b.add(memcpy_record(t + 2, t + 3, 1, 8));
        b.add(memset_record(t + 3, t + 4, 1, 8));
        b.finish();
    }
    const stint::detail::device_capture capture = collector.stop(false);
    using stint::detail::cupti_kernel;
    const auto& strides = capture.record_strides;
    CHECK(strides.at(CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION) == sizeof(stint::detail::cupti_external_correlation));
    CHECK(strides.at(CUPTI_ACTIVITY_KIND_RUNTIME) == sizeof(stint::detail::cupti_api_call));
    CHECK(strides.at(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) == sizeof(cupti_kernel));
    CHECK(strides.at(CUPTI_ACTIVITY_KIND_MEMCPY) == sizeof(stint::detail::cupti_memcpy));
    CHECK(strides.count(CUPTI_ACTIVITY_KIND_MEMSET) == 0);  // the last record: nothing after it to measure by
}

namespace {
std::optional<launched> queued_kernel;  // a kernel the fake device finishes when its context is synchronised
}  // namespace

TEST_CASE("cupti: sync_device_on_stop, the default, waits at stop() for the device work still queued") {
    // The fake driver's cuCtxSynchronize finishes the queued kernel: its record reaches CUPTI's buffer
    // only then, as a real device's does when the work ends.
    stint::detail::cuda_driver_table driver = stint_test::fake_driver();
    driver.ctx_synchronize = [] {
        fake().disabled_at_sync = fake().disabled;
        if (queued_kernel) {
            deliver_kernel(*queued_kernel);
            queued_kernel.reset();
        }
        return CUDA_SUCCESS;
    };
    CHECK(stint::profiler_options<gpu>{}.sync_device_on_stop);
    SUBCASE("on by default: the kernel is in the session, under its op") {
        stint_test::use_fake_cupti(driver);
        stint::profiler<gpu> prof;
        prof.start();
        queued_kernel = op_with_kernel(&stint::read_ticks);
        prof.stop();
        CHECK_FALSE(queued_kernel.has_value());  // stop() synchronised the device
        const std::optional<stint::event> k = find(prof.events(), "k");
        REQUIRE(k != std::nullopt);
        CHECK(k->kind == stint::event_kind::kernel);
        CHECK(prof.events().launcher(*k) == find(prof.events(), "op"));
    }
    SUBCASE("off: stop() does not wait, and the kernel still queued is not in the session") {
        stint_test::use_fake_cupti(driver);
        stint::profiler<gpu> prof(no_sync());
        prof.start();
        queued_kernel = op_with_kernel(&stint::read_ticks);
        prof.stop();
        CHECK(queued_kernel.has_value());
        CHECK(find(prof.events(), "k") == std::nullopt);
        CHECK(find(prof.events(), "op") != std::nullopt);
    }
    queued_kernel.reset();
}

// Issue 45: beside another CUPTI client, as a libtorch program meets Kineto.

namespace {

// A stand-in Kineto: its own buffer callbacks and buffers (in a map of its own, as Kineto keeps them),
// optionally its own timestamp callback (Kineto registers one at each start), its own session.
struct kineto_standin {
    std::vector<std::uint8_t*> mine;     // handed out, not back
    std::vector<std::uint8_t*> strays;   // buffers it did not hand out that reached its callback
    std::size_t completed = 0;

    static kineto_standin& the() {
        static kineto_standin k;
        return k;
    }
    static void CUPTIAPI request(std::uint8_t** buffer, std::size_t* size, std::size_t* max_records) {
        *buffer = static_cast<std::uint8_t*>(std::aligned_alloc(8, 1 << 16));
        *size = 1 << 16;
        *max_records = 0;
        the().mine.push_back(*buffer);
    }
    static void CUPTIAPI complete(CUcontext, std::uint32_t, std::uint8_t* buffer, std::size_t, std::size_t) {
        auto& k = the();
        const auto it = std::find(k.mine.begin(), k.mine.end(), buffer);
        if (it == k.mine.end()) {
            k.strays.push_back(buffer);
            return;
        }
        k.mine.erase(it);
        ++k.completed;
        std::free(buffer);
    }
    static std::uint64_t CUPTIAPI own_clock() { return cupti_own_ns(); }

    /// Kineto's start: its callbacks (and clock), then its kinds, through the same CUPTI as stint.
    void start(bool own_timestamps) {
        const stint::detail::cupti_table t = stint_test::fake_table();
        t.register_callbacks(&request, &complete);
        if (own_timestamps) t.register_timestamp_callback(&own_clock);
        t.enable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
    }
    /// Kineto's stop: it flushes; it frees what reached it; the strays are freed by the test (their owner).
    void stop() { stint_test::fake_table().flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED); }
    void reset() {
        for (std::uint8_t* b : mine) std::free(b);
        mine.clear();
        strays.clear();
        completed = 0;
    }
};

}  // namespace

TEST_CASE("cupti: a Kineto session across stint's start and stop: stint decodes and frees only its own buffers") {
    stint_test::use_fake_cupti(stint_test::fake_driver());
    auto& kineto = kineto_standin::the();
    kineto.reset();
    const std::size_t held_before = stint::detail::the_cupti_collector().held_bytes();
    kineto.start(false);
    std::uint8_t* theirs = nullptr;
    {
        buffer_writer done;  // a full one: CUPTI completes it at the next flush
        const std::uint64_t t = stint::read_ticks();
        done.add(kernel("theirs, full", t, t + 1, 1));
        done.finish();
        buffer_writer b;  // Kineto's buffer still being filled, mid-session: only a forced flush ends it
        REQUIRE(b.granted());
        theirs = b.data();
        b.add(kernel("theirs", t, t + 1, 1));
        b.finish_partial();
    }
    REQUIRE(kineto.mine.size() == 2);
    stint::profiler<gpu> prof;  // synchronises at stop: would tear CUPTI down alone
    prof.start();               // flushes first: Kineto's full buffer goes home, then stint registers
    CHECK(kineto.completed == 1);
    REQUIRE(kineto.mine.size() == 1);
    deliver_kernel(op_with_kernel(&stint::read_ticks));
    prof.stop();  // the forced flush completes Kineto's other buffer to stint's callbacks
    // Kineto's buffer: neither decoded nor freed (ASan would catch a read of freed memory below).
    CHECK(find(prof.events(), "theirs") == std::nullopt);
    CHECK(find(prof.events(), "theirs, full") == std::nullopt);
    CHECK(find(prof.events(), "k") != std::nullopt);
    stint::detail::cupti_kernel intact{};
    std::memcpy(&intact, theirs, sizeof(intact));
    const CUpti_ActivityKind intact_kind = intact.kind;
    CHECK(intact_kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
    CHECK(std::string_view(intact.name) == "theirs");
    CHECK(stint::detail::the_cupti_collector().held_bytes() == held_before);
    CHECK(prof.stats().device_loss.foreign_buffers == 1);
    const std::string status = prof.stats().device_status;
    CHECK(status == "active, shared: 1 activity buffer of another CUPTI client reached stint's callbacks (it was "
                    "collecting when stint registered its own); left untouched: not decoded, not freed, their "
                    "records lost to that client");
    // CUPTI stays attached for Kineto, now and for the rest of the process.
    CHECK(fake().finalized == 0);
    CHECK_FALSE(prof.events().device().torn_down);
    kineto.stop();
    // Every later session gets its buffers (the budget was never charged for Kineto's) and says why CUPTI
    // stays attached.
    for (int i = 0; i < 3; ++i) {
        prof.start();
        deliver_kernel(op_with_kernel(&stint::read_ticks));
        prof.stop();
        CHECK(find(prof.events(), "k") != std::nullopt);
        CHECK(prof.stats().device_loss.rejected_buffers == 0);
        CHECK(prof.stats().device_status == "active, shared: CUPTI left attached: " + status.substr(16));
    }
    CHECK(fake().finalized == 0);
    CHECK(stint::detail::the_cupti_collector().held_bytes() == held_before);
    kineto.reset();  // frees `theirs`, its own (still in its map: CUPTI never completed it to Kineto)
}

TEST_CASE("cupti: Kineto starting during stint's session takes stint's buffers and clock: both said, nothing freed twice") {
    stint_test::use_fake_cupti(stint_test::fake_driver());
    auto& kineto = kineto_standin::the();
    kineto.reset();
    const std::size_t held_before = stint::detail::the_cupti_collector().held_bytes();
    stint::profiler<gpu> prof;
    prof.start();
    const std::uint64_t t = stint::read_ticks();
    buffer_writer mine;  // stint's, in CUPTI when Kineto starts
    mine.add(kernel("lost", t, t + 1, 1));
    mine.finish();
    kineto.start(true);  // its callbacks and its clock, mid-session
    prof.stop();         // the forced flush hands stint's buffer to Kineto's callback
    REQUIRE(kineto.strays.size() == 1);
    CHECK(kineto.strays[0] == mine.data());
    const std::string status = prof.stats().device_status;
    CHECK(status.starts_with("active, shared: another CUPTI client registered its own buffer callbacks during the "
                             "session and took 1 of the 1 activity buffers"));
    CHECK(status.find("; another CUPTI client registered its own timestamp callback during the session: device "
                      "times since then are on its clock") != std::string::npos);
    CHECK(prof.events().device().clock_alignment.starts_with("mixed: "));
    CHECK(prof.stats().device_loss.foreign_buffers == 1);
    CHECK(stint::detail::the_cupti_collector().held_bytes() == held_before);
    CHECK(fake().finalized == 0);
    std::free(kineto.strays[0]);  // Kineto owns it now
    kineto.reset();
}

TEST_CASE("cupti: a query initialises no CUDA; the first session does, once") {
    stint_test::use_fake_cupti(stint_test::fake_driver());
    CHECK(stint::supported_activities() == stint::activity_set{stint::activity::cpu, stint::activity::cuda});
    CHECK(stint::detail::the_cupti_collector().available());
    CHECK(fake().driver_inits == 0);
    stint::profiler<gpu> prof(no_sync());
    prof.start();
    prof.stop();
    prof.start();
    prof.stop();
    CHECK(fake().driver_inits == 1);
    // Where CUDA was initialised already, a query counts the devices: none is said up front.
    stint::detail::cuda_driver_table none = stint_test::fake_driver();
    none.device_get_count = [](int* n) {
        *n = 0;
        return CUDA_SUCCESS;
    };
    stint_test::use_fake_cupti(none);
    CHECK(stint::detail::the_cupti_collector().unavailable_reason() == "no CUDA device");
    CHECK(fake().driver_inits == 0);
    // Where it was not, the first session finds out, and says so.
    none.device_get_count = [](int* n) {
        *n = 0;
        return fake().driver_inits == 0 ? CUDA_ERROR_NOT_INITIALIZED : CUDA_SUCCESS;
    };
    stint_test::use_fake_cupti(none);
    CHECK(stint::detail::the_cupti_collector().available());
    prof.start();
    prof.stop();
    CHECK(fake().driver_inits == 1);
    CHECK(prof.stats().device_status == "unavailable: no CUDA device");
    CHECK(fake().enabled.empty());
}

TEST_CASE("cupti: a libcupti of another major already loaded is reported, and nothing of stint's loaded beside it") {
    using stint::detail::loaded_object;
    CHECK(stint::detail::cupti_major_in_name("/site-packages/nvidia/cuda_cupti/lib/libcupti.so.12") == 12);
    CHECK(stint::detail::cupti_major_in_name("libcupti.so.13.0.85") == 13);
    CHECK(stint::detail::cupti_major_in_name("/usr/lib/libcuptiX.so.12") == 0);
    CHECK(stint::detail::cupti_major_in_name("libcupti.so") == 0);
    const std::vector<loaded_object> cu12_torch = {
        {"", {"libc.so.6"}},
        {"/venv/torch/lib/libtorch_cuda.so", {"libcupti.so.12", "libc.so.6"}},
        {"/venv/nvidia/cuda_cupti/lib/libcupti.so.12", {"libc.so.6"}},
    };
    CHECK(stint::detail::other_cupti_loaded(cu12_torch, 13) == "/venv/nvidia/cuda_cupti/lib/libcupti.so.12");
    CHECK(stint::detail::other_cupti_loaded(cu12_torch, 12).empty());
    CHECK(stint::detail::cupti_clients(cu12_torch) == std::vector<std::string>{"/venv/torch/lib/libtorch_cuda.so"});
    // The real process: the program links libc, and no libcupti (it loads one with dlopen, if at all).
    const std::vector<loaded_object> here = stint::detail::loaded_objects();
    REQUIRE(!here.empty());
    CHECK(here.front().path.empty());  // the program itself
    const bool program_links_libc = std::any_of(here.front().needed.begin(), here.front().needed.end(),
                                                [](const std::string& n) { return n.starts_with("libc.so"); });
    CHECK(program_links_libc);
    CHECK(stint::detail::cupti_clients(here).empty());
}

TEST_CASE("cupti: CUPTI 13's cuptiSubscribe_v2 names the other subscriber in the status") {
    stint_test::use_fake_cupti(stint_test::fake_driver(), true);
    fake().subscribe_result = CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
    fake().subscriber_name = "CUPTI for Nsight Systems";
    stint::profiler<gpu> prof;
    prof.start();
    prof.stop();
    CHECK(prof.stats().device_status == "active, shared: another CUPTI client is subscribed in this process ('CUPTI "
                                        "for Nsight Systems', named by cuptiSubscribe_v2); CUPTI is left attached for it");
    CHECK(fake().finalized == 0);
}

TEST_CASE("cupti: the teardown runs from an API exit callback, once, while 4 threads launch") {
    stint_test::use_fake_cupti(stint_test::fake_driver());
    const stint::detail::cuda_driver_table driver = stint_test::fake_driver();
    std::atomic<bool> go{true};
    std::atomic<std::uint64_t> launches{0};
    std::vector<std::thread> threads;
    for (int i = 0; i < 4; ++i) {
        threads.emplace_back([&] {
            while (go.load(std::memory_order_relaxed)) {
                int version = 0;
                driver.driver_get_version(&version);  // a driver call: CUPTI's exit callback may run here
                launches.fetch_add(1, std::memory_order_relaxed);
            }
        });
    }
    stint::profiler<gpu> prof;
    for (int session = 1; session <= 20; ++session) {
        prof.start();
        deliver_kernel(op_with_kernel(&stint::read_ticks));
        prof.stop();
        CHECK(prof.events().device().torn_down);
        CHECK(find(prof.events(), "k") != std::nullopt);
        const std::lock_guard lock(fake().mutex);
        CHECK(fake().finalized == static_cast<std::size_t>(session));
        CHECK(fake().finalized_at_exit == static_cast<std::size_t>(session));  // never outside a callback
        CHECK((fake().callback == nullptr));  // detached: no subscriber is left
    }
    go.store(false);
    for (std::thread& t : threads) t.join();
    CHECK(launches.load() > 0);
}

TEST_CASE("cupti: no API exit callback comes: CUPTI stays attached, and stint's teardown subscriber goes") {
    stint_test::use_fake_cupti(stint_test::fake_driver());
    fake().exit_callbacks = false;
    stint::profiler<gpu> prof;
    prof.start();
    prof.stop();
    CHECK(fake().finalized == 0);
    CHECK_FALSE(prof.events().device().torn_down);
    CHECK(fake().subscribed == 0);
    CHECK(prof.stats().device_status == "active");
    // The next session finds no other subscriber (not its own left behind), and tears down when it can.
    fake().exit_callbacks = true;
    prof.start();
    prof.stop();
    CHECK(prof.stats().device_status == "active");
    CHECK(fake().finalized == 1);
    CHECK(fake().finalized_at_exit == 1);
}

TEST_CASE("cupti: a libcupti.so.12 in the process turns device collection off with the reason, loading nothing") {
    // Any small library stands for a cu12 PyTorch's CUPTI: the loader knows it by the path it was given.
    stint_test::temp_dir dir;
    const std::string cu12 = dir.file("libcupti.so.12");
    REQUIRE(std::system(("cp \"$(ldconfig -p | grep -m1 'libz.so.1 ' | sed 's/.*=> //')\" '" + cu12 + "'").c_str()) == 0);
    void* handle = ::dlopen(cu12.c_str(), RTLD_NOW | RTLD_LOCAL);
    REQUIRE(handle != nullptr);
    std::vector<std::string> warnings;
    auto previous = stint::set_warning_handler([&](std::string_view text) { warnings.emplace_back(text); });
    auto& collector = stint::detail::the_cupti_collector();
    collector.stop_using_test_table();
    CHECK(stint::supported_activities() == stint::activity_set{stint::activity::cpu});
    CHECK(collector.unavailable_reason() ==
          cu12 + " (CUPTI 12) is already loaded in this process, by another CUPTI client (a PyTorch or library built "
                 "for CUDA 12); stint does not load libcupti.so.13 beside it: two CUPTIs would both attach to the "
                 "driver. Fix: use the framework's CUDA 13 build, or profile the CPU only");
    CHECK(collector.report().library == cu12);  // found before any libcupti.so.13 was looked for
    CHECK(collector.report().cupti_version == 0);
    CHECK(warnings.size() == 1);
    stint::set_warning_handler(previous);
    ::dlclose(handle);
    stint_test::use_fake_cupti();
}
