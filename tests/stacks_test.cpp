// with_stack: stacks from source locations and the scope tree, native frames, export_stacks
// (collapsed stacks, test_export_stacks), the table's Source Location, key_averages by stack, the
// trace's "Call stack", and threads started and joined around the session (test_source_multithreaded).
#include <doctest/doctest.h>

#include <stint/stint.hpp>
#include <stint/analysis/event_tree.hpp>
#include <stint/analysis/detail/call_stacks.hpp>

#include <algorithm>
#include <atomic>
#include <barrier>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "test_util.hpp"

namespace {

using stacks = stint::config<stint::with_stack<>>;
using native_stacks = stint::config<stint::with_stack<stint::native>>;

// Busy for `us` microseconds, so that self times are whole microseconds.
using stint_test::spin_for;

void leaf_op() {
    STINT_OP(stacks, "aten::mm");
    spin_for(std::chrono::microseconds(30));
}

void forward_pass() {
    STINT_SCOPE("forward");
    spin_for(std::chrono::microseconds(20));
    leaf_op();
    leaf_op();
}

using stint_test::find;

using stint_test::lines_of;

bool contains(std::string_view text, std::string_view part) { return text.find(part) != std::string_view::npos; }

// This file as stacks show it: the compiler's __FILE__ under the source path rule.
std::string paths_of_test_file() {
    return stint::detail::readable_source_path(__FILE__, std::filesystem::current_path().string());
}

}  // namespace

TEST_CASE("with_stack gives each event its site and its enclosing scopes, innermost first") {
    stint::profiler<stacks> prof;
    prof.start();
    forward_pass();
    prof.stop();

    std::optional<stint::event> op = find(prof.events(), "aten::mm");
    REQUIRE(op != std::nullopt);
    const auto stack = prof.events().stack(*op);
    REQUIRE(stack.size() == 2);
    CHECK(contains(stack[0], "stacks_test.cpp("));
    CHECK(stack[0].ends_with("): leaf_op"));
    CHECK(stack[1].ends_with("): forward_pass"));
    REQUIRE(op->location != nullptr);
    CHECK(std::string_view(op->location->function) == "leaf_op");
    const std::string cwd = std::filesystem::current_path().string();
    CHECK(stack[0] == fmt::format("{}({}): leaf_op", stint::detail::readable_source_path(op->location->file, cwd),
                                  op->location->line));
    // The path shown names this file, wherever the build directory is: from the working directory, from
    // the source root (tests/..), or absolute. Where the compiler's path reaches the file from here (a
    // run in the build directory, as tests run), that is checked on the file system.
    const std::string shown = stack[0].substr(0, stack[0].rfind('('));
    CHECK(shown.ends_with("tests/stacks_test.cpp"));
    CHECK_FALSE(shown.starts_with("."));
    const std::filesystem::path compiled = (std::filesystem::path(cwd) / op->location->file).lexically_normal();
    if (std::filesystem::exists(compiled)) {
        const std::filesystem::path root = compiled.parent_path().parent_path();
        const std::filesystem::path named = std::filesystem::path(shown).is_absolute() ? std::filesystem::path(shown)
                                            : std::filesystem::exists(std::filesystem::path(cwd) / shown)
                                                ? std::filesystem::path(cwd) / shown
                                                : root / shown;
        CHECK(std::filesystem::equivalent(named, compiled));
    }
    CHECK(stint::detail::readable_source_path("../tests/stacks_test.cpp", cwd) == "tests/stacks_test.cpp");
    CHECK(stint::detail::readable_source_path("../../src/./a/../tests/stacks_test.cpp", cwd) == "src/tests/stacks_test.cpp");
    CHECK(stint::detail::readable_source_path(cwd + "/tests/stacks_test.cpp", cwd) == "tests/stacks_test.cpp");
    CHECK(stint::detail::readable_source_path("/elsewhere/tests/stacks_test.cpp", "/home/u/proj") ==
          "/elsewhere/tests/stacks_test.cpp");
    CHECK_FALSE(stack[0].starts_with("."));
    CHECK_FALSE(contains(stack[0], "/../"));

    // Both calls share one interned stack; the scope's stack is the op's without its first frame.
    std::optional<stint::event> forward = find(prof.events(), "forward");
    REQUIRE(forward != std::nullopt);
    const auto outer = prof.events().stack(*forward);
    REQUIRE(outer.size() == 1);
    CHECK(outer[0] == stack[1]);
    std::set<stint::event_index> op_stacks;
    for (const stint::event& e : prof.events()) {
        if (e.name == "aten::mm") op_stacks.insert(e.stack);
    }
    CHECK(op_stacks.size() == 1);
}

