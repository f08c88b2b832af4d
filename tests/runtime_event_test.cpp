// stint::begin_event: events a framework names at run time, begun in one callback and ended in another
// (issue 32).
#include <doctest/doctest.h>

#include <array>
#include <map>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <stint/stint.hpp>
#include <stint/recording/detail/named_site_table.hpp>

#include "test_util.hpp"

using stint_test::find;

namespace {

// A framework's op schemas: names that live for the process.
constexpr const char* mm_name = "aten::mm";
constexpr const char* relu_name = "aten::relu";

}  // namespace

TEST_CASE("a process-lifetime name is interned: a cpu_op whose name is the framework's own string, nested as called") {
    stint::profiler<> prof;
    prof.start();
    {
        STINT_SCOPE("step");
        stint::event_token mm = stint::begin_event(stint::event_kind::cpu_op, mm_name);
        CHECK(mm.recording());
        { stint::event_token relu = stint::begin_event(stint::event_kind::cpu_op, relu_name); }
        mm.end();
        mm.end();  // a second end does nothing
    }
    prof.stop();
    const stint::event_list& events = prof.events();
    REQUIRE(events.size() == 3);
    const std::optional<stint::event> mm = find(events, "aten::mm");
    const std::optional<stint::event> relu = find(events, "aten::relu");
    REQUIRE(mm.has_value());
    REQUIRE(relu.has_value());
    CHECK(mm->kind == stint::event_kind::cpu_op);
    CHECK(mm->name.data() == mm_name);  // the framework's string itself: no copy was made
    CHECK(events[mm->parent].name == "step");
    CHECK(relu->parent == mm->index);
    CHECK(mm->location == nullptr);
    CHECK(prof.stats().dropped == 0);
    // The table counts it as an op, by name.
    const std::string table = prof.key_averages().table({.row_limit = 10});
    CHECK(table.find("aten::mm") != std::string::npos);
}

TEST_CASE("a token lives in a framework's per-op context and ends from another callback") {
    std::map<int, stint::event_token> open_ops;  // the framework's context, by op handle
    const auto on_begin = [&](int handle, const char* name) {
        open_ops.emplace(handle, stint::begin_event(stint::event_kind::cpu_op, name));
    };
    const auto on_end = [&](int handle) { open_ops.erase(handle); };  // destroying the token ends it
    stint::profiler<> prof;
    prof.start();
    on_begin(1, mm_name);
    on_begin(2, relu_name);
    on_end(2);
    on_end(1);
    on_begin(3, relu_name);
    open_ops.at(3).end();
    open_ops.clear();
    prof.stop();
    const stint::event_list& events = prof.events();
    REQUIRE(events.size() == 3);
    CHECK(events[0].name == "aten::mm");
    CHECK(events[1].name == "aten::relu");
    CHECK(events[1].parent == 0);
    CHECK(events[2].name == "aten::relu");
    CHECK(events[2].depth == 0);
}

TEST_CASE("a transient name is copied once, at begin; user annotations and modules too") {
    stint::profiler<> prof;
    prof.start();
    {
        std::string name = "layer" + std::to_string(3) + ".forward";
        stint::event_token module = stint::begin_event(stint::event_kind::module, name, stint::copy_name);
        std::string op = "custom::" + std::string("gemm");
        stint::event_token token = stint::begin_event(stint::event_kind::cpu_op, op, stint::copy_name);
        op.assign("overwritten before the end");
        name.clear();
        token.end();
        stint::event_token note = stint::begin_event(stint::event_kind::user_annotation, "## note ##");
    }
    prof.stop();
    const stint::event_list& events = prof.events();
    REQUIRE(events.size() == 3);
    CHECK(events[0].name == "layer3.forward");
    CHECK(events[0].kind == stint::event_kind::module);
    CHECK(events[1].name == "custom::gemm");
    CHECK(events[1].kind == stint::event_kind::cpu_op);
    CHECK(events[1].parent == 0);
    CHECK(events[2].kind == stint::event_kind::user_annotation);

    // Longer than a record holds: cut and counted.
    stint::profiler<> again;
    again.start();
    { stint::event_token long_one = stint::begin_event(stint::event_kind::cpu_op, std::string(5000, 'x'), stint::copy_name); }
    {  // exactly the bound: kept whole, not cut
        const std::string exact(stint::detail::max_runtime_name_bytes, 'y');
        stint::event_token at_bound = stint::begin_event(stint::event_kind::cpu_op, exact, stint::copy_name);
    }
    again.stop();
    REQUIRE(again.events().size() == 2);
    CHECK(again.events()[0].name == std::string(stint::detail::max_runtime_name_bytes, 'x'));
    CHECK(again.events()[1].name == std::string(stint::detail::max_runtime_name_bytes, 'y'));
    CHECK(again.stats().truncated_names == 1);
}

