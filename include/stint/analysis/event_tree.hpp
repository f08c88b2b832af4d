#pragma once
// Builds an event_list from unordered events: orders them by start, links parent/children per thread
// using the nesting RAII guarantees, and computes self time.

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "stint/analysis/detail/call_stacks.hpp"
#include "stint/analysis/detail/module_hierarchy.hpp"
#include "stint/analysis/event.hpp"
#include "stint/analysis/event_list.hpp"

namespace stint::detail {

/// Collects events (from a drain, or by hand in tests) and turns them into an event_list.
///
///     event_list_builder b;
///     auto t = b.add_thread({.os_tid = 7, .name = "main"});
///     b.add(event_kind::cpu_op, "aten::mm", t, 0, 1000);
///     event_list list = std::move(b).build();
class event_list_builder {
public:
    event_list_builder() : arena_(std::make_shared<string_arena>()) {}

    /// Adds a thread; events name it by the returned index.
    std::uint32_t add_thread(thread_info info) {
        list_.threads_.push_back(std::move(info));
        return static_cast<std::uint32_t>(list_.threads_.size() - 1);
    }
    thread_info& thread(std::uint32_t index) { return list_.threads_[index]; }
    [[nodiscard]] std::size_t thread_count() const { return list_.threads_.size(); }

    /// Adds an event whose name outlives the list (a site's static name).
    event_index add(event_kind kind, std::string_view static_name, std::uint32_t thread, std::int64_t start_ns,
                    std::int64_t end_ns) {
        event e;
        e.kind = kind;
        e.name = static_name;
        e.thread = thread;
        e.start_ns = start_ns;
        e.end_ns = std::max(end_ns, start_ns);
        list_.events_.push_back(e);
        return static_cast<event_index>(list_.events_.size() - 1);
    }
    /// Adds an event whose name is copied into the list.
    event_index add_copy(event_kind kind, std::string_view name, std::uint32_t thread, std::int64_t start_ns,
                         std::int64_t end_ns) {
        return add(kind, arena_->store(name), thread, start_ns, end_ns);
    }
    event& at(event_index i) { return list_.events_[i]; }
    std::string_view copy_string(std::string_view text) { return arena_->store(text); }

    void set_args(event_index i, event_args args) {
        list_.events_[i].args = static_cast<event_index>(list_.args_.size());
        list_.args_.push_back(std::move(args));
    }
    void set_stack(event_index i, std::vector<std::string> frames_innermost_first) {
        list_.events_[i].stack = static_cast<event_index>(list_.stacks_.size());
        list_.stacks_.push_back(std::move(frames_innermost_first));
    }
    /// Native return addresses an event recorded (with_stack<native>), innermost first; build() names
    /// them when stacks are built.
    void set_native_frames(event_index i, std::vector<std::uint64_t> frames) {
        list_.events_[i].stack = static_cast<event_index>(native_frames_.size());
        native_frames_.push_back(std::move(frames));
    }
    /// build() gives every event a stack (with_stack): its location and its ancestors', or its native
    /// frames.
    void build_call_stacks() { call_stacks_ = true; }
    /// build() gives every op inside module scopes its "Module Hierarchy" (with_modules).
    void build_module_hierarchy() { module_hierarchy_ = true; }
    void set_totals(std::uint64_t recorded, std::uint64_t dropped) {
        list_.recorded_ = recorded;
        list_.dropped_ = dropped;
    }
    void set_base_time_ns(std::int64_t ns) { list_.base_time_ns_ = ns; }
    /// First "Record function id" to hand out (so ids stay unique across windows).
    void set_first_id(std::uint64_t id) { first_id_ = id; }

    /// Room for `events` events, so that a drain never copies the list while it grows.
    void reserve(std::size_t events) { list_.events_.reserve(events); }

    /// Starts a run: the events added until the next run come from one thread buffer, which appends
    /// each scope when it ends. build() orders such a run in linear time instead of sorting it.
    void begin_run() { runs_.push_back(static_cast<event_index>(list_.events_.size())); }