TEST_CASE("a stack is a view of the list's interned stacks: iteration, front, outer, first, equality") {
    stint::profiler<stacks> prof;
    prof.start();
    forward_pass();
    prof.stop();
    std::optional<stint::event> op = find(prof.events(), "aten::mm");
    std::optional<stint::event> forward = find(prof.events(), "forward");
    REQUIRE(op != std::nullopt);
    REQUIRE(forward != std::nullopt);
    const stint::call_stack stack = prof.events().stack(*op);
    const stint::call_stack caller = prof.events().stack(*forward);

    const std::vector<std::string> frames(stack.begin(), stack.end());
    REQUIRE(frames.size() == 2);
    CHECK(frames[0].ends_with("): leaf_op"));
    CHECK(frames[1].ends_with("): forward_pass"));
    CHECK(stack.size() == 2);
    CHECK_FALSE(stack.empty());
    CHECK(stack.front() == frames[0]);
    CHECK(stack[1] == frames[1]);
    CHECK(std::distance(stack.begin(), stack.end()) == 2);
    CHECK(stack.begin()->size() == frames[0].size());

    // outer(): the caller's stack; first(n): the innermost n frames.
    CHECK(stack.outer() == caller);
    CHECK(stack.outer().size() == 1);
    CHECK(caller.outer().empty());
    CHECK(stack.first(1).size() == 1);
    CHECK(stack.first(1).front() == frames[0]);
    CHECK(std::vector<std::string>(stack.first(1).begin(), stack.first(1).end()) ==
          std::vector<std::string>{frames[0]});
    CHECK(stack.first(5) == stack);
    CHECK(stack.first(0).empty());
    CHECK_FALSE(stack.first(1) == caller);  // same size, other frame

    const stint::call_stack none;
    CHECK(none.empty());
    CHECK(none.size() == 0);
    CHECK(none.begin() == none.end());
    CHECK(none == stack.first(0));
}

TEST_CASE("names made at run time are their own frame") {
    stint::profiler<stacks> prof;
    prof.start();
    {
        stint::record_function outer("phase one");
        STINT_OP(stacks, "aten::add");
    }
    prof.stop();
    std::optional<stint::event> op = find(prof.events(), "aten::add");
    REQUIRE(op != std::nullopt);
    const auto stack = prof.events().stack(*op);
    REQUIRE(stack.size() == 2);
    CHECK(stack[1] == "phase one");
}

TEST_CASE("without with_stack there are no stacks, no Call stack arg and records stay 24 bytes") {
    static_assert(std::is_same_v<stint::detail::scope_or_site<stacks>, stint::detail::scope<stacks>>);
    static_assert(stint::detail::scope_payload_kind<stacks>() == stint::detail::payload_kind::none);
    static_assert(stint::detail::op_payload_kind<stacks>() == stint::detail::payload_kind::none);
    static_assert(sizeof(stint::detail::record) == 24);

    stint_test::temp_dir dir;
    stint::profiler<> prof;
    prof.start();
    forward_pass();
    prof.stop();
    for (const stint::event& e : prof.events()) CHECK(prof.events().stack(e).empty());
    prof.export_chrome_trace(dir.file("t.json"));
    for (const auto& e : stint_test::timed_events(stint_test::read_json(dir.file("t.json")))) {
        CHECK_FALSE(e.at("args").contains("Call stack"));
    }

    // with_stack<> (scopes) adds nothing to records: exactly 65472 / 24 = 2728 fit in one chunk.
    stint::profiler<stacks> counted({.buffer_budget_bytes = stint::detail::chunk::total_bytes});
    counted.start();
    for (int i = 0; i < 3000; ++i) {
        STINT_OP(stacks, "counted");
    }
    counted.stop();
    CHECK(counted.stats().recorded == 2728);
    CHECK(counted.stats().dropped == 272);
}

