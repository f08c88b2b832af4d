// stint::cuda_activities without a GPU: hand-built CUDA 13 records fed through CUPTI's own callbacks
// (cupti_fake.hpp) to the real collector, decoder and drain; and the real libcupti where no driver is.

#include <doctest/doctest.h>

#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "cupti_fake.hpp"
#include "memory_leak_check.hpp"
#include "reliability/size.hpp"
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

std::optional<stint::event> find(const stint::event_list& events, std::string_view name) {
    for (const stint::event& e : events) {
        if (e.name == name) return e;
    }
    return std::nullopt;
}

std::size_t count_named(const stint::event_list& events, std::string_view name) {
    std::size_t n = 0;
    for (const stint::event& e : events) n += e.name == name ? 1 : 0;
    return n;
}

// Resident bytes less the chunks the registry keeps warm between sessions (bounded on their own).
std::size_t resident_without_cached_chunks() {
    return static_cast<std::size_t>(stint_test::statm_resident_bytes()) -
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
    CHECK(events.device().clock_alignment == "cupti_timestamp_callback");
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
        CHECK(seconds < 1.0);
        CHECK(count_named(prof.events(), "op") == 1000);
        stint_test::temp_dir dir;
        prof.export_chrome_trace(dir.file("cpu_only.json"));
        const nlohmann::json trace = nlohmann::json::parse(stint_test::read_file(dir.file("cpu_only.json")));
        CHECK(trace["traceEvents"].is_array());
        return prof.stats().device_status;
    };
    // These machines have the toolkit's libcupti and no driver.
    const std::string no_driver = run(nullptr);
    INFO(no_driver);
    CHECK((no_driver.starts_with("unavailable: no NVIDIA driver") || no_driver == "active"));
    CHECK(run("/nonexistent/libcupti.so.13").starts_with("unavailable: cannot load /nonexistent/libcupti.so.13: "));
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
    stint::profiler<gpu> prof(no_sync());
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
    const auto samples = stint_test::resident_after_sessions([] {
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
    INFO("resident after each session (bytes): " << nlohmann::json(samples).dump());
    if (!stint_test::sanitized) CHECK(stint_test::largest_late_step(samples) < 100 * 1024);
}
