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
    void set_totals(std::uint64_t recorded, std::uint64_t dropped) {
        list_.recorded_ = recorded;
        list_.dropped_ = dropped;
    }
    void set_base_time_ns(std::int64_t ns) { list_.base_time_ns_ = ns; }
    /// First "Record function id" to hand out (so ids stay unique across windows).
    void set_first_id(std::uint64_t id) { first_id_ = id; }

    /// Orders events by (start, longer first), assigns ids in that order, links the tree.
    event_list build() && {
        auto& ev = list_.events_;
        std::vector<event_index> order(ev.size());
        for (event_index i = 0; i < order.size(); ++i) order[i] = i;
        std::sort(order.begin(), order.end(), [&](event_index a, event_index b) {
            const event& x = ev[a];
            const event& y = ev[b];
            if (x.start_ns != y.start_ns) return x.start_ns < y.start_ns;
            if (x.end_ns != y.end_ns) return x.end_ns > y.end_ns;  // the enclosing one first
            return a < b;  // insertion order: a scope recorded before its zero-length twin
        });
        std::vector<event> sorted;
        sorted.reserve(ev.size());
        for (event_index i : order) sorted.push_back(ev[i]);
        ev = std::move(sorted);
        link_tree();
        list_.arenas_.push_back(std::move(arena_));
        return std::move(list_);
    }

private:
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