TEST_CASE("export_stacks writes collapsed stacks: root first, positive integers, frames sanitised") {
    stint_test::temp_dir dir;
    stint::profiler<stacks> prof;
    prof.start();
    forward_pass();
    {
        stint::record_function odd("a b;c\td\ne");
        spin_for(std::chrono::microseconds(30));
    }
    STINT_OP(stacks, "too_short");  // self time rounds to 0 µs: no row
    prof.stop();

    const std::string path = dir.file("cpu.stacks");
    prof.export_stacks(path);
    const std::vector<std::string> lines = lines_of(stint_test::read_file(path));
    REQUIRE_FALSE(lines.empty());
    for (const std::string& line : lines) {
        const std::string last = line.substr(line.rfind(' ') + 1);
        CHECK(std::stoll(last) > 0);  // test_export_stacks: int(line.split(" ")[-1]) > 0
        CHECK(std::count(line.begin(), line.end(), ' ') == 1);
    }
    std::optional<stint::event> op = find(prof.events(), "aten::mm");
    REQUIRE(op != std::nullopt);
    const auto stack = prof.events().stack(*op);
    const std::vector<std::string> frames(stack.begin(), stack.end());
    std::string expected_path;
    for (auto frame = frames.rbegin(); frame != frames.rend(); ++frame) {
        if (!expected_path.empty()) expected_path += ';';
        for (char c : *frame) expected_path += c == ' ' ? '_' : c;
    }
    // Two events of that path, each its own row, as torch writes them.
    CHECK(std::count_if(lines.begin(), lines.end(),
                        [&](const std::string& l) { return l.starts_with(expected_path + " "); }) == 2);
    CHECK(std::any_of(lines.begin(), lines.end(), [](const std::string& l) { return l.starts_with("a_b_c_d_e "); }));
    CHECK_FALSE(std::any_of(lines.begin(), lines.end(), [](const std::string& l) { return contains(l, "too_short"); }));
    // Each row's value is the event's self time in whole microseconds.
    std::int64_t forward_total = 0;
    for (const std::string& l : lines) {
        if (l.find(';') == std::string::npos && contains(l, "forward_pass")) {
            forward_total += std::stoll(l.substr(l.rfind(' ') + 1));
        }
    }
    std::optional<stint::event> forward = find(prof.events(), "forward");
    REQUIRE(forward != std::nullopt);
    CHECK(forward_total == static_cast<std::int64_t>(forward->self_cpu_time_total()));

    // No device events yet: nothing has self CUDA time.
    prof.export_stacks(dir.file("cuda.stacks"), "self_cuda_time_total");
    REQUIRE(std::filesystem::is_regular_file(dir.file("cuda.stacks")));  // written, and empty
    CHECK(stint_test::read_file(dir.file("cuda.stacks")).empty());
}

