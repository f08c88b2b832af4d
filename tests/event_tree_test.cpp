// The event list's order and tree: runs in end order (as thread buffers drain) are ordered in linear
// time and must give exactly what a sort by (start, longer first, insertion) gives; anything else
// falls back to that sort.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include <stint/stint.hpp>
#include <stint/analysis/event_tree.hpp>

#include "nesting_workload.hpp"
#include "test_util.hpp"

namespace {

using stint::event_kind;
using stint::detail::event_list_builder;

struct raw_event {
    std::int64_t start;
    std::int64_t end;
    std::uint32_t thread;
    std::string name;
};

// Emits a random forest of nested scopes in post-order (a scope is appended when it ends), with
// zero-length instants among them, as one thread buffer holds them.
void random_forest(std::mt19937& rng, std::int64_t& clock, int depth, std::uint32_t thread,
                   std::vector<raw_event>& out) {
    std::uniform_int_distribution<int> children(0, depth > 4 ? 0 : 3);
    std::uniform_int_distribution<int> gap(1, 5);
    std::uniform_int_distribution<int> coin(0, 5);
    const int n = children(rng);
    for (int i = 0; i < n; ++i) {
        clock += gap(rng);
        if (coin(rng) == 0) {
            out.push_back({clock, clock, thread, "instant"});
            continue;
        }
        const std::int64_t start = clock;
        random_forest(rng, clock, depth + 1, thread, out);
        clock += gap(rng);
        out.push_back({start, clock, thread, "d" + std::to_string(depth)});
    }
}

// The reference: events sorted by (start, end descending, insertion index).
std::vector<std::size_t> reference_order(const std::vector<raw_event>& events) {
    std::vector<std::size_t> order(events.size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
        return std::tuple(events[a].start, -events[a].end, a) < std::tuple(events[b].start, -events[b].end, b);
    });
    return order;
}

void check_same_order(const std::vector<raw_event>& added, const stint::event_list& list) {
    const std::vector<std::size_t> expected = reference_order(added);
    REQUIRE(list.size() == added.size());
    for (std::size_t i = 0; i < expected.size(); ++i) {
        const raw_event& want = added[expected[i]];
        const stint::event& got = list[i];
        INFO("position " << i);
        REQUIRE(got.start_ns == want.start);
        REQUIRE(got.end_ns == want.end);
        REQUIRE(got.thread == want.thread);
        REQUIRE(got.name == want.name);
    }
}

}  // namespace

TEST_CASE("runs in end order are ordered exactly as a sort orders them, over random forests") {
    std::mt19937 rng(20261123);
    for (int trial = 0; trial < 200; ++trial) {
        event_list_builder b;
        std::vector<raw_event> added;
        const std::uint32_t threads = 1 + trial % 4;
        for (std::uint32_t t = 0; t < threads; ++t) b.add_thread({.os_tid = 100 + t, .name = ""});
        for (std::uint32_t t = 0; t < threads; ++t) {
            std::int64_t clock = trial % 3 == 0 ? 0 : static_cast<std::int64_t>(t);  // equal starts across runs
            std::vector<raw_event> run;
            random_forest(rng, clock, 0, t, run);
            b.begin_run();
            for (const raw_event& e : run) b.add_copy(event_kind::user_annotation, e.name, e.thread, e.start, e.end);
            added.insert(added.end(), run.begin(), run.end());
        }
        check_same_order(added, std::move(b).build());
    }
}

TEST_CASE("a run that is not in end order (scopes ended out of order, equal times) is sorted instead") {
    event_list_builder b;
    const auto t = b.add_thread({.os_tid = 1, .name = ""});
    // record_function::end() lets a scope end before one it encloses; equal times tie on insertion.
    const std::vector<raw_event> added = {
        {10, 30, t, "outer ended early"}, {20, 40, t, "inner ended late"}, {5, 5, t, "zero"},
        {5, 5, t, "zero twin"},           {0, 50, t, "root"},             {50, 60, t, "after"},
        {50, 60, t, "after twin"},
    };
    b.begin_run();
    for (const raw_event& e : added) b.add_copy(event_kind::user_annotation, e.name, e.thread, e.start, e.end);
    const stint::event_list list = std::move(b).build();
    check_same_order(added, list);
    CHECK(list[0].name == "root");
    CHECK(list[1].name == "zero");
    CHECK(list[2].name == "zero twin");
}