TEST_CASE("more names than a thread's cache holds: every event keeps its own name") {
    static std::vector<std::string> names = [] {
        std::vector<std::string> out;
        for (int i = 0; i < 1000; ++i) out.push_back("op" + std::to_string(i));
        return out;
    }();
    stint::profiler<> prof;
    prof.start();
    for (int round = 0; round < 3; ++round) {
        for (const std::string& name : names) stint::begin_event(stint::event_kind::cpu_op, name.c_str()).end();
    }
    prof.stop();
    std::vector<const char*> seen;  // the ops' names, in order (a chunk taken midway is an overhead event)
    for (auto& e : prof.events()) {
        if (e.kind == stint::event_kind::cpu_op) seen.push_back(e.name.data());
    }
    REQUIRE(seen.size() == 3000);
    for (std::size_t i = 0; i < seen.size(); ++i) CHECK(seen[i] == names[i % 1000].c_str());
}

TEST_CASE("without a session a token records nothing; bad kinds and null names are clear errors") {
    stint::event_token idle = stint::begin_event(stint::event_kind::cpu_op, mm_name);
    CHECK_FALSE(idle.recording());
    CHECK_THROWS_WITH_AS(stint::begin_event(stint::event_kind::kernel, mm_name),
                         doctest::Contains("kind must be event_kind::cpu_op"), std::invalid_argument);
    CHECK_THROWS_WITH_AS(stint::begin_event(stint::event_kind::instant, "x", stint::copy_name),
                         doctest::Contains("kind must be"), std::invalid_argument);
    CHECK_THROWS_WITH_AS(stint::begin_event(stint::event_kind::cpu_op, static_cast<const char*>(nullptr)),
                         doctest::Contains("the name is null"), std::invalid_argument);
    // A token begun before the session stays unrecorded after it starts.
    stint::profiler<> prof;
    prof.start();
    idle.end();
    prof.stop();
    CHECK(prof.events().size() == 0);
}

TEST_CASE("a token ended on another thread is recorded there") {
    stint::profiler<> prof;
    prof.start();
    stint::event_token op = stint::begin_event(stint::event_kind::cpu_op, mm_name);
    std::thread other([&] {
        STINT_SCOPE("worker");
        op.end();
    });
    other.join();
    prof.stop();
    const stint::event_list& events = prof.events();
    const std::optional<stint::event> mm = find(events, "aten::mm");
    const std::optional<stint::event> worker = find(events, "worker");
    REQUIRE(mm.has_value());
    REQUIRE(worker.has_value());
    CHECK(mm->thread == worker->thread);
}

namespace {

// A framework's tensor (sizes() and dtype(), no stint code) and its run-time input list.
struct framework_tensor {
    std::vector<std::int64_t> dims;
    const std::vector<std::int64_t>& sizes() const { return dims; }
    std::string_view dtype() const { return "float"; }
};

using shapes_and_flops = stint::config<stint::record_shapes, stint::with_flops>;

}  // namespace

TEST_CASE("an op's inputs from a run-time list: shapes, scalars and None through STINT_OP's encoder, and its flops") {
    const std::vector<framework_tensor> inputs{{{2, 3}}, {{3, 4}}};
    const auto write = [&](stint::input_writer& w) {
        for (const framework_tensor& t : inputs) w.value(t);
    };
    stint::profiler<shapes_and_flops> prof;
    prof.start();
    { auto mm = stint::begin_event<shapes_and_flops>(stint::event_kind::cpu_op, mm_name, write); }
    {
        auto add = stint::begin_event<shapes_and_flops>(stint::event_kind::cpu_op, "aten::add",
                                                          [&](stint::input_writer& w) {
                                                              w.value(inputs[0]);
                                                              w.value(2.5);
                                                              w.none();
                                                          });
    }
    // A config without record_shapes never calls the function.
    bool called = false;
    { auto plain = stint::begin_event<stint::config<>>(stint::event_kind::cpu_op, relu_name, [&](stint::input_writer&) { called = true; }); }
    prof.stop();
    CHECK_FALSE(called);
    const stint::event_list& events = prof.events();
    const std::optional<stint::event> mm = find(events, "aten::mm");
    REQUIRE(mm.has_value());
    const stint::event_args* args = events.args(*mm);
    REQUIRE(args != nullptr);
    CHECK(args->input_dims == std::vector<std::vector<std::int64_t>>{{2, 3}, {3, 4}});
    CHECK(args->input_types == std::vector<std::string>{"float", "float"});
    CHECK(mm->flops == 2 * 2 * 3 * 4);  // torch's mm formula, from the op's name
    CHECK(mm->name.data() == mm_name);
    const std::optional<stint::event> add = find(events, "aten::add");
    REQUIRE(add.has_value());
    REQUIRE(events.args(*add) != nullptr);
    CHECK(events.args(*add)->input_dims == std::vector<std::vector<std::int64_t>>{{2, 3}, {}, {}});
    CHECK(events.args(*add)->input_types == std::vector<std::string>{"float", "Scalar", ""});
    const std::optional<stint::event> relu = find(events, "aten::relu");
    REQUIRE(relu.has_value());
    CHECK(events.args(*relu) == nullptr);
    // The table groups by the run-time shapes, as for STINT_OP.
    const std::string table = prof.key_averages({.group_by_input_shape = true}).table({.row_limit = 10});
    CHECK(table.find("[[2, 3], [3, 4]]") != std::string::npos);
}