TEST_CASE("export_stacks with stack_frames::names writes scope and op names, root first") {
    stint_test::temp_dir dir;
    stint::profiler<stacks> prof;
    prof.start();
    forward_pass();
    {
        stint::record_function odd("a b;c\td\ne");
        spin_for(std::chrono::microseconds(30));
        stint::record_function inner("in ner;x");
        spin_for(std::chrono::microseconds(30));
    }
    prof.stop();

    // Rows of this test's events (a session may hold stint's own events too), split into path and value.
    const auto rows = [](const std::string& file, auto&& mine) {
        std::vector<std::pair<std::string, std::int64_t>> kept;
        for (const std::string& line : lines_of(stint_test::read_file(file))) {
            REQUIRE(std::count(line.begin(), line.end(), ' ') == 1);
            const std::size_t space = line.rfind(' ');
            CHECK(std::stoll(line.substr(space + 1)) > 0);
            if (mine(line.substr(0, space))) {
                kept.emplace_back(line.substr(0, space), std::stoll(line.substr(space + 1)));
            }
        }
        return kept;
    };
    const std::string names = dir.file("names.stacks");
    prof.export_stacks(names, "self_cpu_time_total", stint::stack_frames::names);
    const auto named = rows(names, [](const std::string& path) {
        return path.starts_with("forward") || path.starts_with("a_b_c_d_e");
    });
    // One row per event with whole microseconds of self time, in the events' order.
    std::vector<std::string> paths;
    for (const auto& row : named) paths.push_back(row.first);
    CHECK(paths == std::vector<std::string>{"forward", "forward;aten::mm", "forward;aten::mm", "a_b_c_d_e",
                                            "a_b_c_d_e;in_ner_x"});
    // Each row's value is that event's self time, as in torch's form.
    std::vector<std::int64_t> expected;
    for (const stint::event& e : prof.events()) {
        const bool mine =
            e.name == "forward" || e.name == "aten::mm" || e.name == "a b;c\td\ne" || e.name == "in ner;x";
        if (mine && e.self_ns >= 1000) expected.push_back(e.self_ns / 1000);
    }
    std::vector<std::int64_t> values;
    for (const auto& row : named) values.push_back(row.second);
    CHECK(values == expected);

    // torch's form stays the default: the same rows, framed by source locations.
    const std::string locations = dir.file("locations.stacks");
    prof.export_stacks(locations);
    const auto located = rows(locations, [](const std::string& path) {
        return contains(path, "forward_pass") || path.starts_with("a_b_c_d_e");
    });
    REQUIRE(located.size() == named.size());
    CHECK(located[1].first.starts_with(paths_of_test_file() + "("));
    CHECK(contains(located[1].first, "):_forward_pass;"));
    CHECK(located[1].first.ends_with("):_leaf_op"));
    CHECK(located[3].first == "a_b_c_d_e");
    CHECK(located[4].first == "a_b_c_d_e;in_ner_x");
    for (std::size_t i = 0; i < named.size(); ++i) CHECK(located[i].second == named[i].second);
}