TEST_CASE("events added without runs (by hand, any order) are sorted, and the tree is linked") {
    event_list_builder b;
    const auto t = b.add_thread({.os_tid = 1, .name = ""});
    b.add(event_kind::cpu_op, "child", t, 2, 4);
    b.add(event_kind::user_annotation, "parent", t, 0, 10);
    b.add(event_kind::cpu_op, "sibling", t, 5, 9);
    const stint::event_list list = std::move(b).build();
    REQUIRE(list.size() == 3);
    CHECK(list[0].name == "parent");
    CHECK(list[0].self_ns == 10 - 2 - 4);
    CHECK(list[1].parent == 0);
    CHECK(list[2].parent == 0);
    CHECK(list[1].next_sibling == 2);
    CHECK(list[0].first_child == 1);
}

TEST_CASE("a drained session orders several threads' records like a sort would") {
    stint::profiler<> prof;
    prof.start();
    const auto work = [] {
        for (int i = 0; i < 300; ++i) {
            STINT_SCOPE("outer");
            {
                STINT_SCOPE("inner");
                STINT_INSTANT("tick");
            }
        }
    };
    std::thread other(work);
    work();
    other.join();
    prof.stop();
    const stint::event_list& list = prof.events();
    REQUIRE(stint_test::program_event_count(list) == 2 * 300 * 3);
    CHECK(stint_test::overhead_event_count(list, "[stint] register thread") >= 1);  // `other` registered
    for (std::size_t i = 1; i < list.size(); ++i) {
        const stint::event& a = list[i - 1];
        const stint::event& b = list[i];
        INFO("position " << i);
        REQUIRE((a.start_ns < b.start_ns || (a.start_ns == b.start_ns && a.end_ns >= b.end_ns)));
    }
    for (const stint::event& e : list) {
        if (e.name == "inner") REQUIRE(list[e.parent].name == "outer");
        if (e.name == "tick") REQUIRE(list[e.parent].name == "inner");
    }
}

TEST_CASE("on the machine's clock, the tree is the nesting the program executed") {
    nesting::run_and_check(4, 3000);
}

