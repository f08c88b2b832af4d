// Device time in the analysis: key_averages' device columns, the table's CUDA columns, sort keys and
// footer, and export_stacks' self_cuda_time_total, on hand-built lists of kernels and copies.

#include <doctest/doctest.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "stint/analysis/event_list.hpp"
#include "stint/analysis/event_tree.hpp"
#include "stint/analysis/key_averages.hpp"
#include "stint/analysis/table.hpp"
#include "stint/export/collapsed_stacks.hpp"
#include "test_util.hpp"

namespace {

using stint::averaged_event;
using stint::averaged_event_list;
using stint::device_type;
using stint::event_kind;
using stint::event_list;
using stint::detail::event_list_builder;

using stint_test::read_golden;

stint::device_args correlation_only(std::uint32_t correlation) {
    stint::device_args a;
    a.correlation = correlation;
    return a;
}

// One step: aten::linear copies its input to the device itself and calls aten::mm, which launches
// two gemm kernels; later a CPU op that shares the kernels' name. Times in ns:
//   ProfilerStep#1     0..20000   CPU 20 us, self 20 - 11 - 1 = 8;  device 4.5, self 0
//   aten::linear    1000..12000   CPU 11, self 11 - 1 - 6 = 4;      device 1 + 3.5 = 4.5, self 1
//     cudaMemcpyAsync 1500..2500  -> Memcpy HtoD 3000..4000 (1 us)
//     aten::mm      4000..10000   CPU 6, self 6 - 0.5 - 0.5 = 5;    device 2 + 1.5 = 3.5, self 3.5
//       cudaLaunchKernel 4500..5000 -> gemm_kernel 6000..8000 (2 us)
//       cudaLaunchKernel 5500..6000 -> gemm_kernel 8000..9500 (1.5 us)
//   gemm_kernel (CPU) 14000..15000 CPU 1
event_list linear_step(stint::device_loss loss = {}) {
    event_list_builder b;
    const auto t = b.add_thread({.os_tid = 7, .name = "main"});
    b.add(event_kind::user_annotation, "ProfilerStep#1", t, 0, 20'000);
    const auto linear = b.add(event_kind::cpu_op, "aten::linear", t, 1'000, 12'000);
    const auto mm = b.add(event_kind::cpu_op, "aten::mm", t, 4'000, 10'000);
    b.add(event_kind::cpu_op, "gemm_kernel", t, 14'000, 15'000);
    b.begin_run();
    b.set_launcher(b.add_api_call(event_kind::cuda_runtime, "cudaMemcpyAsync", t, 1'500, 2'500, correlation_only(1)), linear);
    b.set_launcher(b.add_api_call(event_kind::cuda_runtime, "cudaLaunchKernel", t, 4'500, 5'000, correlation_only(2)), mm);
    b.set_launcher(b.add_api_call(event_kind::cuda_runtime, "cudaLaunchKernel", t, 5'500, 6'000, correlation_only(3)), mm);
    const auto stream = b.device_track({device_type::cuda, 0}, 7);
    b.set_launcher(b.add_device_event(event_kind::gpu_memcpy, "Memcpy HtoD (Pageable -> Device)", stream, 3'000,
                                      4'000, correlation_only(1)),
                   linear);
    b.set_launcher(b.add_device_event(event_kind::kernel, "gemm_kernel", stream, 6'000, 8'000, correlation_only(2)), mm);
    b.set_launcher(b.add_device_event(event_kind::kernel, "gemm_kernel", stream, 8'000, 9'500, correlation_only(3)), mm);
    stint::device_report report;
    report.status = "active";
    report.loss = loss;
    b.set_device_report(std::move(report));
    return std::move(b).build();
}

const averaged_event& find(const averaged_event_list& avg, std::string_view key, device_type where) {
    for (const averaged_event& a : avg) {
        if (a.key == key && a.device_type == where) return a;
    }
    FAIL("no row ", key);
    return avg[0];
}

std::vector<std::string> keys_sorted_by(const averaged_event_list& avg, const std::string& sort_by) {
    return stint_test::table_row_names(avg.table({.sort_by = sort_by}));
}

// Table cells after the name column: each right-aligned in torch's 12 columns, then two spaces.
std::string cells(const std::vector<std::string_view>& values) {
    std::string line;
    for (std::string_view v : values) line += fmt::format("{:>12}  ", v);
    return line + '\n';
}

struct appending_sink {
    std::string* text;
    void write(std::string_view block) const { text->append(block); }
};

std::string stacks_text(const event_list& events, std::string_view metric, stint::stack_frames frames) {
    std::string text;
    appending_sink sink{&text};
    stint::detail::write_collapsed_stacks(sink, events, metric, frames);
    return text;
}

}  // namespace

TEST_CASE("a CPU op's device time counts its children's launches; its self device time only its own") {
    const event_list events = linear_step();
    REQUIRE(events.has_device_events());
    const averaged_event_list avg = stint::key_averages(events);
    REQUIRE(avg.size() == 8);

    const averaged_event& linear = find(avg, "aten::linear", device_type::cpu);
    CHECK(linear.device_time_total == 4.5);
    CHECK(linear.self_device_time_total == 1.0);
    CHECK(linear.device_time == 4.5);
    CHECK(linear.cpu_time_total == 11.0);
    CHECK(linear.self_cpu_time_total == 4.0);

    const averaged_event& mm = find(avg, "aten::mm", device_type::cpu);
    CHECK(mm.device_time_total == 3.5);
    CHECK(mm.self_device_time_total == 3.5);
    CHECK(mm.self_cpu_time_total == 5.0);
    CHECK(mm.cuda_time_total() == 3.5);
    CHECK(mm.self_cuda_time_total() == 3.5);
    CHECK(mm.cuda_time() == 3.5);

    const averaged_event& step = find(avg, "ProfilerStep*", device_type::cpu);
    CHECK(step.device_time_total == 4.5);
    CHECK(step.self_device_time_total == 0.0);
    CHECK(step.self_cpu_time_total == 8.0);

    const averaged_event& launch = find(avg, "cudaLaunchKernel", device_type::cpu);
    CHECK(launch.count == 2);
    CHECK(launch.cpu_time_total == 1.0);
    CHECK(launch.device_time_total == 0.0);
}

TEST_CASE("kernel rows have no CPU time and never merge with a CPU op of the same name") {
    const averaged_event_list avg = stint::key_averages(linear_step());
    const averaged_event& kernels = find(avg, "gemm_kernel", device_type::cuda);
    CHECK(kernels.count == 2);
    CHECK(kernels.cpu_time_total == 0.0);
    CHECK(kernels.self_cpu_time_total == 0.0);
    CHECK(kernels.cpu_time == 0.0);
    CHECK(kernels.device_time_total == 3.5);
    CHECK(kernels.self_device_time_total == 3.5);
    CHECK(kernels.device_time == 1.75);
    CHECK_FALSE(kernels.has_cpu_parent);

    const averaged_event& cpu_op = find(avg, "gemm_kernel", device_type::cpu);
    CHECK(cpu_op.count == 1);
    CHECK(cpu_op.cpu_time_total == 1.0);
    CHECK(cpu_op.device_time_total == 0.0);

    const averaged_event& copy = find(avg, "Memcpy HtoD (Pageable -> Device)", device_type::cuda);
    CHECK(copy.cpu_time_total == 0.0);
    CHECK(copy.self_device_time_total == 1.0);
}

TEST_CASE("total_average sums device times, from the groups or from the events") {
    const event_list events = linear_step();
    for (const averaged_event& total : {stint::key_averages(events).total_average(), stint::total_average(events)}) {
        CHECK(total.key == "Total");
        CHECK(total.count == 10);
        CHECK(total.self_cpu_time_total == 20.0);
        // 4.5 (step) + 4.5 (linear) + 1 (copy) + 3.5 (mm) + 3.5 (kernels)
        CHECK(total.device_time_total == 17.0);
        // 1 (linear) + 1 (copy) + 3.5 (mm) + 3.5 (kernels)
        CHECK(total.self_device_time_total == 9.0);
        CHECK(total.device_time == 1.7);
        CHECK(total.device_type == device_type::cpu);  // the last event's, as torch's total_average
    }
}

TEST_CASE("a folded recursion keeps the device time its whole chain launched") {
    // f inside f, its only child: one row, as torch's tree drops the inner f. Kernels launched with
    // no recorded API call (a driver path), so the outer f has no other child.
    event_list_builder b;
    const auto t = b.add_thread({.os_tid = 1, .name = "main"});
    const auto outer = b.add(event_kind::cpu_op, "f", t, 0, 10'000);
    const auto inner = b.add(event_kind::cpu_op, "f", t, 1'000, 9'000);
    b.begin_run();
    const auto stream = b.device_track({device_type::cuda, 0}, 7);
    b.set_launcher(b.add_device_event(event_kind::kernel, "k_outer", stream, 2'000, 4'000, {}), outer);
    b.set_launcher(b.add_device_event(event_kind::kernel, "k_inner", stream, 5'000, 6'000, {}), inner);
    const event_list events = std::move(b).build();
    const averaged_event_list avg = stint::key_averages(events);
    REQUIRE(avg.size() == 3);
    const averaged_event& f = find(avg, "f", device_type::cpu);
    CHECK(f.count == 1);
    CHECK(f.cpu_time_total == 10.0);
    CHECK(f.self_cpu_time_total == 10.0);
    CHECK(f.device_time_total == 3.0);
    CHECK(f.self_device_time_total == 3.0);
    const std::string table = stint::table(events);
    CHECK(table.find("Self CUDA time total: 3.000us\n") != std::string::npos);
}

TEST_CASE("the table shows torch's CUDA columns and footer when some event has device time") {
    const event_list events = linear_step();
    SUBCASE("key_averages, sorted by self_cuda_time_total") {
        CHECK(stint::key_averages(events).table({.sort_by = "self_cuda_time_total"}) ==
              read_golden("device_self_cuda_sorted.txt"));
    }
    SUBCASE("one row per event, kernels with 0 CPU time") {
        const std::string table = stint::table(events, {.time_unit = "us"});
        CHECK(table.find(" gemm_kernel  " + cells({"0.00%", "0.000us", "0.00%", "0.000us", "0.000us", "2.000us",
                                                    "44.44%", "2.000us", "2.000us", "1"})) != std::string::npos);
        CHECK(table.find(" gemm_kernel  " + cells({"0.00%", "0.000us", "0.00%", "0.000us", "0.000us", "1.500us",
                                                    "33.33%", "1.500us", "1.500us", "1"})) != std::string::npos);
        CHECK(table.find(" aten::mm  " + cells({"25.00%", "5.000us", "30.00%", "6.000us", "6.000us", "3.500us",
                                                 "77.78%", "3.500us", "3.500us", "1"})) != std::string::npos);
        CHECK(table.find(" aten::linear  " + cells({"20.00%", "4.000us", "55.00%", "11.000us", "11.000us", "1.000us",
                                                     "22.22%", "4.500us", "4.500us", "1"})) != std::string::npos);
        CHECK(table.ends_with("Self CPU time total: 20.000us\nSelf CUDA time total: 4.500us\n"));
    }
    SUBCASE("the header row") {
        const std::string table = stint::key_averages(events).table();
        CHECK(table.find("  CPU time avg     Self CUDA   Self CUDA %    CUDA total  CUDA time avg    # of Calls  \n") !=
              std::string::npos);
    }
    SUBCASE("forced units apply to the device cells and footer") {
        const std::string table = stint::key_averages(events).table({.time_unit = "ms"});
        // 4.5 us is 0.0045 ms, a double just below the half-way point: Python's "{:.3f}" gives 0.004 too.
        CHECK(table.ends_with("Self CPU time total: 0.020ms\nSelf CUDA time total: 0.004ms\n"));
        CHECK(table.find(" aten::mm  " + cells({"25.00%", "0.005ms", "30.00%", "0.006ms", "0.006ms", "0.004ms",
                                                 "77.78%", "0.004ms", "0.004ms", "1"})) != std::string::npos);
    }
}

TEST_CASE("a table without device time has no CUDA columns") {
    SUBCASE("a CPU-only list") {
        event_list_builder b;
        const auto t = b.add_thread({.os_tid = 1, .name = "main"});
        b.add(event_kind::cpu_op, "aten::add", t, 0, 3'000);
        const std::string table = stint::key_averages(std::move(b).build()).table();
        CHECK(table ==
              "-------------  ------------  ------------  ------------  ------------  ------------  ------------  \n"
              "         Name    Self CPU %      Self CPU   CPU total %     CPU total  CPU time avg    # of Calls  \n"
              "-------------  ------------  ------------  ------------  ------------  ------------  ------------  \n"
              "    aten::add       100.00%       3.000us       100.00%       3.000us       3.000us             1  \n"
              "-------------  ------------  ------------  ------------  ------------  ------------  ------------  \n"
              "Self CPU time total: 3.000us\n");
    }
    SUBCASE("device events of zero duration (torch's rule: some self device time above 0)") {
        event_list_builder b;
        const auto t = b.add_thread({.os_tid = 1, .name = "main"});
        const auto op = b.add(event_kind::cpu_op, "aten::add", t, 0, 3'000);
        b.begin_run();
        const auto stream = b.device_track({device_type::cuda, 0}, 7);
        b.set_launcher(b.add_device_event(event_kind::kernel, "add_kernel", stream, 1'000, 1'000, {}), op);
        const event_list events = std::move(b).build();
        REQUIRE(events.has_device_events());
        CHECK(stint::key_averages(events).table().find("CUDA") == std::string::npos);
        CHECK(stint::table(events).find("CUDA") == std::string::npos);
    }
}

TEST_CASE("device sort keys sort by device time in every spelling torch accepts") {
    const averaged_event_list avg = stint::key_averages(linear_step());
    // Stable: equal values keep the order of first start.
    const std::vector<std::string> by_self{"aten::mm",
                                           "gemm_kernel",
                                           "aten::linear",
                                           "Memcpy HtoD (Pageable -> Device)",
                                           "ProfilerStep*",
                                           "cudaMemcpyAsync",
                                           "cudaLaunchKernel",
                                           "gemm_kernel"};
    const std::vector<std::string> by_total{"ProfilerStep*",   "aten::linear",     "aten::mm",
                                            "gemm_kernel",     "Memcpy HtoD (Pageable -> Device)",
                                            "cudaMemcpyAsync", "cudaLaunchKernel", "gemm_kernel"};
    const std::vector<std::string> by_average{"ProfilerStep*",   "aten::linear",     "aten::mm",
                                              "gemm_kernel",     "Memcpy HtoD (Pageable -> Device)",
                                              "cudaMemcpyAsync", "cudaLaunchKernel", "gemm_kernel"};
    for (const char* device : {"cuda", "device", "xpu", "privateuse1"}) {
        CAPTURE(device);
        CHECK(keys_sorted_by(avg, fmt::format("self_{}_time_total", device)) == by_self);
        CHECK(keys_sorted_by(avg, fmt::format("{}_time_total", device)) == by_total);
        CHECK(keys_sorted_by(avg, fmt::format("{}_time", device)) == by_average);
    }
}

TEST_CASE("export_stacks self_cuda_time_total gives each CPU event's self device time") {
    SUBCASE("names: device events are left out, their time is their launcher's") {
        CHECK(stacks_text(linear_step(), "self_cuda_time_total", stint::stack_frames::names) ==
              "ProfilerStep*;aten::linear 1\nProfilerStep*;aten::linear;aten::mm 3\n");
        CHECK(stacks_text(linear_step(), "self_cpu_time_total", stint::stack_frames::names) ==
              "ProfilerStep* 8\nProfilerStep*;aten::linear 4\nProfilerStep*;aten::linear;cudaMemcpyAsync 1\n"
              "ProfilerStep*;aten::linear;aten::mm 5\nProfilerStep*;gemm_kernel 1\n");
    }
    SUBCASE("locations: the events with a stack") {
        event_list_builder b;
        const auto t = b.add_thread({.os_tid = 1, .name = "main"});
        const auto op = b.add(event_kind::cpu_op, "aten::mm", t, 0, 10'000);
        b.set_stack(op, {"model.py(12): forward", "train.py(3): <module>"});
        b.begin_run();
        const auto stream = b.device_track({device_type::cuda, 0}, 7);
        b.set_launcher(b.add_device_event(event_kind::kernel, "gemm", stream, 1'000, 3'700, {}), op);
        CHECK(stacks_text(std::move(b).build(), "self_cuda_time_total", stint::stack_frames::locations) ==
              "train.py(3):_<module>;model.py(12):_forward 2\n");
    }
}

TEST_CASE("export_stacks states lost device records as it states late ones") {
    stint::device_loss loss;
    loss.dropped_records = 3;
    loss.incomplete_records = 2;
    loss.unlinked_records = 4;  // kept, only unattributed: not lost
    const std::string text = stacks_text(linear_step(loss), "self_cuda_time_total", stint::stack_frames::names);
    CHECK(text.ends_with("ProfilerStep*;aten::linear;aten::mm 3\n[stint]_5_device_records_lost 1\n"));

    stint::device_loss unlinked_only;
    unlinked_only.unlinked_records = 4;
    CHECK(stacks_text(linear_step(unlinked_only), "self_cpu_time_total", stint::stack_frames::locations).empty());
}