TEST_CASE("stack_frames::names shows names as the table does, and the drop row") {
    using stint::detail::event_list_builder;
    event_list_builder b;
    const auto t = b.add_thread({.os_tid = 1, .name = "main"});
    b.add(stint::event_kind::user_annotation, "ProfilerStep#3", t, 0, 10'000);
    b.add(stint::event_kind::cpu_op, "_ZN2at6native3addEv", t, 1'000, 4'000);
    b.add(stint::event_kind::cpu_op, "x\ty", t, 5'000, 7'000);
    b.add(stint::event_kind::cpu_op, "x\ty", t, 11'000, 12'999);  // 1.999 us: written as 1
    b.add(stint::event_kind::cpu_op, "short", t, 13'000, 13'999);  // rounds to 0 us: no row
    b.set_totals(5, 7);
    const stint::event_list events = std::move(b).build();
    std::string text;
    struct string_sink {
        std::string* text;
        void write(std::string_view block) const { text->append(block); }
    } sink{&text};
    stint::detail::write_collapsed_stacks(sink, events, "self_cpu_time_total", stint::stack_frames::names);
    CHECK(text == "ProfilerStep* 5\nProfilerStep*;at::native::add() 3\nProfilerStep*;x_y 2\nx_y 1\n"
                  "[stint]_7_records_dropped 1\n");
    // No stacks recorded: torch's form has no rows, only the drops.
    std::string located;
    string_sink located_sink{&located};
    stint::detail::write_collapsed_stacks(located_sink, events, "self_cpu_time_total");
    CHECK(located == "[stint]_7_records_dropped 1\n");
}

TEST_CASE("source paths of a build directory inside the source tree or elsewhere: one a user can open") {
    using stint::detail::readable_source_path;
    const stint_test::temp_dir tmp;
    const std::filesystem::path top(tmp.path());
    std::filesystem::create_directories(top / "proj" / "src");
    std::filesystem::create_directories(top / "proj" / "build" / "sub");
    std::filesystem::create_directories(top / "out");
    std::ofstream(top / "proj" / "meson.build") << "project('p')\n";
    std::ofstream(top / "proj" / "src" / "a.cpp") << "int a;\n";
    const std::string proj = (top / "proj").string();
    const std::string whole = (top / "proj" / "src" / "a.cpp").string();
    // Inside the source tree: from the source root, however deep the build directory.
    CHECK(readable_source_path("../src/a.cpp", proj + "/build") == "src/a.cpp");
    CHECK(readable_source_path("../../src/a.cpp", proj + "/build/sub") == "src/a.cpp");
    // Elsewhere (meson setup /tmp/out): the whole path, not "proj/src/a.cpp" from nowhere.
    CHECK(readable_source_path("../proj/src/a.cpp", (top / "out").string()) == whole);
    CHECK(readable_source_path("../../proj/src/a.cpp", (top / "out").string() + "/x") == whole);
    // Run from the source root itself: the ".." reach nothing, and the path is from the root.
    CHECK(readable_source_path("../src/a.cpp", proj) == "src/a.cpp");
}

TEST_CASE("source paths show from the source root, without the build directory's ..") {
    using stint::detail::readable_source_path;
    const std::string_view cwd = "/home/u/proj";
    CHECK(readable_source_path("../examples/quickstart.cpp", cwd) == "examples/quickstart.cpp");
    CHECK(readable_source_path("../../src/a.cpp", cwd) == "src/a.cpp");
    CHECK(readable_source_path("./src/a.cpp", cwd) == "src/a.cpp");
    CHECK(readable_source_path("src/./x/../b.cpp", cwd) == "src/b.cpp");
    CHECK(readable_source_path("src/a.cpp", cwd) == "src/a.cpp");
    CHECK(readable_source_path("a.cpp", cwd) == "a.cpp");
    CHECK(readable_source_path("../x/../../lib/c.hpp", cwd) == "lib/c.hpp");
    // Absolute (CMake): relative to the working directory when under it, else whole.
    CHECK(readable_source_path("/home/u/proj/src/a.cpp", cwd) == "src/a.cpp");
    CHECK(readable_source_path("/home/u/proj/build/../src/a.cpp", cwd) == "src/a.cpp");
    CHECK(readable_source_path("/home/u/proj/src/a.cpp", "/home/u/proj/") == "src/a.cpp");
    CHECK(readable_source_path("/home/u/proj2/a.cpp", cwd) == "/home/u/proj2/a.cpp");
    CHECK(readable_source_path("/home/u/proj", cwd) == "/home/u/proj");
    CHECK(readable_source_path("/usr/include/c++/12/vector", cwd) == "/usr/include/c++/12/vector");
    CHECK(readable_source_path("/usr//include/./x.h", "/") == "/usr/include/x.h");
    CHECK(readable_source_path("/../a.cpp", "") == "/a.cpp");
    CHECK(readable_source_path("/home/u/proj/a.cpp", "") == "/home/u/proj/a.cpp");
    CHECK(readable_source_path("", cwd).empty());
}

TEST_CASE("export_stacks refuses an unknown metric and an unwritable path, and shows drops") {
    stint_test::temp_dir dir;
    stint::profiler<stacks> prof;
    prof.start();
    forward_pass();
    prof.stop();
    try {
        prof.export_stacks(dir.file("x.stacks"), "cpu_time_total");
        FAIL("no exception");
    } catch (const std::invalid_argument& e) {
        CHECK(std::string(e.what()) ==
              "stint: export_stacks: metric should be one of: [self_cpu_time_total, self_cuda_time_total], not "
              "\"cpu_time_total\"");
    }
    CHECK_FALSE(std::filesystem::exists(dir.file("x.stacks")));
    CHECK_THROWS_AS(prof.export_stacks(dir.file("missing/dir/x.stacks")), std::runtime_error);
    CHECK(std::filesystem::is_empty(dir.path()));

    stint::profiler<stacks> small({.buffer_budget_bytes = stint::detail::chunk::total_bytes});
    small.start();
    for (int i = 0; i < 3000; ++i) {
        STINT_OP(stacks, "counted");
    }
    {
        STINT_OP(stacks, "slow");
        spin_for(std::chrono::microseconds(30));
    }
    small.stop();
    REQUIRE(small.stats().dropped > 0);
    small.export_stacks(dir.file("drops.stacks"));
    const std::vector<std::string> lines = lines_of(stint_test::read_file(dir.file("drops.stacks")));
    REQUIRE_FALSE(lines.empty());
    CHECK(lines.back() == fmt::format("[stint]_{}_records_dropped 1", small.stats().dropped));
}

TEST_CASE("stacks feed the table's Source Location, key_averages by stack and the trace's Call stack") {
    stint_test::temp_dir dir;
    stint::profiler<stacks> prof;
    prof.start();
    forward_pass();
    prof.stop();

    const std::string table = prof.key_averages({.group_by_stack_n = 5}).table({.sort_by = "self_cpu_time_total"});
    CHECK(contains(table, "Source Location"));
    CHECK(contains(table, "leaf_op"));
    CHECK(contains(table, "  " + paths_of_test_file() + "("));
    CHECK_FALSE(contains(table, "../"));
    const auto by_stack = prof.key_averages({.group_by_stack_n = 1});
    const auto mm = std::find_if(by_stack.begin(), by_stack.end(), [](const auto& a) { return a.key == "aten::mm"; });
    REQUIRE(mm != by_stack.end());
    CHECK(mm->count == 2);
    REQUIRE(mm->stack.size() == 1);
    CHECK(mm->stack[0].ends_with("leaf_op"));

    prof.export_chrome_trace(dir.file("t.json"));
    const auto events = stint_test::timed_events(stint_test::read_json(dir.file("t.json")));
    int with_stack = 0;
    for (const auto& e : events) {
        if (e.at("name") != "aten::mm") continue;
        const std::string call_stack = e.at("args").at("Call stack");
        CHECK(contains(call_stack, "leaf_op;"));
        CHECK(call_stack.ends_with("forward_pass;"));  // Kineto: innermost first, each followed by ';'
        CHECK(call_stack.starts_with(paths_of_test_file() + "("));
        CHECK_FALSE(contains(call_stack, "../"));
        ++with_stack;
    }
    CHECK(with_stack == 2);
}

namespace {

__attribute__((noinline)) void native_leaf(int depth) {
    STINT_OP(native_stacks, "native::op");
    spin_for(std::chrono::microseconds(5 + depth));
}

__attribute__((noinline)) void native_caller(int depth) {
    native_leaf(depth);
    spin_for(std::chrono::microseconds(1));  // keeps the call from becoming a tail call
}

}  // namespace

TEST_CASE("with_stack<native> records return addresses and names them, demangled, at drain") {
    static_assert(stint::detail::native_stack_depth<native_stacks> == 32);
    static_assert(stint::detail::op_payload_kind<native_stacks>() == stint::detail::payload_kind::native_stack);
    static_assert(stint::detail::native_stack_depth<stacks> == 0);
    stint::profiler<native_stacks> prof;
    prof.start();
    native_caller(1);
    native_caller(2);
    prof.stop();

    std::optional<stint::event> op = find(prof.events(), "native::op");
    REQUIRE(op != std::nullopt);
    const auto stack = prof.events().stack(*op);
    REQUIRE(stack.size() >= 3);
    // Functions in an anonymous namespace are not exported: found in the executable's .symtab.
    CHECK(contains(stack[0], "native_leaf(int)"));
    CHECK(contains(stack[1], "native_caller(int)"));
    CHECK(std::any_of(stack.begin(), stack.end(),
                      [](const std::string& f) { return contains(f, "DOCTEST_ANON_FUNC"); }));
    // Interned by name: two calls from different lines of one function share a stack.
    std::vector<std::optional<stint::event>> ops;
    for (const stint::event& e : prof.events()) ops.push_back(e);
    REQUIRE(ops.size() == 2);
    const auto a = prof.events().stack(*ops[0]);
    const auto b = prof.events().stack(*ops[1]);
    CHECK(ops[0]->stack == ops[1]->stack);
    CHECK(a[0] == b[0]);
    CHECK(a[1] == b[1]);

    // Scopes inside a native-stack scope stack on top of its native frames.
    stint::profiler<native_stacks> nested;
    nested.start();
    {
        STINT_OP(native_stacks, "outer");
        STINT_OP(stacks, "inner");
    }
    nested.stop();
    std::optional<stint::event> inner = find(nested.events(), "inner");
    std::optional<stint::event> outer = find(nested.events(), "outer");
    REQUIRE(inner != std::nullopt);
    REQUIRE(outer != std::nullopt);
    const auto inner_stack = nested.events().stack(*inner);
    const auto outer_stack = nested.events().stack(*outer);
    REQUIRE(inner_stack.size() == outer_stack.size() + 1);
    CHECK(inner_stack[0].ends_with(std::string(": ") + inner->location->function));
    CHECK(std::equal(outer_stack.begin(), outer_stack.end(), std::next(inner_stack.begin())));
    CHECK(inner_stack.outer() == outer_stack);
}

TEST_CASE("with_stack<native> without a session takes no stack") {
    // A record's payload holds the frames: with no session nothing is written at all.
    stint::profiler<native_stacks> prof;
    native_caller(0);
    prof.start();
    prof.stop();
    CHECK(prof.events().empty());
}

namespace {

// test_source_multithreaded in C++: threads started before or during the session, joined during or
// after it; each worker thread runs the same instrumented task once after the session starts.
struct thread_spec {
    bool start_in_session;
    bool join_in_session;
};

void invoked_during_run() {
    STINT_SCOPE("invoked_during_run");
    STINT_OP(stacks, "aten::linear");
}

void run_threads(const std::vector<thread_spec>& spec, bool work_in_main_thread) {
    const std::ptrdiff_t parties = static_cast<std::ptrdiff_t>(spec.size()) + 1;
    std::barrier start_barrier(parties);
    std::barrier end_barrier(parties);
    std::atomic<bool> released{false};
    const auto task = [&] {
        start_barrier.arrive_and_wait();
        invoked_during_run();
        end_barrier.arrive_and_wait();
        while (!released.load()) std::this_thread::yield();
    };
    std::vector<std::unique_ptr<std::thread>> threads(spec.size());
    const auto add_threads = [&](bool in_session) {
        for (std::size_t i = 0; i < spec.size(); ++i) {
            if (spec[i].start_in_session == in_session) threads[i] = std::make_unique<std::thread>(task);
        }
    };
    const auto join_threads = [&](bool in_session) {
        for (std::size_t i = 0; i < spec.size(); ++i) {
            if (spec[i].join_in_session == in_session) {
                released = true;
                threads[i]->join();
            }
        }
    };
    add_threads(false);
    stint::profiler<stacks> prof;
    prof.start();
    add_threads(true);
    start_barrier.arrive_and_wait();
    if (work_in_main_thread) invoked_during_run();
    end_barrier.arrive_and_wait();
    join_threads(true);
    prof.stop();
    join_threads(false);

    // Unlike torch's Python tracer, stint sees threads started during the session too.
    const std::size_t workers = spec.size() + (work_in_main_thread ? 1 : 0);
    std::set<std::uint64_t> tids;
    std::size_t observed = 0;
    for (const stint::event& e : prof.events()) {
        if (e.name != "aten::linear") continue;
        ++observed;
        tids.insert(prof.events().thread_of(e).os_tid);
        const auto stack = prof.events().stack(e);
        REQUIRE(stack.size() == 2);
        CHECK(stack[1].ends_with(": invoked_during_run"));
    }
    CHECK(observed == workers);
    CHECK(tids.size() == workers);
    CHECK(prof.stats().dropped == 0);
}

}  // namespace

TEST_CASE("stacks from threads started and joined before, during and after the session") {
    const std::vector<std::pair<const char*, std::vector<thread_spec>>> specs{
        {"basic", {{false, false}}},
        {"multiple_preexisting", {{false, false}, {false, false}}},
        {"open_in_scope", {{true, false}}},
        {"close_in_scope", {{false, true}}},
        {"complex",
         {{false, false}, {false, false}, {false, false}, {false, false}, {false, true}, {false, true}, {true, false},
          {true, true}}},
    };
    for (const auto& named_spec : specs) {
        for (bool main_works : {true, false}) {
            const std::string name = named_spec.first;  // clang 14: no structured binding in CAPTURE
            CAPTURE(name);
            CAPTURE(main_works);
            run_threads(named_spec.second, main_works);
        }
    }
}