TEST_CASE("three nested scopes in a loop nest as written, with the machine's clock ties") {
    nesting::check_three_level_loop(300'000);
}

TEST_CASE("the list keeps a timing-only event in 48 bytes, and a copied name once") {
    event_list_builder b;
    const auto t = b.add_thread({.os_tid = 1, .name = "main"});
    constexpr std::int64_t n = 10'000;
    b.reserve(n);
    for (std::int64_t i = 0; i < n; ++i) {
        b.add_copy(event_kind::user_annotation, i % 2 == 0 ? "even" : "odd", t, 10 * i, 10 * i + 5);
    }
    const stint::event_list list = std::move(b).build();
    REQUIRE(list.size() == n);
    // Rows of 48 B, no side records, two names.
    CHECK(list.event_bytes() <= n * 48 + 2 * sizeof(stint::detail::event_name) + 64);
    CHECK(list[0].name.data() == list[2].name.data());  // one copy of "even" for all of them
    CHECK(list[1].name == "odd");
    for (std::size_t i = 0; i < list.size(); ++i) {
        CHECK(list[i].index == i);
        CHECK(list.index_of(list[i]) == i);
    }
}

TEST_CASE("times beyond 32 bits (a scope of hours, a self time below its children's) are kept exactly") {
    event_list_builder b;
    const auto t = b.add_thread({.os_tid = 1, .name = "main"});
    constexpr std::int64_t hour = 3'600'000'000'000;
    const auto root = b.add(event_kind::user_annotation, "root", t, 0, 3 * hour);
    const auto child = b.add(event_kind::user_annotation, "child", t, 1, hour + 1);
    const auto small = b.add(event_kind::user_annotation, "small", t, hour + 10, hour + 20);
    (void)root;
    (void)child;
    (void)small;
    stint::event_list list = std::move(b).build();
    REQUIRE(list.size() == 3);
    CHECK(list[0].name == "root");
    CHECK(list[0].end_ns == 3 * hour);
    CHECK(list[0].duration_ns() == 3 * hour);
    CHECK(list[0].self_ns == 3 * hour - hour - 10);
    CHECK(list[1].name == "child");
    CHECK(list[1].duration_ns() == hour);
    CHECK(list[1].self_ns == hour);
    CHECK(list[1].parent == 0);
    CHECK(list[2].end_ns == hour + 20);
    CHECK(list[2].self_ns == 10);
    // Moving the list keeps the long times exact too.
    list.retime(7, 0.0, 0, 0);
    CHECK(list[0].start_ns == 7);
    CHECK(list[0].end_ns == 3 * hour + 7);
    CHECK(list[1].end_ns == hour + 8);
    CHECK(list[0].self_ns == 3 * hour - hour - 10);
}

TEST_CASE("ids stay each window's own after lists are appended") {
    const auto window = [](std::uint64_t first_id, std::int64_t at) {
        event_list_builder b;
        const auto t = b.add_thread({.os_tid = 1, .name = "main"});
        b.set_first_id(first_id);
        b.add(event_kind::user_annotation, "later", t, at + 10, at + 20);
        b.add(event_kind::user_annotation, "earlier", t, at, at + 5);
        return std::move(b).build();
    };
    stint::event_list all = window(100, 0);
    all.append(window(500, 1000));
    REQUIRE(all.size() == 4);
    CHECK(all[0].name == "earlier");
    CHECK(all[0].id == 101);  // the second added in its window
    CHECK(all[1].id == 100);
    CHECK(all[2].name == "earlier");
    CHECK(all[2].id == 501);
    CHECK(all[3].id == 500);
}

TEST_CASE("the list and its child ranges walk like containers: for (auto& e : list), references live with the iterator") {
    event_list_builder b;
    const auto t = b.add_thread({.os_tid = 1, .name = "main"});
    b.add(event_kind::cpu_op, "outer", t, 0, 100);
    b.add(event_kind::cpu_op, "first", t, 10, 20);
    b.add(event_kind::cpu_op, "second", t, 30, 40);
    const stint::event_list list = std::move(b).build();
    std::vector<std::string> names;
    for (auto& e : list) names.emplace_back(e.name);  // the loop: a non-const lvalue reference
    CHECK(names == std::vector<std::string>{"outer", "first", "second"});
    std::vector<std::string> children;
    for (auto& c : list.children(list[0])) children.emplace_back(c.name);
    CHECK(children == std::vector<std::string>{"first", "second"});
    // A reference from *it is the iterator's own event: right while it lives, whatever else was read.
    auto it = list.begin();
    ++it;
    const stint::event& held = *it;
    const stint::event other = list[2];
    CHECK(held.name == "first");
    CHECK(other.name == "second");
    CHECK(it->index == 1);
    // Algorithms that need a forward range work; each iterator they keep holds its own event.
    const auto longest = std::ranges::max_element(list, {}, [](const stint::event& e) { return e.end_ns - e.start_ns; });
    CHECK(longest->name == "outer");
    CHECK(std::ranges::count_if(list, [](const stint::event& e) { return e.depth == 1; }) == 2);
}

static_assert(std::forward_iterator<stint::event_list::iterator>);
static_assert(std::forward_iterator<stint::event_list::child_range::iterator>);
