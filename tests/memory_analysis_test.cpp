// Memory in the analysis: key_averages' memory fields and rows, the table's memory columns and sort
// keys, on hand-built lists shaped like the runs of torch's test_memory_profiler.

#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "stint/analysis/event_list.hpp"
#include "stint/analysis/event_tree.hpp"
#include "stint/analysis/key_averages.hpp"
#include "stint/analysis/table.hpp"
#include "test_util.hpp"

namespace {

using stint::averaged_event;
using stint::averaged_event_list;
using stint::device_type;
using stint::event_kind;
using stint::event_list;
using stint::detail::event_list_builder;

using stint_test::cuda0;

using stint_test::read_golden;

const averaged_event& find(const averaged_event_list& avg, std::string_view key) {
    for (const averaged_event& a : avg) {
        if (a.key == key) return a;
    }
    FAIL("no row ", key);
    return avg[0];
}

bool has_row(const averaged_event_list& avg, std::string_view key) {
    for (const averaged_event& a : avg) {
        if (a.key == key) return true;
    }
    return false;
}


// torch's run_profiler(create_cpu_tensor): a 400-byte block allocated in aten::empty under aten::rand
// in one scope, freed in another. Times in ns.
event_list cpu_tensor_run() {
    event_list_builder b;
    const auto t = b.add_thread({.os_tid = 7, .name = "main"});
    b.add(event_kind::user_annotation, "test_user_scope_alloc", t, 0, 10'000);
    b.add(event_kind::cpu_op, "aten::rand", t, 1'000, 8'000);
    b.add(event_kind::cpu_op, "aten::empty", t, 2'000, 4'000);
    b.add_memory_event(event_kind::memory, t, 3'000, {.addr = 0x1000, .bytes = 400}, 1);
    b.add(event_kind::cpu_op, "aten::uniform_", t, 5'000, 7'000);
    b.add(event_kind::user_annotation, "test_user_scope_dealloc", t, 12'000, 15'000);
    b.add_memory_event(event_kind::memory, t, 13'000, {.addr = 0x1000}, 2, {.free = true, .size_known = false});
    return std::move(b).build();
}

// torch's run_profiler(create_cuda_tensor): aten::rand allocates 400 CPU bytes, aten::to copies them
// into a CUDA block from aten::empty_strided (1.5 MiB: the caching allocator's smallest large block);
// the second scope frees the CUDA block.
constexpr std::int64_t cuda_block = 1'572'864;

event_list cuda_tensor_run() {
    event_list_builder b;
    const auto t = b.add_thread({.os_tid = 7, .name = "main"});
    b.add(event_kind::user_annotation, "test_user_scope_alloc", t, 0, 20'000);
    b.add(event_kind::cpu_op, "aten::rand", t, 1'000, 8'000);
    b.add(event_kind::cpu_op, "aten::empty", t, 2'000, 4'000);
    b.add_memory_event(event_kind::memory, t, 3'000, {.addr = 0x1000, .bytes = 400}, 1);
    b.add(event_kind::cpu_op, "aten::to", t, 9'000, 18'000);
    b.add(event_kind::cpu_op, "aten::empty_strided", t, 10'000, 12'000);
    b.add_memory_event(event_kind::memory, t, 11'000, {.addr = 0x7f00, .bytes = cuda_block, .device = cuda0}, 2);
    b.add(event_kind::user_annotation, "test_user_scope_dealloc", t, 22'000, 25'000);
    b.add_memory_event(event_kind::memory, t, 23'000, {.addr = 0x7f00, .device = cuda0}, 3,
                       {.free = true, .size_known = false});
    return std::move(b).build();
}

// torch's top-level case: x = torch.rand(10, 10); del x (and the same on CUDA), outside every scope.
event_list top_level_run() {
    event_list_builder b;
    const auto t = b.add_thread({.os_tid = 7, .name = "main"});
    b.add(event_kind::cpu_op, "aten::rand", t, 0, 5'000);
    b.add(event_kind::cpu_op, "aten::empty", t, 1'000, 2'000);
    b.add_memory_event(event_kind::memory, t, 1'500, {.addr = 0x2000, .bytes = 400}, 1);
    b.add_memory_event(event_kind::memory, t, 6'000, {.addr = 0x2000}, 2, {.free = true, .size_known = false});
    b.add(event_kind::cpu_op, "aten::to", t, 7'000, 9'000);
    b.add(event_kind::cpu_op, "aten::empty_strided", t, 7'500, 8'500);
    b.add_memory_event(event_kind::memory, t, 8'000, {.addr = 0x3000, .bytes = 512, .device = cuda0}, 3);
    b.add_memory_event(event_kind::memory, t, 10'000, {.addr = 0x3000, .device = cuda0}, 4,
                       {.free = true, .size_known = false});
    return std::move(b).build();
}

}  // namespace

TEST_CASE("key_averages charges a scope's allocations and frees to it and the ops around them") {
    const averaged_event_list avg = stint::key_averages(cpu_tensor_run(), {.group_by_input_shape = true});
    CHECK(find(avg, "aten::empty").cpu_memory_usage == 400);
    CHECK(find(avg, "aten::empty").self_cpu_memory_usage == 400);
    CHECK(find(avg, "aten::rand").cpu_memory_usage == 400);
    CHECK(find(avg, "aten::rand").self_cpu_memory_usage == 0);
    CHECK(find(avg, "test_user_scope_alloc").cpu_memory_usage == 400);
    CHECK(find(avg, "test_user_scope_alloc").self_cpu_memory_usage == 0);
    CHECK(find(avg, "aten::uniform_").cpu_memory_usage == 0);
    CHECK(find(avg, "test_user_scope_dealloc").cpu_memory_usage == -400);
    CHECK(find(avg, "test_user_scope_dealloc").self_cpu_memory_usage == -400);
    for (const averaged_event& a : avg) {
        CHECK(a.device_memory_usage == 0);
        CHECK(a.self_device_memory_usage == 0);
    }
    SUBCASE("a [memory] event inside a scope is no row") {
        CHECK(avg.size() == 5);
        CHECK_FALSE(has_row(avg, "[memory]"));
    }
    SUBCASE("the total sums the rows, so each byte counts once per level") {
        const averaged_event total = avg.total_average();
        CHECK(total.count == 5);
        CHECK(total.cpu_memory_usage == 400 + 400 + 400 - 400);
        CHECK(total.self_cpu_memory_usage == 400 - 400);
        const averaged_event all = stint::total_average(cpu_tensor_run());
        CHECK(all.count == 5);
        CHECK(all.cpu_memory_usage == total.cpu_memory_usage);
        CHECK(all.self_cpu_memory_usage == total.self_cpu_memory_usage);
    }
}

TEST_CASE("device allocations feed device_memory_usage, not cpu_memory_usage") {
    const averaged_event_list avg = stint::key_averages(cuda_tensor_run(), {.group_by_input_shape = true});
    // torch's checks: device > 0 for the alloc scope, aten::to, aten::empty_strided; < 0 for the dealloc
    // scope; cpu > 0 for aten::rand and aten::empty.
    CHECK(find(avg, "test_user_scope_alloc").device_memory_usage == cuda_block);
    CHECK(find(avg, "aten::to").device_memory_usage == cuda_block);
    CHECK(find(avg, "aten::to").self_device_memory_usage == 0);
    CHECK(find(avg, "aten::empty_strided").device_memory_usage == cuda_block);
    CHECK(find(avg, "aten::empty_strided").self_device_memory_usage == cuda_block);
    CHECK(find(avg, "test_user_scope_dealloc").device_memory_usage == -cuda_block);
    CHECK(find(avg, "test_user_scope_dealloc").self_device_memory_usage == -cuda_block);
    CHECK(find(avg, "aten::rand").cpu_memory_usage == 400);
    CHECK(find(avg, "aten::empty").cpu_memory_usage == 400);
    CHECK(find(avg, "aten::to").cpu_memory_usage == 0);
    CHECK(find(avg, "aten::empty_strided").cpu_memory_usage == 0);
    CHECK(find(avg, "test_user_scope_dealloc").cpu_memory_usage == 0);
    CHECK(find(avg, "test_user_scope_alloc").cpu_memory_usage == 400);
    CHECK(find(avg, "aten::to").cuda_memory_usage() == cuda_block);
    CHECK(find(avg, "aten::empty_strided").self_cuda_memory_usage() == cuda_block);
}

TEST_CASE("allocations and frees outside every scope form a [memory] row") {
    const event_list events = top_level_run();
    const averaged_event_list avg = stint::key_averages(events, {.group_by_input_shape = true});
    REQUIRE(avg.size() == 5);
    CHECK(find(avg, "aten::rand").cpu_memory_usage == 400);
    CHECK(find(avg, "aten::empty").cpu_memory_usage == 400);
    const averaged_event& memory = find(avg, "[memory]");
    CHECK(memory.count == 2);  // the two top-level frees; the allocations were inside ops
    CHECK(memory.cpu_memory_usage == -400);
    CHECK(memory.self_cpu_memory_usage == -400);
    CHECK(memory.device_memory_usage == -512);
    CHECK(memory.self_device_memory_usage == -512);
    CHECK(memory.cpu_time_total == 0);
    CHECK(memory.self_cpu_time_total == 0);
    CHECK(memory.device_time_total == 0);
    CHECK_FALSE(memory.is_user_annotation);
    CHECK_FALSE(memory.has_cpu_parent);
    SUBCASE("the event table has one row per top-level free, none for the nested allocations") {
        const std::vector<std::string> names = stint_test::table_row_names(stint::table(events));
        CHECK(names == std::vector<std::string>{"aten::rand", "aten::empty", "[memory]", "aten::to",
                                                "aten::empty_strided", "[memory]"});
    }
    SUBCASE("top_level_events_only keeps the [memory] row") {
        const std::vector<std::string> names = stint_test::table_row_names(avg.table({.top_level_events_only = true}));
        CHECK(names == std::vector<std::string>{"aten::rand", "[memory]", "aten::to"});
    }
}

TEST_CASE("out-of-memory events are rows that count calls, not bytes") {
    event_list_builder b;
    const auto t = b.add_thread({.os_tid = 7, .name = "main"});
    b.add(event_kind::cpu_op, "aten::empty", t, 0, 2'000);
    b.add_memory_event(event_kind::out_of_memory, t, 1'000, {.bytes = std::int64_t{1} << 42}, 1);
    b.add_memory_event(event_kind::out_of_memory, t, 3'000, {.bytes = std::int64_t{1} << 40, .device = cuda0}, 2);
    const event_list events = std::move(b).build();
    const averaged_event_list avg = stint::key_averages(events);
    REQUIRE(avg.size() == 2);
    // torch makes a function event of every out-of-memory record, inside an op or not.
    const averaged_event& oom = find(avg, "[OutOfMemory]");
    CHECK(oom.count == 2);
    CHECK(oom.cpu_memory_usage == 0);
    CHECK(oom.device_memory_usage == 0);
    CHECK(oom.cpu_time_total == 0);
    CHECK(find(avg, "aten::empty").cpu_memory_usage == 0);
    CHECK(find(avg, "aten::empty").self_cpu_time_total == 2.0);
    const std::string table = avg.table();
    CHECK(table.find("CPU Mem  Self CPU Mem      CUDA Mem  Self CUDA Mem    # of Calls  \n") != std::string::npos);
    CHECK(stint_test::table_row_names(stint::table(events)) == std::vector<std::string>{"aten::empty", "[OutOfMemory]", "[OutOfMemory]"});
}

TEST_CASE("a recursion folds into one row when its other children are [memory] events") {
    // f allocates 100 bytes, then calls f, which allocates 200: torch's tree has no [memory] events,
    // so the inner f is the outer one's only child and is dropped; the survivor's self is both.
    event_list_builder b;
    const auto t = b.add_thread({.os_tid = 7, .name = "main"});
    b.add(event_kind::cpu_op, "f", t, 0, 10'000);
    b.add_memory_event(event_kind::memory, t, 500, {.addr = 0x10, .bytes = 100}, 1);
    b.add(event_kind::cpu_op, "f", t, 1'000, 9'000);
    b.add_memory_event(event_kind::memory, t, 2'000, {.addr = 0x20, .bytes = 200}, 2);
    b.add(event_kind::cpu_op, "g", t, 3'000, 4'000);
    b.add_memory_event(event_kind::memory, t, 3'500, {.addr = 0x30, .bytes = 50}, 3);
    const event_list events = std::move(b).build();
    const averaged_event_list avg = stint::key_averages(events);
    REQUIRE(avg.size() == 2);
    const averaged_event& f = find(avg, "f");
    CHECK(f.count == 1);
    CHECK(f.cpu_time_total == 10.0);
    CHECK(f.self_cpu_time_total == 9.0);
    CHECK(f.cpu_memory_usage == 350);
    CHECK(f.self_cpu_memory_usage == 300);
    CHECK(find(avg, "g").self_cpu_memory_usage == 50);
    CHECK(stint_test::table_row_names(stint::table(events)) == std::vector<std::string>{"f", "g"});
}

TEST_CASE("memory sort keys sort by bytes, largest first, with torch's cuda spellings") {
    const averaged_event_list avg = stint::key_averages(cuda_tensor_run());
    const auto sorted = [&](const std::string& key) { return stint_test::table_row_names(avg.table({.sort_by = key})); };
    // List order: alloc scope, rand, empty, to, empty_strided, dealloc scope.
    const std::vector<std::string> by_cpu{"test_user_scope_alloc", "aten::rand", "aten::empty", "aten::to",
                                          "aten::empty_strided", "test_user_scope_dealloc"};
    const std::vector<std::string> by_self_cpu{"aten::empty", "test_user_scope_alloc", "aten::rand", "aten::to",
                                               "aten::empty_strided", "test_user_scope_dealloc"};
    const std::vector<std::string> by_device{"test_user_scope_alloc", "aten::to", "aten::empty_strided", "aten::rand",
                                             "aten::empty", "test_user_scope_dealloc"};
    const std::vector<std::string> by_self_device{"aten::empty_strided", "test_user_scope_alloc", "aten::rand",
                                                  "aten::empty", "aten::to", "test_user_scope_dealloc"};
    CHECK(sorted("cpu_memory_usage") == by_cpu);
    CHECK(sorted("self_cpu_memory_usage") == by_self_cpu);
    CHECK(sorted("device_memory_usage") == by_device);
    CHECK(sorted("cuda_memory_usage") == by_device);
    CHECK(sorted("self_device_memory_usage") == by_self_device);
    CHECK(sorted("self_cuda_memory_usage") == by_self_device);
    CHECK(sorted("xpu_memory_usage") == by_device);
    CHECK(sorted("self_privateuse1_memory_usage") == by_self_device);
    SUBCASE("every memory key is a valid one") {
        const std::vector<std::string_view> keys = stint::valid_sort_keys();
        for (std::string_view key : {"cpu_memory_usage", "self_cpu_memory_usage", "device_memory_usage",
                                     "self_device_memory_usage", "cuda_memory_usage", "self_cuda_memory_usage"}) {
            CHECK(std::find(keys.begin(), keys.end(), key) != keys.end());
        }
    }
    SUBCASE("the event table sorts its rows the same way") {
        CHECK(stint_test::table_row_names(stint::table(cuda_tensor_run(), {.sort_by = "self_cuda_memory_usage"})) == by_self_device);
    }
}

TEST_CASE("the table shows memory columns only when the list has memory events") {
    SUBCASE("no memory events: no memory columns") {
        event_list_builder b;
        const auto t = b.add_thread({.os_tid = 7, .name = "main"});
        b.add(event_kind::cpu_op, "aten::add", t, 0, 3'000);
        const event_list events = std::move(b).build();
        CHECK(stint::key_averages(events).table().find("Mem") == std::string::npos);
        CHECK(stint::table(events).find("Mem") == std::string::npos);
    }
    SUBCASE("CPU memory only: the CPU pair before # of Calls") {
        const event_list events = cpu_tensor_run();
        const std::string header = "  CPU time avg       CPU Mem  Self CPU Mem    # of Calls  \n";
        CHECK(stint::key_averages(events).table().find(header) != std::string::npos);
        CHECK(stint::table(events).find(header) != std::string::npos);
        CHECK(stint::table(events).find("CUDA Mem") == std::string::npos);
        CHECK(stint::table(events).find("         400 b         400 b             1  \n") != std::string::npos);
    }
    SUBCASE("device memory: both pairs") {
        const std::string table = stint::table(cuda_tensor_run());
        CHECK(table.find("  CPU time avg       CPU Mem  Self CPU Mem      CUDA Mem  Self CUDA Mem    # of Calls  \n") !=
              std::string::npos);
    }
    SUBCASE("a whole table, sorted by device memory, matches its golden file") {
        CHECK(stint::key_averages(cuda_tensor_run()).table({.sort_by = "cuda_memory_usage"}) ==
              read_golden("memory_cuda_sorted.txt"));
    }
}

TEST_CASE("memory cells are formatted as torch's _format_memory") {
    using stint::detail::format_memory;
    CHECK(format_memory(1536) == "1.50 Kb");
    CHECK(format_memory(-2097152) == "-2.00 Mb");
    CHECK(format_memory(12) == "12 b");
    CHECK(format_memory(-12) == "-12 b");
    CHECK(format_memory(0) == "0 b");
    CHECK(format_memory(1023) == "1023 b");
    CHECK(format_memory(1024) == "1.00 Kb");
    CHECK(format_memory(-1024) == "-1.00 Kb");
    CHECK(format_memory(1152) == "1.12 Kb");      // 1.125: Python rounds the half to even
    CHECK(format_memory(1160) == "1.13 Kb");
    CHECK(format_memory(1179648) == "1.12 Mb");
    CHECK(format_memory(1048575) == "1024.00 Kb");  // under 1 Mb, so in Kb, rounded up
    CHECK(format_memory(std::int64_t{3} << 30) == "3.00 Gb");
    CHECK(format_memory(std::numeric_limits<std::int64_t>::min()) == "-8589934592.00 Gb");
}