    /// Orders events by (start, longer first, insertion), assigns ids in that order, links the tree.
    event_list build() && {
        std::vector<event_index> order = ordered_indices();
        apply_order(order);
        link_tree();
        if (call_stacks_) {
            assign_call_stacks(list_.events_, native_frames_, list_.stacks_);
        } else if (!native_frames_.empty()) {
            for (event& e : list_.events_) e.stack = no_index;  // frames recorded, stacks not asked for
        }
        if (module_hierarchy_) assign_module_hierarchy(list_.events_, list_.args_);
        list_.arenas_.push_back(std::move(arena_));
        return std::move(list_);
    }

private:
    // The order of the list: each run ordered on its own, then the runs merged.
    std::vector<event_index> ordered_indices() {
        const auto n = static_cast<event_index>(list_.events_.size());
        std::vector<event_index> bounds{0};
        for (event_index b : runs_) {
            if (b > bounds.back() && b < n) bounds.push_back(b);
        }
        bounds.push_back(n);
        std::vector<event_index> order(n);
        for (event_index i = 0; i < n; ++i) order[i] = i;
        std::vector<event_index> scratch;
        for (std::size_t r = 0; r + 1 < bounds.size(); ++r) order_run(order, bounds[r], bounds[r + 1], scratch);
        if (bounds.size() <= 2) return order;
        return merge_runs(order, bounds);
    }

    [[nodiscard]] bool before(event_index a, event_index b) const noexcept {
        const event& x = list_.events_[a];
        const event& y = list_.events_[b];
        if (x.start_ns != y.start_ns) return x.start_ns < y.start_ns;
        if (x.end_ns != y.end_ns) return x.end_ns > y.end_ns;  // the enclosing one first
        return a < b;  // insertion order: a scope recorded before its zero-length twin
    }

    // Orders order[lo, hi). A thread's records arrive in end order (post-order of its scope tree);
    // start order is the pre-order, and each event's place in it follows from its subtree size and
    // depth: pre = post - size + 1 + depth. Anything that is not a clean post-order (records added
    // by hand, scopes ended out of order, equal times) fails the check and is sorted instead.
    void order_run(std::vector<event_index>& order, event_index lo, event_index hi,
                   std::vector<event_index>& size) const {
        const auto& ev = list_.events_;
        const event_index m = hi - lo;
        size.assign(m, 1);
        std::vector<event_index> stack;
        for (event_index i = 0; i < m; ++i) {  // children are the finished subtrees starting within
            while (!stack.empty() && ev[lo + stack.back()].start_ns >= ev[lo + i].start_ns) {
                size[i] += size[stack.back()];
                stack.pop_back();
            }
            stack.push_back(i);
        }
        stack.clear();
        for (event_index i = m; i-- > 0;) {  // ancestors come later in post-order
            while (!stack.empty() && stack.back() + 1 - size[stack.back()] > i) stack.pop_back();
            const auto depth = static_cast<event_index>(stack.size());
            order[lo + i + 1 - size[i] + depth] = lo + i;
            stack.push_back(i);
        }
        for (event_index i = lo + 1; i < hi; ++i) {
            if (before(order[i], order[i - 1])) {
                std::sort(order.begin() + lo, order.begin() + hi,
                          [this](event_index a, event_index b) { return before(a, b); });
                return;
            }
        }
    }

    // Merges the ordered runs [bounds[r], bounds[r + 1]) with a heap of their heads.
    std::vector<event_index> merge_runs(const std::vector<event_index>& order,
                                        const std::vector<event_index>& bounds) const {
        struct head {
            event_index at;
            event_index end;
        };
        std::vector<head> heads;
        for (std::size_t r = 0; r + 1 < bounds.size(); ++r) heads.push_back({bounds[r], bounds[r + 1]});
        const auto later = [&](const head& a, const head& b) { return before(order[b.at], order[a.at]); };
        std::make_heap(heads.begin(), heads.end(), later);
        std::vector<event_index> merged;
        merged.reserve(order.size());
        while (!heads.empty()) {
            std::pop_heap(heads.begin(), heads.end(), later);
            head& h = heads.back();
            merged.push_back(order[h.at]);
            if (++h.at == h.end) {
                heads.pop_back();
            } else {
                std::push_heap(heads.begin(), heads.end(), later);
            }
        }
        return merged;
    }

