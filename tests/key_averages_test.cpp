// key_averages(): grouping by name, kind, input shape and stack frames; totals, self times, counts,
// flops, ProfilerStep folding and torch's handling of recursion.

#include <doctest/doctest.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <stint/stint.hpp>

#include "stint/analysis/event_list.hpp"
#include "stint/analysis/event_tree.hpp"
#include "stint/analysis/key_averages.hpp"
#include "test_util.hpp"

namespace {

using stint::averaged_event;
using stint::averaged_event_list;
using stint::event_kind;
using stint::event_list;
using stint::detail::event_list_builder;
using dims = std::vector<std::vector<std::int64_t>>;

using stint_test::input_shapes;

const averaged_event& row(const averaged_event_list& list, std::size_t i) {
    REQUIRE(i < list.size());
    return list[i];
}

}  // namespace

TEST_CASE("events with one name form one row with summed totals, self times and an average") {
    event_list_builder b;
    const auto t = b.add_thread({.os_tid = 1, .name = "main"});
    b.add(event_kind::user_annotation, "step", t, 0, 10'000);     // 10 us, self 10 - 3 - 1.5 = 5.5 us
    b.add(event_kind::cpu_op, "aten::add", t, 1'000, 4'000);      // 3 us, self 3 - 1 = 2 us
    b.add(event_kind::cpu_op, "aten::empty", t, 2'000, 3'000);    // 1 us
    b.add(event_kind::cpu_op, "aten::add", t, 5'000, 6'500);      // 1.5 us
    const averaged_event_list avg = stint::key_averages(std::move(b).build());
    REQUIRE(avg.size() == 3);

    const averaged_event& step = row(avg, 0);
    CHECK(step.key == "step");
    CHECK(step.count == 1);
    CHECK(step.cpu_time_total == 10.0);
    CHECK(step.self_cpu_time_total == 5.5);
    CHECK(step.cpu_time == 10.0);
    CHECK(step.is_user_annotation);
    CHECK_FALSE(step.has_cpu_parent);

    const averaged_event& add = row(avg, 1);
    CHECK(add.key == "aten::add");
    CHECK(add.count == 2);
    CHECK(add.cpu_time_total == 4.5);
    CHECK(add.self_cpu_time_total == 3.5);
    CHECK(add.cpu_time == 2.25);
    CHECK_FALSE(add.is_user_annotation);
    CHECK(add.has_cpu_parent);
    CHECK(add.input_shapes.empty());
    CHECK(add.stack.empty());
    CHECK(add.flops == 0);

    const averaged_event& empty = row(avg, 2);
    CHECK(empty.key == "aten::empty");
    CHECK(empty.self_cpu_time_total == 1.0);
}

TEST_CASE("rows keep the order in which each group's first event started") {
    event_list_builder b;
    const auto t = b.add_thread({.os_tid = 1, .name = "main"});
    b.add(event_kind::cpu_op, "c", t, 0, 1);
    b.add(event_kind::cpu_op, "a", t, 2, 3);
    b.add(event_kind::cpu_op, "c", t, 4, 5);
    b.add(event_kind::cpu_op, "b", t, 6, 7);
    const averaged_event_list avg = stint::key_averages(std::move(b).build());
    REQUIRE(avg.size() == 3);
    std::vector<std::string> keys;
    for (const averaged_event& a : avg) keys.push_back(a.key);
    CHECK(keys == std::vector<std::string>{"c", "a", "b"});
}

TEST_CASE("a scope and an op with the same name are separate rows, as torch keys by is_user_annotation") {
    event_list_builder b;
    const auto t = b.add_thread({.os_tid = 1, .name = "main"});
    b.add(event_kind::user_annotation, "matmul", t, 0, 10);
    b.add(event_kind::cpu_op, "matmul", t, 20, 30);
    b.add(event_kind::cpu_op, "matmul", t, 40, 50);
    const averaged_event_list avg = stint::key_averages(std::move(b).build());
    REQUIRE(avg.size() == 2);
    CHECK(avg[0].is_user_annotation);
    CHECK(avg[0].count == 1);
    CHECK_FALSE(avg[1].is_user_annotation);
    CHECK(avg[1].count == 2);
}

TEST_CASE("the same name from different threads and from different buffers joins one row") {
    event_list_builder b;
    const auto t1 = b.add_thread({.os_tid = 1, .name = "main"});
    const auto t2 = b.add_thread({.os_tid = 2, .name = "worker"});
    const std::string runtime_name = "aten::mm";
    b.add(event_kind::cpu_op, "aten::mm", t1, 0, 1'000);
    b.add_copy(event_kind::cpu_op, runtime_name, t2, 0, 2'000);   // same text, other storage
    b.add_copy(event_kind::cpu_op, runtime_name, t2, 3'000, 6'000);
    b.add(event_kind::cpu_op, "", t1, 7'000, 8'000);              // an empty name is a name too
    b.add_copy(event_kind::cpu_op, "", t2, 7'000, 8'000);
    const averaged_event_list avg = stint::key_averages(std::move(b).build());
    REQUIRE(avg.size() == 2);
    CHECK(avg[0].key == "aten::mm");
    CHECK(avg[0].count == 3);
    CHECK(avg[0].cpu_time_total == 6.0);
    CHECK(avg[1].key.empty());
    CHECK(avg[1].count == 2);
}

TEST_CASE("every ProfilerStep#N folds into one ProfilerStep* row while the events keep their numbers") {
    event_list_builder b;
    const auto t = b.add_thread({.os_tid = 1, .name = "main"});
    b.add(event_kind::user_annotation, "ProfilerStep#0", t, 0, 1'000);
    b.add(event_kind::cpu_op, "aten::add", t, 100, 300);
    b.add(event_kind::user_annotation, "ProfilerStep#1", t, 1'000, 3'000);
    b.add(event_kind::user_annotation, "ProfilerStep#12", t, 3'000, 6'000);
    b.add(event_kind::user_annotation, "ProfilerStep", t, 7'000, 8'000);  // no '#': not a step
    const event_list events = std::move(b).build();
    CHECK(events[0].name == "ProfilerStep#0");
    const averaged_event_list avg = stint::key_averages(events);
    REQUIRE(avg.size() == 3);
    CHECK(avg[0].key == "ProfilerStep*");
    CHECK(avg[0].count == 3);
    CHECK(avg[0].cpu_time_total == 6.0);
    CHECK(avg[0].self_cpu_time_total == 5.8);
    CHECK(avg[1].key == "aten::add");
    CHECK(avg[2].key == "ProfilerStep");
}

TEST_CASE("recursion follows torch: a lone same-named child merges, other recursion counts each level") {
    event_list_builder b;
    const auto t = b.add_thread({.os_tid = 1, .name = "main"});
    b.add(event_kind::cpu_op, "f", t, 0, 100'000);       // f -> f -> g: the inner f is merged
    b.add(event_kind::cpu_op, "f", t, 10'000, 90'000);
    b.add(event_kind::cpu_op, "g", t, 20'000, 30'000);
    b.add(event_kind::cpu_op, "h", t, 200'000, 300'000);  // h -> (h, h): all three count
    b.add(event_kind::cpu_op, "h", t, 210'000, 240'000);
    b.add(event_kind::cpu_op, "h", t, 250'000, 290'000);
    b.add(event_kind::cpu_op, "k", t, 400'000, 500'000);  // k -> k -> k: one call
    b.add(event_kind::cpu_op, "k", t, 410'000, 490'000);
    b.add(event_kind::cpu_op, "k", t, 420'000, 480'000);
    const event_list events = std::move(b).build();
    const averaged_event_list avg = stint::key_averages(events);
    REQUIRE(avg.size() == 4);

    SUBCASE("a merged call adds its self time to the caller and is not counted") {
        CHECK(avg[0].key == "f");
        CHECK(avg[0].count == 1);
        CHECK(avg[0].cpu_time_total == 100.0);
        CHECK(avg[0].self_cpu_time_total == 90.0);
        CHECK(avg[1].key == "g");
        CHECK(avg[1].has_cpu_parent);
        CHECK(avg[3].key == "k");
        CHECK(avg[3].count == 1);
        CHECK(avg[3].cpu_time_total == 100.0);
        CHECK(avg[3].self_cpu_time_total == 100.0);
    }
    SUBCASE("two recursive calls both count in the total, but self time counts each ns once") {
        CHECK(avg[2].key == "h");
        CHECK(avg[2].count == 3);
        CHECK(avg[2].cpu_time_total == 170.0);
        CHECK(avg[2].self_cpu_time_total == 100.0);
        CHECK(avg[2].cpu_time == doctest::Approx(170.0 / 3));
    }
    SUBCASE("the total of self times is the time covered by top-level events") {
        CHECK(avg.total_average().self_cpu_time_total == 300.0);
        CHECK(stint::total_average(events).self_cpu_time_total == 300.0);
        CHECK(stint::total_average(events).count == 6);
    }
}

TEST_CASE("group_by_input_shape splits rows by the inputs' dims") {
    event_list_builder b;
    const auto t = b.add_thread({.os_tid = 1, .name = "main"});
    auto a = b.add(event_kind::cpu_op, "aten::mm", t, 0, 1'000);
    b.set_args(a, input_shapes({{64, 32}, {32, 16}}));
    auto c = b.add(event_kind::cpu_op, "aten::mm", t, 2'000, 4'000);
    b.set_args(c, input_shapes({{128, 32}, {32, 16}}));
    auto d = b.add(event_kind::cpu_op, "aten::mm", t, 5'000, 8'000);
    b.set_args(d, input_shapes({{64, 32}, {32, 16}}));
    b.add(event_kind::cpu_op, "aten::mm", t, 9'000, 10'000);             // no inputs captured
    auto e = b.add(event_kind::cpu_op, "aten::mm", t, 11'000, 12'000);  // captured, but no dims
    b.set_args(e, input_shapes({}));
    auto s = b.add(event_kind::cpu_op, "aten::mm", t, 13'000, 14'000);  // one scalar input
    b.set_args(s, input_shapes({{}}));
    const event_list events = std::move(b).build();

    const averaged_event_list by_shape = stint::key_averages(events, {.group_by_input_shape = true});
    REQUIRE(by_shape.size() == 4);
    CHECK(by_shape[0].input_shapes == dims{{64, 32}, {32, 16}});
    CHECK(by_shape[0].count == 2);
    CHECK(by_shape[0].cpu_time_total == 4.0);
    CHECK(by_shape[1].input_shapes == dims{{128, 32}, {32, 16}});
    CHECK(by_shape[1].count == 1);
    CHECK(by_shape[2].input_shapes.empty());  // "[]": no capture and no dims are one group
    CHECK(by_shape[2].count == 2);
    CHECK(by_shape[3].input_shapes == dims{{}});
    CHECK(by_shape[3].count == 1);

    const averaged_event_list by_name = stint::key_averages(events);
    REQUIRE(by_name.size() == 1);
    CHECK(by_name[0].count == 6);
    CHECK(by_name[0].input_shapes.empty());
}

TEST_CASE("group_by_stack_n splits rows by the innermost n frames") {
    event_list_builder b;
    const auto t = b.add_thread({.os_tid = 1, .name = "main"});
    auto a = b.add(event_kind::cpu_op, "aten::mm", t, 0, 1'000);
    b.set_stack(a, {"model.py(12): forward", "train.py(40): step", "train.py(80): main"});
    auto c = b.add(event_kind::cpu_op, "aten::mm", t, 2'000, 4'000);
    b.set_stack(c, {"model.py(12): forward", "train.py(41): step", "train.py(80): main"});
    auto d = b.add(event_kind::cpu_op, "aten::mm", t, 5'000, 8'000);
    b.set_stack(d, {"model.py(20): forward"});
    b.add(event_kind::cpu_op, "aten::mm", t, 9'000, 10'000);  // no stack
    const event_list events = std::move(b).build();

    SUBCASE("one frame") {
        const averaged_event_list avg = stint::key_averages(events, {.group_by_stack_n = 1});
        REQUIRE(avg.size() == 3);
        CHECK(avg[0].stack == std::vector<std::string>{"model.py(12): forward"});
        CHECK(avg[0].count == 2);
        CHECK(avg[0].cpu_time_total == 3.0);
        CHECK(avg[1].stack == std::vector<std::string>{"model.py(20): forward"});
        CHECK(avg[2].stack.empty());
    }
    SUBCASE("two frames keep the first event's frames") {
        const averaged_event_list avg = stint::key_averages(events, {.group_by_stack_n = 2});
        REQUIRE(avg.size() == 4);
        CHECK(avg[0].stack == std::vector<std::string>{"model.py(12): forward", "train.py(40): step"});
        CHECK(avg[1].stack == std::vector<std::string>{"model.py(12): forward", "train.py(41): step"});
        CHECK(avg[2].stack == std::vector<std::string>{"model.py(20): forward"});
        CHECK(avg[3].count == 1);
    }
    SUBCASE("more frames than any stack has") {
        const averaged_event_list avg = stint::key_averages(events, {.group_by_stack_n = 10});
        REQUIRE(avg.size() == 4);
        CHECK(avg[0].stack.size() == 3);
    }
    SUBCASE("no stack grouping drops the frames") {
        const averaged_event_list avg = stint::key_averages(events);
        REQUIRE(avg.size() == 1);
        CHECK(avg[0].stack.empty());
    }
    SUBCASE("a negative count is refused") {
        CHECK_THROWS_WITH_AS(
            (void)stint::key_averages(events, {.group_by_stack_n = -1}),
            "stint: key_averages(): group_by_stack_n must be 0 (no stack grouping) or more, got -1",
            std::invalid_argument);
    }
}

TEST_CASE("shape and stack grouping combine") {
    event_list_builder b;
    const auto t = b.add_thread({.os_tid = 1, .name = "main"});
    for (int i = 0; i < 4; ++i) {
        auto e = b.add(event_kind::cpu_op, "aten::add", t, i * 10, i * 10 + 5);
        b.set_args(e, input_shapes({{i % 2 == 0 ? 8 : 16}}));
        b.set_stack(e, {i < 2 ? "a.py(1): f" : "b.py(2): g"});
    }
    const averaged_event_list avg =
        stint::key_averages(std::move(b).build(), {.group_by_input_shape = true, .group_by_stack_n = 1});
    REQUIRE(avg.size() == 4);
    for (const averaged_event& a : avg) CHECK(a.count == 1);
    CHECK(avg[3].input_shapes == dims{{16}});
    CHECK(avg[3].stack == std::vector<std::string>{"b.py(2): g"});
}

TEST_CASE("group_by_overload_name is accepted and groups by name, as stint ops have no overloads") {
    event_list_builder b;
    const auto t = b.add_thread({.os_tid = 1, .name = "main"});
    b.add(event_kind::cpu_op, "aten::add", t, 0, 10);
    b.add(event_kind::cpu_op, "aten::add", t, 20, 30);
    const averaged_event_list avg = stint::key_averages(std::move(b).build(), {.group_by_overload_name = true});
    REQUIRE(avg.size() == 1);
    CHECK(avg[0].count == 2);
}

TEST_CASE("flops are summed over the events that have an estimate") {
    event_list_builder b;
    const auto t = b.add_thread({.os_tid = 1, .name = "main"});
    b.set_flops(b.add(event_kind::cpu_op, "aten::mm", t, 0, 10), 4'194'304);
    b.set_flops(b.add(event_kind::cpu_op, "aten::mm", t, 20, 30), 2'097'152);
    b.add(event_kind::cpu_op, "aten::mm", t, 40, 50);  // -1: no estimate, adds nothing
    b.add(event_kind::cpu_op, "aten::relu", t, 60, 70);
    const event_list events = std::move(b).build();
    const averaged_event_list avg = stint::key_averages(events);
    REQUIRE(avg.size() == 2);
    CHECK(avg[0].flops == 6'291'456);
    CHECK(avg[0].count == 3);
    CHECK(avg[1].flops == 0);
    CHECK(avg.total_average().flops == 6'291'456);
    CHECK(stint::total_average(events).flops == 6'291'456);
}

TEST_CASE("a group is top level when its first event is") {
    event_list_builder b;
    const auto t = b.add_thread({.os_tid = 1, .name = "main"});
    b.add(event_kind::cpu_op, "aten::add", t, 0, 10);        // first: top level
    b.add(event_kind::user_annotation, "block", t, 20, 50);
    b.add(event_kind::cpu_op, "aten::add", t, 30, 40);       // nested
    b.add(event_kind::cpu_op, "aten::mul", t, 41, 45);       // first: nested
    b.add(event_kind::cpu_op, "aten::mul", t, 60, 70);
    const averaged_event_list avg = stint::key_averages(std::move(b).build());
    REQUIRE(avg.size() == 3);
    CHECK(avg[0].key == "aten::add");
    CHECK_FALSE(avg[0].has_cpu_parent);
    CHECK(avg[2].key == "aten::mul");
    CHECK(avg[2].has_cpu_parent);
}

TEST_CASE("total_average sums every row into one keyed Total") {
    event_list_builder b;
    const auto t = b.add_thread({.os_tid = 1, .name = "main"});
    b.add(event_kind::user_annotation, "outer", t, 0, 8'000);
    b.add(event_kind::cpu_op, "aten::add", t, 1'000, 3'000);
    b.add(event_kind::cpu_op, "aten::add", t, 4'000, 5'000);
    const event_list events = std::move(b).build();
    const averaged_event total = stint::key_averages(events).total_average();
    CHECK(total.key == "Total");
    CHECK(total.count == 3);
    CHECK(total.cpu_time_total == 11.0);
    CHECK(total.self_cpu_time_total == 8.0);
    CHECK(total.cpu_time == doctest::Approx(11.0 / 3));
    CHECK_FALSE(total.is_user_annotation);  // like torch, the last row's flags
    const averaged_event raw = stint::total_average(events);
    CHECK(raw.key == "Total");
    CHECK(raw.count == 3);
    CHECK(raw.cpu_time_total == 11.0);
    CHECK(raw.self_cpu_time_total == 8.0);

    const averaged_event none = stint::key_averages(event_list{}).total_average();
    CHECK(none.key == "Total");
    CHECK(none.count == 0);
    CHECK(none.cpu_time == 0.0);
}

TEST_CASE("an empty list has no rows") {
    const averaged_event_list avg = stint::key_averages(event_list{});
    CHECK(avg.empty());
    CHECK(avg.size() == 0);
    CHECK(avg.begin() == avg.end());
}

TEST_CASE("a large list is averaged with exact counts") {
    event_list_builder b;
    const auto t = b.add_thread({.os_tid = 1, .name = "main"});
    constexpr int steps = 20'000;
    for (int i = 0; i < steps; ++i) {
        const std::int64_t at = std::int64_t{i} * 10'000;
        b.add(event_kind::user_annotation, "step", t, at, at + 9'000);
        b.add(event_kind::cpu_op, "aten::mm", t, at + 1'000, at + 4'000);
        b.add(event_kind::cpu_op, i % 2 == 0 ? "aten::add" : "aten::mul", t, at + 5'000, at + 6'000);
    }
    const averaged_event_list avg = stint::key_averages(std::move(b).build());
    REQUIRE(avg.size() == 4);
    CHECK(avg[0].count == steps);
    CHECK(avg[0].self_cpu_time_total == 5.0 * steps);
    CHECK(avg[1].count == steps);
    CHECK(avg[1].cpu_time_total == 3.0 * steps);
    CHECK(avg[2].count == steps / 2);
    CHECK(avg[3].count == steps / 2);
}

TEST_CASE("key_averages shows demangled names while the trace keeps the recorded ones") {
    stint_test::temp_dir dir;
    stint::profiler<> prof;
    prof.start();
    {
        stint::record_function add("_ZN2at6native3addEv");
        stint::record_function foo("_Z3foov");
    }
    prof.stop();
    const averaged_event_list avg = prof.key_averages();
    REQUIRE(avg.size() == 2);
    CHECK(row(avg, 0).key == "at::native::add()");
    CHECK(row(avg, 1).key == "foo()");
    CHECK(avg.table().find("at::native::add()") != std::string::npos);

    // torch's _rewrite_name runs on its function events; Kineto writes the trace from the raw names.
    prof.export_chrome_trace(dir.file("t.json"));
    std::vector<std::string> names;
    for (const auto& e : stint_test::timed_events(stint_test::read_json(dir.file("t.json")))) {
        names.push_back(e.at("name"));
    }
    CHECK(names == std::vector<std::string>{"_ZN2at6native3addEv", "_Z3foov"});
}

TEST_CASE("each distinct name is demangled once, whatever string holds it") {
    stint::detail::display_names names;
    const std::string first = "_Z3foov";
    const std::string second = "_Z3foov";
    const std::string_view shown = names(first);
    CHECK(shown == "foo()");
    CHECK(names(second).data() == shown.data());  // the same stored text
    CHECK(names(first).data() == shown.data());
    CHECK(names("ProfilerStep#12") == "ProfilerStep*");
    CHECK(names("x") == "x");
    CHECK(names("") == "");
    CHECK(names("aten::mm") == "aten::mm");
}