TEST_CASE("a std::string_view name is interned by its text: the caller's string may change, every event keeps its name") {
    stint::profiler<> prof;
    prof.start();
    std::string name;
    std::vector<const char*> callers;  // the caller's buffer at each event
    for (int round = 0; round < 3; ++round) {
        for (const char* node : {"MulBackward0", "autograd::engine::evaluate_function: AddmmBackward0"}) {
            name = node;
            callers.push_back(name.data());
            stint::event_token t = stint::begin_event(stint::event_kind::cpu_op, std::string_view(name));
            name.assign("overwritten before the end");
        }
    }
    { stint::event_token same_text_other_kind = stint::begin_event(stint::event_kind::user_annotation, std::string("MulBackward0")); }
    prof.stop();
    std::vector<stint::event> ops;
    for (const stint::event& e : prof.events()) ops.push_back(e);
    REQUIRE(ops.size() == 7);
    for (std::size_t i = 0; i < 6; ++i) {
        CHECK(ops[i].kind == stint::event_kind::cpu_op);
        CHECK(ops[i].name == (i % 2 == 0 ? "MulBackward0" : "autograd::engine::evaluate_function: AddmmBackward0"));
        CHECK(ops[i].name.data() == ops[i % 2].name.data());  // one interned copy per text
        CHECK(ops[i].name.data() != callers[i]);
    }
    CHECK(ops[6].kind == stint::event_kind::user_annotation);
    CHECK(ops[6].name == "MulBackward0");
    CHECK(ops[6].name.data() != ops[0].name.data());  // a site per kind
    CHECK(prof.stats().truncated_names == 0);
}

TEST_CASE("an op named by its text takes its inputs and its formula's flops like a const char* one") {
    const std::vector<framework_tensor> inputs{{{2, 3}}, {{3, 4}}};
    stint::profiler<shapes_and_flops> prof;
    prof.start();
    const std::string name = std::string("aten::") + "mm";
    {
        auto mm = stint::begin_event<shapes_and_flops>(stint::event_kind::cpu_op, std::string_view(name),
                                                         [&](stint::input_writer& w) {
                                                             for (const framework_tensor& t : inputs) w.value(t);
                                                         });
    }
    prof.stop();
    REQUIRE(prof.events().size() == 1);
    const stint::event mm = prof.events()[0];
    CHECK(mm.name == "aten::mm");
    CHECK(mm.name.data() != name.data());
    REQUIRE(prof.events().args(mm) != nullptr);
    CHECK(prof.events().args(mm)->input_dims == std::vector<std::vector<std::int64_t>>{{2, 3}, {3, 4}});
    CHECK(mm.flops == 2 * 2 * 3 * 4);
}

// Last in this file: it fills the process's table of texts (names by const char* are not affected).
TEST_CASE("past the process's bound of interned texts, new names are copied into their records and stay right") {
    stint::profiler<> prof;
    prof.start();
    std::vector<stint::event> seen;
    std::thread([] {  // the thread's "table full" mark stays on it
        for (std::size_t i = 0; i < stint::detail::max_interned_texts + 50; ++i) {
            stint::begin_event(stint::event_kind::user_annotation, "text " + std::to_string(i)).end();
        }
        for (int twice = 0; twice < 2; ++twice) {
            stint::begin_event(stint::event_kind::user_annotation, std::string("past the bound")).end();
        }
    }).join();
    prof.stop();
    std::vector<std::string_view> names;
    for (const stint::event& e : prof.events()) {
        if (e.kind == stint::event_kind::user_annotation) names.push_back(e.name);
    }
    REQUIRE(names.size() == stint::detail::max_interned_texts + 52);
    for (std::size_t i = 0; i < stint::detail::max_interned_texts + 50; ++i) {
        REQUIRE(names[i] == "text " + std::to_string(i));
    }
    CHECK(names[names.size() - 1] == "past the bound");
    CHECK(names[names.size() - 2] == "past the bound");
    CHECK(prof.stats().dropped == 0);
}
