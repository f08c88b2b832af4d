#include <doctest/doctest.h>

#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "stint/stint.hpp"
#include "stint/analysis/event_tree.hpp"
#include "stint/export/chrome_trace.hpp"
#include "test_util.hpp"

namespace {

using stint_test::string_sink;

constexpr std::uint64_t host_pid = 4242;
constexpr std::uint32_t no_stream = 0xFFFFFFFFU;
constexpr const char* odd_kernel_name = "void fill<\"a\\b\">\n(float*)\t\x01";

stint::device gpu(std::int32_t index) { return {stint::device_type::cuda, index}; }

stint::device_args correlated(std::uint32_t correlation, std::uint32_t cbid = 0) {
    stint::device_args a;
    a.correlation = correlation;
    a.context = 1;
    a.cbid = cbid;
    return a;
}

// Two CPU threads and two GPUs: every kind of device event and API call, linked and unlinked, a CUDA
// graph launch (three kernels, one correlation), losses, and a name that needs escaping.
stint::event_list device_list() {
    stint::detail::event_list_builder b;
    b.set_first_id(100);  // an id of 0 is never written as an External id
    const auto main_thread = b.add_thread({.os_tid = 7, .name = "main"});
    const auto worker = b.add_thread({.os_tid = 8, .name = "worker"});
    const auto mm = b.add(stint::event_kind::cpu_op, "aten::mm", main_thread, 0, 3'500);
    const auto copy = b.add(stint::event_kind::cpu_op, "aten::copy_", main_thread, 3'550, 3'800);
    const auto replay = b.add(stint::event_kind::user_annotation, "graph_replay", main_thread, 6'000, 9'000);
    b.begin_run();

    const auto call = [&](stint::event_kind kind, const char* name, std::uint32_t thread, std::int64_t start,
                          std::int64_t end, stint::device_args args, stint::event_index launcher) {
        const auto i = b.add_api_call(kind, name, thread, start, end, args);
        b.set_launcher(i, launcher);
        return i;
    };
    const auto work = [&](stint::event_kind kind, std::string_view name, stint::device where, std::uint32_t stream,
                          std::int64_t start, std::int64_t end, stint::device_args args,
                          stint::event_index launcher) {
        const auto i = b.add_device_event(kind, name, b.device_track(where, stream), start, end, args);
        b.set_launcher(i, launcher);
        return i;
    };

    call(stint::event_kind::cuda_runtime, "cudaGetDevice", main_thread, 20, 30, correlated(12, 17), mm);
    call(stint::event_kind::cuda_runtime, "cudaLaunchKernel", main_thread, 100, 300, correlated(5, 211), mm);
    call(stint::event_kind::cuda_driver, "cuLaunchKernel", main_thread, 150, 250, correlated(5, 307), mm);
    call(stint::event_kind::cuda_runtime, "cudaMemcpyAsync", main_thread, 500, 600, correlated(6, 41), mm);
    call(stint::event_kind::cuda_runtime, "cudaMemsetAsync", main_thread, 650, 680, correlated(7, 51), mm);
    call(stint::event_kind::cuda_runtime, "cudaStreamSynchronize", main_thread, 700, 3'450, correlated(8, 131), mm);
    call(stint::event_kind::cuda_runtime, "cudaMemcpyPeerAsync", main_thread, 3'600, 3'700, correlated(10, 44), copy);
    call(stint::event_kind::cuda_runtime, "cudaLaunchKernel", worker, 4'800, 4'850, correlated(11, 211),
         stint::no_index);
    call(stint::event_kind::cuda_runtime, "cudaGraphLaunch", main_thread, 6'100, 6'200, correlated(20, 311), replay);

    stint::device_args gemm = correlated(5);
    gemm.grid[0] = 4;
    gemm.grid[1] = 2;
    gemm.grid[2] = 1;
    gemm.block[0] = 128;
    gemm.block[1] = 1;
    gemm.block[2] = 1;
    gemm.registers_per_thread = 32;
    gemm.static_shared_memory = 1'024;
    gemm.dynamic_shared_memory = 512;
    work(stint::event_kind::kernel, "gemm_kernel", gpu(0), 7, 400, 2'000, gemm, mm);

    stint::device_args h2d = correlated(6);
    h2d.bytes = 4'000;
    h2d.copy_kind = 1;
    work(stint::event_kind::gpu_memcpy, "Memcpy HtoD (Pinned -> Device)", gpu(0), 7, 2'100, 3'100, h2d, mm);

    stint::device_args fill = correlated(7);
    fill.bytes = 100;
    work(stint::event_kind::gpu_memset, "Memset (Device)", gpu(0), 13, 3'200, 3'300, fill, mm);

    stint::device_args sync = correlated(8);
    sync.sync_type = 3;
    work(stint::event_kind::cuda_sync, "Stream Sync", gpu(0), 7, 3'350, 3'440, sync, mm);
    stint::device_args context_sync = correlated(9);
    context_sync.sync_type = 4;
    work(stint::event_kind::cuda_sync, "Context Sync", gpu(0), no_stream, 3'360, 3'430, context_sync,
         stint::no_index);

    stint::device_args peer = correlated(10);
    peer.bytes = 1'000;
    peer.copy_kind = 10;
    peer.peer = true;
    peer.src_device = 0;
    peer.dst_device = 1;
    work(stint::event_kind::gpu_memcpy, "Memcpy PtoP (Device -> Device)", gpu(1), 21, 4'000, 4'500, peer, copy);

    stint::device_args orphan = correlated(11);
    orphan.grid[0] = orphan.block[0] = 1;
    orphan.grid[1] = orphan.block[1] = 1;
    orphan.grid[2] = orphan.block[2] = 1;
    work(stint::event_kind::kernel, "orphan_kernel", gpu(1), 21, 5'000, 5'100, orphan, stint::no_index);

    for (int node = 0; node < 3; ++node) {
        stint::device_args graph = correlated(20);
        graph.graph_id = 3;
        graph.graph_node_id = 100 + static_cast<std::uint64_t>(node);
        const std::int64_t start = 6'300 + 100 * node;
        work(stint::event_kind::kernel, "graph_node_" + std::to_string(node), gpu(0), 7, start, start + 100, graph,
             replay);
    }
    work(stint::event_kind::kernel, odd_kernel_name, gpu(1), 21, 7'000, 7'100, correlated(30), replay);

    stint::device_report report;
    report.status = "active";
    report.library = "/usr/local/cuda/lib64/libcupti.so.13";
    report.cupti_version = 28;
    report.cupti_headers = 28;
    report.clock_alignment = "tsc";
    report.loss.dropped_records = 3;
    report.loss.unlinked_records = 2;
    report.loss.out_of_window_records = 1;
    report.loss.gpu_before_launch = 5;
    stint::device_properties h100;
    h100.id = 0;
    h100.name = "NVIDIA \"H100\" 80GB";
    h100.compute_major = 9;
    h100.total_global_memory = 85'000'000'000;
    h100.multiprocessors = 132;
    h100.max_threads_per_block = 1'024;
    h100.max_threads_per_multiprocessor = 2'048;
    h100.max_registers_per_block = 65'536;
    h100.max_registers_per_multiprocessor = 65'536;
    h100.max_shared_memory_per_block = 49'152;
    h100.max_shared_memory_per_multiprocessor = 233'472;
    h100.warp_size = 32;
    stint::device_properties unknown;  // CUPTI reported no SM count: no "blocks per SM"
    unknown.id = 1;
    unknown.name = "GPU 1";
    report.devices = {h100, unknown};
    b.set_device_report(std::move(report));
    return std::move(b).build();
}

std::string export_text(const stint::event_list& list) {
    string_sink sink;
    stint::detail::write_chrome_trace(sink, list, {.pid = host_pid, .truncated_names = 0, .metadata_json = {}});
    // STINT_TEST_TRACE_DIR: keep the trace for tests/viewer/run.sh, which loads it into speedscope.
    if (const char* dir = std::getenv("STINT_TEST_TRACE_DIR"); dir != nullptr && list.has_device_events()) {
        std::ofstream out(std::string(dir) + "/device.pt.trace.json");
        out << sink.text;
        REQUIRE_MESSAGE(out.good(), "cannot write " << dir << "/device.pt.trace.json");
    }
    return sink.text;
}

nlohmann::json export_trace(const stint::event_list& list) { return nlohmann::json::parse(export_text(list)); }

// The keys of a timed event's args in the order written.
std::vector<std::string> arg_keys(const stint::event_list& list, const std::string& name) {
    const auto trace = nlohmann::ordered_json::parse(export_text(list));
    std::vector<std::string> keys;
    for (const auto& e : trace["traceEvents"]) {
        if (e["ph"] != "X" || e["name"] != name) continue;
        for (const auto& [key, value] : e["args"].items()) keys.push_back(key);
        break;
    }
    return keys;
}

// The timed events ("X" and "i") by name; names are unique in these lists.
std::map<std::string, nlohmann::json> by_name(const nlohmann::json& trace) {
    std::map<std::string, nlohmann::json> events;
    for (const auto& e : trace["traceEvents"]) {
        if (e["ph"] == "X" || e["ph"] == "i") events[e["name"].get<std::string>() + "@" + e["tid"].dump()] = e;
    }
    return events;
}

using pid_tid = std::pair<std::int64_t, std::int64_t>;  // pid, tid

}  // namespace

TEST_CASE("device events go on pid = device, tid = stream, with Kineto's cat and args") {
    const stint::event_list list = device_list();
    const auto trace = export_trace(list);
    auto events = by_name(trace);
    const auto& mm = events.at("aten::mm@7");
    const auto mm_id = mm["args"]["Record function id"].get<std::int64_t>();
    CHECK(mm["args"]["External id"] == mm_id);  // a CPU op carries its own id
    const auto copy_id = events.at("aten::copy_@7")["args"]["Record function id"].get<std::int64_t>();
    const auto replay_id = events.at("graph_replay@7")["args"]["Record function id"].get<std::int64_t>();

    SUBCASE("kernel") {
        const auto& k = events.at("gemm_kernel@7");
        CHECK(k["ph"] == "X");
        CHECK(k["cat"] == "kernel");
        CHECK(k["pid"] == 0);
        CHECK(k["ts"].get<double>() == 0.4);
        CHECK(k["dur"].get<double>() == 1.6);
        const auto& a = k["args"];
        CHECK(a["External id"] == mm_id);
        CHECK(a["device"] == 0);
        CHECK(a["context"] == 1);
        CHECK(a["stream"] == 7);
        CHECK(a["correlation"] == 5);
        CHECK(a["registers per thread"] == 32);
        CHECK(a["shared memory"] == 1'536);
        CHECK(a["grid"] == nlohmann::json::array({4, 2, 1}));
        CHECK(a["block"] == nlohmann::json::array({128, 1, 1}));
        CHECK(a["blocks per SM"].get<double>() == doctest::Approx(8.0 / 132));
        CHECK(a["warps per SM"].get<double>() == doctest::Approx(8.0 / 132 * 128 / 32));
        CHECK_FALSE(a.contains("graph id"));
        CHECK_FALSE(a.contains("Record function id"));
        CHECK(arg_keys(list, "gemm_kernel") ==
              std::vector<std::string>{"External id", "device", "context", "stream", "correlation",
                                       "registers per thread", "shared memory", "blocks per SM", "warps per SM",
                                       "grid", "block"});
        CHECK(arg_keys(list, "graph_node_0") ==
              std::vector<std::string>{"External id", "device", "context", "stream", "correlation",
                                       "registers per thread", "shared memory", "blocks per SM", "warps per SM",
                                       "grid", "block", "graph id", "graph node id"});
    }
    SUBCASE("memcpy, memset and their bandwidth") {
        const auto& copy = events.at("Memcpy HtoD (Pinned -> Device)@7");
        CHECK(copy["cat"] == "gpu_memcpy");
        CHECK(copy["pid"] == 0);
        CHECK(copy["args"]["External id"] == mm_id);
        CHECK(copy["args"]["bytes"] == 4'000);
        CHECK(copy["args"]["memory bandwidth (GB/s)"].get<double>() == 4.0);  // 4000 bytes in 1000 ns
        CHECK(copy["args"]["device"] == 0);
        CHECK_FALSE(copy["args"].contains("grid"));
        const auto& fill = events.at("Memset (Device)@13");
        CHECK(fill["cat"] == "gpu_memset");
        CHECK(fill["args"]["stream"] == 13);
        CHECK(fill["args"]["bytes"] == 100);
        CHECK(fill["args"]["memory bandwidth (GB/s)"].get<double>() == 1.0);
        CHECK(arg_keys(list, "Memcpy HtoD (Pinned -> Device)") ==
              std::vector<std::string>{"External id", "device", "context", "stream", "correlation", "bytes",
                                       "memory bandwidth (GB/s)"});
    }
    SUBCASE("peer copy") {
        const auto& peer = events.at("Memcpy PtoP (Device -> Device)@21");
        CHECK(peer["pid"] == 1);
        const auto& a = peer["args"];
        CHECK(a["External id"] == copy_id);
        CHECK(a["fromDevice"] == 0);
        CHECK(a["inDevice"] == 1);
        CHECK(a["toDevice"] == 1);
        CHECK(a["inContext"] == 1);
        CHECK(a["stream"] == 21);
        CHECK(a["correlation"] == 10);
        CHECK(a["bytes"] == 1'000);
        CHECK(a["memory bandwidth (GB/s)"].get<double>() == 2.0);
        CHECK(arg_keys(list, "Memcpy PtoP (Device -> Device)") ==
              std::vector<std::string>{"External id", "fromDevice", "inDevice", "toDevice", "inContext", "stream",
                                       "correlation", "bytes", "memory bandwidth (GB/s)"});
    }
    SUBCASE("synchronisations: a stream's on its sync row, a context's on the device row") {
        const auto& stream_sync = events.at("Stream Sync@1000007");
        CHECK(stream_sync["cat"] == "cuda_sync");
        CHECK(stream_sync["pid"] == 0);
        CHECK(stream_sync["args"]["cuda_sync_kind"] == "Stream Sync");
        CHECK(stream_sync["args"]["stream"] == 7);
        CHECK(stream_sync["args"]["correlation"] == 8);
        CHECK(stream_sync["args"]["device"] == 0);
        CHECK(stream_sync["args"]["context"] == 1);
        CHECK(stream_sync["args"]["External id"] == mm_id);
        const auto& context_sync = events.at("Context Sync@1");
        CHECK(context_sync["pid"] == 0);
        CHECK(context_sync["args"]["cuda_sync_kind"] == "Context Sync");
        CHECK(context_sync["args"]["stream"] == -1);
        CHECK_FALSE(context_sync["args"].contains("External id"));
        CHECK(arg_keys(list, "Stream Sync") ==
              std::vector<std::string>{"External id", "cuda_sync_kind", "stream", "correlation", "device", "context"});
    }
    SUBCASE("an unlinked kernel and an unlinked API call have no External id") {
        const auto& orphan = events.at("orphan_kernel@21");
        CHECK(orphan["cat"] == "kernel");
        CHECK(orphan["args"]["correlation"] == 11);
        CHECK_FALSE(orphan["args"].contains("External id"));
        const auto& launch = events.at("cudaLaunchKernel@8");
        CHECK(launch["pid"] == host_pid);
        CHECK_FALSE(launch["args"].contains("External id"));
        CHECK(launch["args"]["correlation"] == 11);
    }
    SUBCASE("CUDA API calls carry their launcher's External id, cbid and correlation") {
        const auto& launch = events.at("cudaLaunchKernel@7");
        CHECK(launch["cat"] == "cuda_runtime");
        CHECK(launch["pid"] == host_pid);
        CHECK(launch["args"] == nlohmann::json{{"External id", mm_id}, {"cbid", 211}, {"correlation", 5}});
        const auto& driver = events.at("cuLaunchKernel@7");
        CHECK(driver["cat"] == "cuda_driver");
        CHECK(driver["args"] == nlohmann::json{{"External id", mm_id}, {"cbid", 307}, {"correlation", 5}});
        CHECK(events.at("cudaGraphLaunch@7")["args"]["External id"] == replay_id);
    }
    SUBCASE("graph kernels carry the graph's ids") {
        const auto& node = events.at("graph_node_1@7");
        CHECK(node["args"]["graph id"] == 3);
        CHECK(node["args"]["graph node id"] == 101);
        CHECK(node["args"]["External id"] == replay_id);
    }
    SUBCASE("names that need escaping round-trip") {
        const auto odd = events.find(std::string(odd_kernel_name) + "@21");
        REQUIRE(odd != events.end());
        CHECK(odd->second["args"]["External id"] == replay_id);
        CHECK_FALSE(odd->second["args"].contains("blocks per SM"));  // no SM count for GPU 1
        bool found = false;
        for (const auto& d : trace["deviceProperties"]) found = found || d["name"] == "NVIDIA \"H100\" 80GB";
        CHECK(found);
    }
}

TEST_CASE("a device trace writes ac2g flows from each API call to the work it launched") {
    const stint::event_list list = device_list();
    const auto trace = export_trace(list);
    struct end {
        std::int64_t pid = 0;
        std::int64_t tid = 0;
        double ts = 0;
    };
    std::map<std::uint64_t, end> starts;
    std::map<std::uint64_t, end> finishes;
    for (const auto& e : trace["traceEvents"]) {
        if (e["ph"] != "s" && e["ph"] != "f") continue;
        CHECK(e["cat"] == "ac2g");
        CHECK(e["name"] == "ac2g");
        const auto id = e["id"].get<std::uint64_t>();
        const end where{e["pid"].get<std::int64_t>(), e["tid"].get<std::int64_t>(), e["ts"].get<double>()};
        if (e["ph"] == "s") {
            CHECK_FALSE(e.contains("bp"));
            CHECK(starts.emplace(id, where).second);  // ids are unique
        } else {
            CHECK(e["bp"] == "e");
            CHECK(finishes.emplace(id, where).second);
        }
    }
    // Correlations 5, 6, 7, 8, 10, 11 and three for 20 (a graph launch); none for 9 (a context sync with
    // no recorded call), 12 (a call that launched nothing) or 30 (a kernel whose call was not recorded).
    REQUIRE(starts.size() == 9);
    REQUIRE(finishes.size() == 9);
    for (const auto& [id, s] : starts) CHECK(finishes.count(id) == 1);

    const auto flow = [&](std::uint64_t id) { return std::make_pair(starts.at(id), finishes.at(id)); };
    // The runtime call, not the driver call it made (both have correlation 5).
    CHECK(flow(5).first.ts == 0.1);
    CHECK(flow(5).first.pid == host_pid);
    CHECK(flow(5).first.tid == 7);
    CHECK(flow(5).second.ts == 0.4);
    CHECK(flow(5).second.pid == 0);
    CHECK(flow(5).second.tid == 7);
    CHECK(flow(8).second.tid == 1'000'007);  // on the stream's sync row, where the sync is drawn
    CHECK(flow(10).second.pid == 1);
    CHECK(flow(11).first.tid == 8);  // an unlinked launch still flows to its kernel
    CHECK(starts.count(9) == 0);
    CHECK(starts.count(12) == 0);
    CHECK(starts.count(30) == 0);

    // The graph: the first kernel's flow keeps the correlation; the others take ids above every
    // correlation in the trace.
    CHECK(flow(20).second.ts == 6.3);
    std::set<double> graph_kernels;
    for (const auto& [id, s] : starts) {
        if (s.ts != 6.1) continue;
        graph_kernels.insert(finishes.at(id).ts);
        if (id != 20) CHECK(id > 30);
    }
    CHECK(graph_kernels == std::set<double>{6.3, 6.4, 6.5});
}

TEST_CASE("a device trace names GPUs and streams as Kineto does and lists deviceProperties") {
    const auto trace = export_trace(device_list());
    std::map<std::pair<std::string, pid_tid>, nlohmann::json> meta;
    std::set<pid_tid> drawn;
    for (const auto& e : trace["traceEvents"]) {
        const pid_tid where{e["pid"].get<std::int64_t>(), e["tid"].get<std::int64_t>()};
        if (e["ph"] == "M") {
            CHECK(meta.emplace(std::make_pair(e["name"].get<std::string>(), where), e["args"]).second);
        }
        if (e["ph"] == "X") drawn.insert(where);
    }
    for (const std::int64_t gpu_index : {0, 1}) {
        const pid_tid process{gpu_index, 0};
        CHECK(meta.at({"process_name", process})["name"] == "stint");
        CHECK(meta.at({"process_labels", process})["labels"] == "GPU " + std::to_string(gpu_index));
        CHECK(meta.at({"process_sort_index", process})["sort_index"] == 5'000'000 + gpu_index);
    }
    CHECK(meta.count({"process_labels", {2, 0}}) == 0);
    const std::map<pid_tid, std::pair<std::string, std::int64_t>> streams{
        {{0, 7}, {"stream 7 ", 7}},
        {{0, 13}, {"stream 13 ", 13}},
        {{0, 1'000'007}, {"stream 7 (sync)", 7}},
        {{0, 1}, {"Device 0", -1}},
        {{1, 21}, {"stream 21 ", 21}},
        {{static_cast<std::int64_t>(host_pid), 7}, {"main", 0}},
        {{static_cast<std::int64_t>(host_pid), 8}, {"worker", 1}},
    };
    std::map<pid_tid, std::pair<std::string, std::int64_t>> named;
    for (const auto& [key, args] : meta) {
        if (key.first == "thread_name") named[key.second].first = args["name"];
        if (key.first == "thread_sort_index") named[key.second].second = args["sort_index"];
    }
    CHECK(named == streams);
    // Every named row has events to draw, and every drawn row is named (speedscope's rule).
    std::set<pid_tid> rows;
    for (const auto& [where, name] : named) rows.insert(where);
    CHECK(rows == drawn);

    // The stint block lists the CPU threads only; device streams record nothing.
    const auto& threads = trace["stint"]["threads"];
    REQUIRE(threads.size() == 2);
    CHECK(threads[0]["tid"] == 7);
    CHECK(threads[1]["tid"] == 8);

    const auto& devices = trace["deviceProperties"];
    REQUIRE(devices.size() == 2);
    CHECK(devices[0] == nlohmann::json{{"id", 0},
                                       {"name", "NVIDIA \"H100\" 80GB"},
                                       {"totalGlobalMem", 85'000'000'000},
                                       {"computeMajor", 9},
                                       {"computeMinor", 0},
                                       {"maxThreadsPerBlock", 1'024},
                                       {"maxThreadsPerMultiprocessor", 2'048},
                                       {"regsPerBlock", 65'536},
                                       {"warpSize", 32},
                                       {"sharedMemPerBlock", 49'152},
                                       {"numSms", 132},
                                       {"regsPerMultiprocessor", 65'536},
                                       {"sharedMemPerMultiprocessor", 233'472}});
    CHECK(devices[1]["id"] == 1);
    CHECK(devices[1]["numSms"] == 0);
}

TEST_CASE("every trace's stint block reports the device collection and its losses") {
    SUBCASE("losses: counted by name, and a global instant on the timeline") {
        const auto trace = export_trace(device_list());
        CHECK(trace["stint"]["device"] == nlohmann::json{{"status", "active"},
                                                         {"library", "/usr/local/cuda/lib64/libcupti.so.13"},
                                                         {"cupti_version", 28},
                                                         {"cupti_headers", 28},
                                                         {"clock_alignment", "tsc"},
                                                         {"clock_error_ns", 0.0},
                                                         {"torn_down", false},
                                                         {"dropped_records", 3},
                                                         {"rejected_buffers", 0},
                                                         {"foreign_buffers", 0},
                                                         {"incomplete_records", 0},
                                                         {"unknown_records", 0},
                                                         {"unparsed_bytes", 0},
                                                         {"unlinked_records", 2},
                                                         {"out_of_window_records", 1},
                                                         {"stale_records", 0},
                                                         {"gpu_before_launch", 5}});
        std::vector<nlohmann::json> global;
        for (const auto& e : trace["traceEvents"]) {
            if (e["ph"] == "i" && e.value("s", "") == "g") global.push_back(e);
        }
        REQUIRE(global.size() == 1);
        CHECK(global[0]["name"] == "stint: 4 device records lost");  // dropped 3 + out of window 1
        CHECK(global[0]["pid"] == host_pid);
        CHECK(global[0]["ts"].get<double>() == 0.0);
    }
    SUBCASE("a CPU-only list: status off, no devices, no flows, no instant") {
        stint::detail::event_list_builder b;
        const auto t = b.add_thread({.os_tid = 7, .name = "main"});
        b.add(stint::event_kind::cpu_op, "aten::add", t, 10, 20);
        const auto trace = export_trace(std::move(b).build());
        const auto& device = trace["stint"]["device"];
        CHECK(device["status"] == "off");
        CHECK(device["library"] == "");
        CHECK(device["dropped_records"] == 0);
        CHECK(device.size() == 17);
        CHECK(trace["deviceProperties"] == nlohmann::json::array());
        for (const auto& e : trace["traceEvents"]) {
            CHECK(e["ph"] != "s");
            CHECK(e["ph"] != "i");
            CHECK(e["pid"] == host_pid);
        }
    }
    SUBCASE("a launcher whose id is 0 gives its kernel no External id, as it writes none itself") {
        stint::detail::event_list_builder b;
        const auto t = b.add_thread({.os_tid = 7, .name = "main"});
        const auto op = b.add(stint::event_kind::cpu_op, "aten::add", t, 10, 200);
        b.begin_run();
        const auto call = b.add_api_call(stint::event_kind::cuda_runtime, "cudaLaunchKernel", t, 20, 30, correlated(1));
        b.set_launcher(call, op);
        const auto k = b.add_device_event(stint::event_kind::kernel, "add_kernel", b.device_track(gpu(0), 7), 40, 90,
                                          correlated(1));
        b.set_launcher(k, op);
        const auto trace = export_trace(std::move(b).build());
        int written = 0;
        for (const auto& e : trace["traceEvents"]) {
            if (e["ph"] != "X") continue;
            CHECK_FALSE(e["args"].contains("External id"));
            ++written;
        }
        CHECK(written == 3);
    }
    SUBCASE("unavailable: the reason, and losses still shown") {
        stint::detail::event_list_builder b;
        const auto t = b.add_thread({.os_tid = 7, .name = "main"});
        b.add(stint::event_kind::cpu_op, "aten::add", t, 10, 20);
        stint::device_report report;
        report.status = "unavailable: cuInit failed: no CUDA-capable device is detected";
        report.loss.stale_records = 2;
        b.set_device_report(report);
        const auto trace = export_trace(std::move(b).build());
        CHECK(trace["stint"]["device"]["status"] == "unavailable: cuInit failed: no CUDA-capable device is detected");
        CHECK(trace["stint"]["device"]["stale_records"] == 2);
        bool instant = false;
        for (const auto& e : trace["traceEvents"]) {
            if (e["ph"] == "i" && e["name"] == "stint: 2 device records lost") instant = true;
        }
        CHECK(instant);
    }
}

TEST_CASE("device events read back with ts + dur on their ends, each row with its own origin") {
    const stint::event_list list = device_list();
    const auto trace = export_trace(list);
    std::map<std::string, std::optional<stint::event>> by_source_name;
    for (const stint::event& e : list) by_source_name[std::string(e.name) + "@" + std::to_string(e.start_ns)] = e;
    int checked = 0;
    for (const auto& e : trace["traceEvents"]) {
        if (e["ph"] != "X") continue;
        const auto ts = e["ts"].get<double>();
        const auto dur = e["dur"].get<double>();
        const auto found = by_source_name.find(e["name"].get<std::string>() + "@" +
                                               std::to_string(static_cast<std::int64_t>(ts * 1000 + 0.5)));
        REQUIRE(found != by_source_name.end());
        CHECK(ts + dur == stint::detail::trace_microseconds(found->second->end_ns));
        ++checked;
    }
    CHECK(checked == static_cast<int>(list.size()));
}
