#pragma once
// A workload whose nesting is known: nested scopes, ops, instants at a scope's first and last
// instant, zero-length siblings, runtime-named scopes and record_function, on several threads. Each
// event's path (its ancestors' names, root first) is noted as the program runs, and the drained tree
// is checked against it: parent, depth, self time and call stack.

#include <doctest/doctest.h>

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "stint/stint.hpp"

namespace nesting {

using stacks = stint::config<stint::with_stack<>>;

/// The paths of the events one thread executed ("L0/L1/ns::op"), as a multiset.
using paths = std::multiset<std::string>;

class recorder {
public:
    /// Notes an event about to be recorded under the scopes entered so far.
    void note(const std::string& name) { done_.insert(path_.empty() ? name : path_ + "/" + name); }
    void enter(const std::string& name) {
        note(name);
        sizes_.push_back(path_.size());
        path_ = path_.empty() ? name : path_ + "/" + name;
    }
    void leave() {
        path_.resize(sizes_.back());
        sizes_.pop_back();
    }
    [[nodiscard]] const paths& done() const { return done_; }

private:
    std::string path_;
    std::vector<std::size_t> sizes_;
    paths done_;
};

/// One iteration of the workload; `i` varies the runtime names.
inline void iteration(recorder& r, int i) {
    {
        r.enter("L0");
        STINT_SCOPE("L0");
        r.note("first");
        STINT_INSTANT("first");  // at L0's beginning
        {
            r.enter("L1");
            STINT_SCOPE("L1");
            {
                r.note("L2");
                STINT_SCOPE("L2");  // an empty leaf
            }
            {
                r.note("ns::op");
                STINT_OP(stacks, "ns::op");
            }
            {
                const std::string name = "named#" + std::to_string(i % 7);
                r.enter(name);
                STINT_SCOPE_NAMED(name);
                r.note("inside");
                STINT_INSTANT("inside");
                r.leave();
            }
            for (int k = 0; k < 2; ++k) {  // zero-length siblings
                r.note("empty");
                STINT_SCOPE("empty");
            }
            r.leave();
        }
        {
            r.enter("rf");
            stint::record_function rf("rf");
            {
                r.note("L2");
                STINT_SCOPE("L2");
            }
            r.leave();
        }
        r.note("last");
        STINT_INSTANT("last");  // at L0's end
        r.leave();
    }
    r.note("between");
    STINT_INSTANT("between");  // top level, between iterations
}

/// The path of `e` from its parent links, root first.
inline std::string path_of(const stint::event_list& list, const stint::event& e) {
    std::string path(e.name);
    for (stint::event_index p = e.parent; p != stint::no_index; p = list[p].parent) {
        path = std::string(list[p].name) + "/" + path;
    }
    return path;
}

/// Checks `list` against what each thread noted (keyed by OS thread id): every event's path, depth,
/// self time and call stack.
inline void check_tree(const stint::event_list& list, const std::map<std::uint64_t, paths>& expected) {
    std::map<std::uint64_t, paths> got;
    for (const stint::event& e : list) {
        if (e.kind == stint::event_kind::overhead) {
            CHECK(e.first_child == stint::no_index);  // stint's own work contains nothing
            continue;
        }
        got[list.threads()[e.thread].os_tid].insert(path_of(list, e));
        const std::string path = path_of(list, e);
        INFO("event " << path);
        // depth: one per ancestor
        std::size_t ancestors = 0;
        for (stint::event_index p = e.parent; p != stint::no_index; p = list[p].parent) ++ancestors;
        CHECK(e.depth == ancestors);
        // self time: the duration less the children's
        std::int64_t children = 0;
        for (stint::event_index c = e.first_child; c != stint::no_index; c = list[c].next_sibling) {
            CHECK(list[c].parent == e.index);
            children += list[c].duration_ns();
        }
        CHECK(e.self_ns == e.duration_ns() - children);
        // call stack: this event's frame, then its ancestors' own frames
        const auto stack = list.stack(e);
        REQUIRE(stack.size() == ancestors + 1);
        auto frame = std::next(stack.begin());
        for (stint::event_index p = e.parent; p != stint::no_index; p = list[p].parent, ++frame) {
            CHECK(*frame == list.stack(list[p]).front());
        }
    }
    CHECK(got.size() == expected.size());
    for (const auto& entry : expected) {  // no structured binding: clang 14 cannot capture one in INFO
        const std::uint64_t tid = entry.first;
        const paths& want = entry.second;
        INFO("thread " << tid);
        const auto found = got.find(tid);
        REQUIRE(found != got.end());
        if (found->second != want) {
            for (const std::string& p : want) {
                if (want.count(p) != found->second.count(p)) {
                    FAIL_CHECK(p << ": executed " << want.count(p) << " times, in the tree " << found->second.count(p));
                }
            }
            for (const std::string& p : found->second) {
                if (want.count(p) == 0) FAIL_CHECK(p << ": in the tree, never executed");
            }
        }
        CHECK(found->second == want);
    }
}

/// Runs `iterations` of the workload on `threads` threads (the calling thread among them) in one
/// session and checks the tree.
inline void run_and_check(int threads, int iterations) {
    std::map<std::uint64_t, paths> expected;
    std::vector<recorder> recorders(static_cast<std::size_t>(threads));
    std::vector<std::uint64_t> tids(static_cast<std::size_t>(threads));
    stint::profiler<stacks> prof;
    prof.start();
    const auto work = [&](int t) {
        tids[static_cast<std::size_t>(t)] = stint::detail::current_os_tid();
        for (int i = 0; i < iterations; ++i) iteration(recorders[static_cast<std::size_t>(t)], i);
    };
    std::vector<std::thread> others;
    for (int t = 1; t < threads; ++t) others.emplace_back(work, t);
    work(0);
    for (auto& t : others) t.join();
    prof.stop();
    for (int t = 0; t < threads; ++t) {
        expected[tids[static_cast<std::size_t>(t)]] = recorders[static_cast<std::size_t>(t)].done();
    }
    REQUIRE(prof.stats().dropped == 0);
    check_tree(prof.events(), expected);
}

/// `for (n) { L0 { L1 { L2 } } }`: every L0 at the top, every L1 in an L0, every L2 in an L1.
inline void check_three_level_loop(int n) {
    stint::profiler<> prof;
    prof.start();
    for (int i = 0; i < n; ++i) {
        STINT_SCOPE("L0");
        {
            STINT_SCOPE("L1");
            {
                STINT_SCOPE("L2");
            }
        }
    }
    prof.stop();
    const stint::event_list& list = prof.events();
    std::size_t l0 = 0;
    std::size_t wrong = 0;
    for (const stint::event& e : list) {
        if (e.name == "L0") {
            ++l0;
            wrong += e.depth != 0 ? 1 : 0;
        } else if (e.name == "L1") {
            wrong += e.parent == stint::no_index || list[e.parent].name != "L0" ? 1 : 0;
        } else if (e.name == "L2") {
            wrong += e.parent == stint::no_index || list[e.parent].name != "L1" ? 1 : 0;
        }
    }
    CHECK(l0 == static_cast<std::size_t>(n));
    CHECK(wrong == 0);
}

}  // namespace nesting