    // Moves event order[i] to position i, in place (following the permutation's cycles).
    void apply_order(std::vector<event_index>& order) {
        auto& ev = list_.events_;
        for (event_index i = 0; i < order.size(); ++i) {
            if (order[i] == i) continue;
            const event first = ev[i];
            event_index j = i;
            for (;;) {
                const event_index k = order[j];
                order[j] = j;
                if (k == i) {
                    ev[j] = first;
                    break;
                }
                ev[j] = ev[k];
                j = k;
            }
        }
    }

    void link_tree() {
        auto& ev = list_.events_;
        // One open-scope stack and one "last child" slot per thread; events arrive parents first.
        std::vector<std::vector<event_index>> open(list_.threads_.size());
        std::vector<event_index> last_child(ev.size(), no_index);
        for (event_index i = 0; i < ev.size(); ++i) {
            event& e = ev[i];
            e.id = first_id_ + i;
            e.self_ns = e.duration_ns();
            auto& stack = open[e.thread];
            // Pop what cannot contain this event: what ended when or before it starts (torch's rule,
            // which also keeps zero-length events leaves) and what ends before it does.
            while (!stack.empty() && (ev[stack.back()].end_ns <= e.start_ns || ev[stack.back()].end_ns < e.end_ns)) {
                stack.pop_back();
            }
            if (!stack.empty()) {
                event_index p = stack.back();
                e.parent = p;
                e.depth = static_cast<std::uint16_t>(std::min<int>(ev[p].depth + 1, 0xffff));
                ev[p].self_ns -= e.duration_ns();
                if (last_child[p] == no_index) {
                    ev[p].first_child = i;
                } else {
                    ev[last_child[p]].next_sibling = i;
                }
                last_child[p] = i;
            }
            stack.push_back(i);
        }
    }

    event_list list_;
    std::shared_ptr<string_arena> arena_;
    std::uint64_t first_id_ = 0;
    std::vector<event_index> runs_;  // first event of each run
    std::vector<std::vector<std::uint64_t>> native_frames_;
    bool call_stacks_ = false;
    bool module_hierarchy_ = false;
};

}  // namespace stint::detail

namespace stint {

inline void event_list::append(const event_list& later) {
    if (later.empty() && later.recorded_ == 0 && later.dropped_ == 0) return;
    if (events_.empty() && threads_.empty()) {
        *this = later;
        return;
    }
    const std::int64_t shift = later.base_time_ns_ - base_time_ns_;
    std::vector<std::uint32_t> thread_map(later.threads_.size());
    for (std::size_t t = 0; t < later.threads_.size(); ++t) {
        const thread_info& info = later.threads_[t];
        auto found = std::find_if(threads_.begin(), threads_.end(),
                                  [&](const thread_info& mine) { return mine.os_tid == info.os_tid; });
        if (found == threads_.end()) {
            threads_.push_back(info);
            thread_map[t] = static_cast<std::uint32_t>(threads_.size() - 1);
        } else {
            found->recorded += info.recorded;
            found->dropped += info.dropped;
            thread_map[t] = static_cast<std::uint32_t>(found - threads_.begin());
        }
    }
    const auto offset = static_cast<event_index>(events_.size());
    const auto relink = [offset](event_index i) { return i == no_index ? no_index : i + offset; };
    const auto args_offset = static_cast<event_index>(args_.size());
    const auto stacks_offset = static_cast<event_index>(stacks_.size());
    for (event e : later.events_) {
        e.start_ns += shift;
        e.end_ns += shift;
        e.thread = thread_map[e.thread];
        e.parent = relink(e.parent);
        e.first_child = relink(e.first_child);
        e.next_sibling = relink(e.next_sibling);
        if (e.args != no_index) e.args += args_offset;
        if (e.stack != no_index) e.stack += stacks_offset;
        events_.push_back(e);
    }
    args_.insert(args_.end(), later.args_.begin(), later.args_.end());
    stacks_.insert(stacks_.end(), later.stacks_.begin(), later.stacks_.end());
    arenas_.insert(arenas_.end(), later.arenas_.begin(), later.arenas_.end());
    recorded_ += later.recorded_;
    dropped_ += later.dropped_;
}

}  // namespace stint
