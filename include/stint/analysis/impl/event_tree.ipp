#pragma once
// The bodies of event_list_builder (analysis/event_tree.hpp): ordering events, linking the tree,
// pairing points, joining device events and replaying memory events.

#include "stint/analysis/event_tree.hpp"

#include <algorithm>   // std::sort, std::clamp, std::find_if, std::all_of, std::make_heap, std::min, std::max
#include <cstdlib>     // std::abs
#include <functional>  // std::hash

namespace stint::detail {

event_list_builder::event_list_builder() : arena_(std::make_shared<string_arena>()) {}

event_index event_list_builder::add(event_kind kind, std::string_view static_name, std::uint32_t thread,
                                    std::int64_t start_ns, std::int64_t end_ns, const source_location* where) {
    return ev().push(kind, name_index(static_name, where), thread, start_ns, end_ns);
}

event_index event_list_builder::add_copy(event_kind kind, std::string_view name, std::uint32_t thread,
                                         std::int64_t start_ns, std::int64_t end_ns, const source_location* where) {
    const auto found = copies_.find(name);
    const std::string_view kept = found != copies_.end() ? *found : *copies_.insert(arena_->store(name)).first;
    return add(kind, kept, thread, start_ns, end_ns, where);
}

std::uint32_t event_list_builder::device_track(stint::device where, std::uint32_t stream) {
    for (std::uint32_t t = 0; t < list_.threads_.size(); ++t) {
        const thread_info& info = list_.threads_[t];
        if (info.device == where && info.os_tid == stream) return t;
    }
    thread_info info;
    info.os_tid = stream;
    info.device = where;
    return add_thread(std::move(info));
}

event_index event_list_builder::add_device_event(event_kind kind, std::string_view name, std::uint32_t track,
                                                 std::int64_t start_ns, std::int64_t end_ns, const device_args& args) {
    const event_index i = add_copy(kind, name, track, start_ns, end_ns);
    event_extra& e = ev().extra_to_write(i);
    e.device = list_.threads_[track].device;
    e.stream = static_cast<std::uint32_t>(list_.threads_[track].os_tid);
    e.device_info = static_cast<event_index>(list_.device_args_.size());
    list_.device_args_.push_back(args);
    return i;
}

event_index event_list_builder::add_api_call(event_kind kind, std::string_view name, std::uint32_t thread,
                                             std::int64_t start_ns, std::int64_t end_ns, const device_args& args) {
    const event_index i = add_copy(kind, name, thread, start_ns, end_ns);
    ev().extra_to_write(i).device_info = static_cast<event_index>(list_.device_args_.size());
    list_.device_args_.push_back(args);
    set_launcher(i, no_index);
    return i;
}

void event_list_builder::set_launcher(event_index launched, event_index launcher) {
    if (launcher_.size() <= launched) launcher_.resize(std::size_t{launched} + 1, not_linked);
    launcher_[launched] = launcher;
}

event_index event_list_builder::add_memory_event(event_kind kind, std::uint32_t thread, std::int64_t at_ns,
                                                 const memory_record& record, std::uint64_t sequence,
                                                 memory_event_flags flags, const source_location* where) {
    const std::string_view name = kind == event_kind::memory ? "[memory]" : "[OutOfMemory]";
    const event_index i = add(kind, name, thread, at_ns, at_ns, where);
    const auto record_index = static_cast<event_index>(list_.memory_records_.size());
    ev().extra_to_write(i).memory_info = record_index;
    list_.memory_records_.push_back(record);
    memory_order_.push_back({sequence, record_index, flags});
    return i;
}

void event_list_builder::set_args(event_index i, event_args args) {
    ev().extra_to_write(i).args = static_cast<event_index>(list_.args_.size());
    list_.args_.push_back(std::move(args));
}

event_args& event_list_builder::args_of(event_index i) {
    if (ev().extra(i).args == no_index) set_args(i, {});
    return list_.args_[ev().extra(i).args];
}

void event_list_builder::set_stack(event_index i, const std::vector<std::string>& frames_innermost_first) {
    event_index at = no_index;
    for (auto frame = frames_innermost_first.rbegin(); frame != frames_innermost_first.rend(); ++frame) {
        list_.stacks_.frames.push_back(*frame);
        at = list_.stacks_.push(static_cast<std::uint32_t>(list_.stacks_.frames.size() - 1), at);
    }
    ev().extra_to_write(i).stack = at;
}

void event_list_builder::set_native_frames(event_index i, std::vector<std::uint64_t> frames) {
    ev().extra_to_write(i).stack = static_cast<event_index>(native_frames_.size());
    native_frames_.push_back(std::move(frames));
}

void event_list_builder::set_record_depth(event_index i, std::uint16_t depth) {
    if (depth_.size() <= i) depth_.resize(std::size_t{i} + 1, no_depth);
    depth_[i] = depth;
}

event_list event_list_builder::build() && {
    depth_.resize(ev().size(), no_depth);
    exact_.assign(ev().size(), exact_place{});
    clamp_api_calls();
    std::vector<event_index> order = ordered_indices();
    const std::vector<event_index> original = order;  // permute consumes `order`
    ev().permute(order);
    link_tree(original);
    if (!point_ids_.empty()) link_points(original);
    if (!counter_values_.empty()) place_counter_values(original);
    if (!list_.device_args_.empty()) link_device_events();
    if (!list_.memory_records_.empty()) resolve_memory();
    if (call_stacks_ != nullptr) {
        call_stacks_(ev(), native_frames_, list_.stacks_);
    } else if (!native_frames_.empty()) {
        for (event_index i = 0; i < ev().size(); ++i) {  // frames recorded, stacks not asked for
            if (ev().row(i).extra != no_index) ev().extra_to_write(i).stack = no_index;
        }
    }
    if (module_hierarchy_ != nullptr) module_hierarchy_(ev(), list_.args_);
    list_.arenas_.push_back(std::move(arena_));
    return std::move(list_);
}

std::uint32_t event_list_builder::name_index(std::string_view text, const source_location* where) {
    const name_key key{text.data(), text.size(), where};
    recent_name& slot = recent_names_[name_key_hash{}(key) >> (sizeof(std::size_t) * 8 - 4)];  // the top 4 bits
    if (slot.index != no_index && slot.key == key) return slot.index;
    auto [at, added] = name_indices_.try_emplace(key, 0);
    if (added) at->second = ev().add_name({text, where});
    slot = {key, at->second};
    return at->second;
}

void event_list_builder::resolve_memory() {
    std::sort(memory_order_.begin(), memory_order_.end(),
              [](const memory_order_entry& a, const memory_order_entry& b) { return a.sequence < b.sequence; });
    std::vector<event_index> event_of(list_.memory_records_.size(), no_index);
    for (event_index i = 0; i < ev().size(); ++i) {
        if (ev().extra(i).memory_info != no_index) event_of[ev().extra(i).memory_info] = i;
    }
    const auto key = [](const memory_record& r) {
        return std::pair<std::uint64_t, std::uint64_t>{
            r.addr, (std::uint64_t{static_cast<std::uint8_t>(r.device.type)} << 32) |
                        static_cast<std::uint32_t>(r.device.index)};
    };
    struct pair_hash {
        std::size_t operator()(const std::pair<std::uint64_t, std::uint64_t>& k) const noexcept {
            return std::hash<std::uint64_t>{}(k.first * 0x9e3779b97f4a7c15ULL ^ k.second);
        }
    };
    std::unordered_map<std::pair<std::uint64_t, std::uint64_t>, std::int64_t, pair_hash> live;
    std::vector<std::pair<stint::device, std::int64_t>> totals;
    const auto total_of = [&](stint::device d) -> std::int64_t& {
        for (auto& [where, bytes] : totals) {
            if (where == d) return bytes;
        }
        return totals.emplace_back(d, 0).second;
    };
    for (const memory_order_entry& entry : memory_order_) {
        memory_record& r = list_.memory_records_[entry.record];
        const event_index at_event = event_of[entry.record];
        const event_row& e = ev().row(at_event);
        std::int64_t& total = total_of(r.device);
        if (e.kind == event_kind::memory && !entry.flags.free) {
            // An allocation. One at an address still live means its free was not seen (dropped, or
            // made by a path that does not report): the old block's bytes leave the total.
            auto [at, fresh] = live.try_emplace(key(r), r.bytes);
            if (!fresh) {
                total -= at->second;
                at->second = r.bytes;
            }
            total += r.bytes;
        } else if (e.kind == event_kind::memory) {  // a free
            if (auto found = live.find(key(r)); found != live.end()) {
                r.bytes = -found->second;
                total -= found->second;
                live.erase(found);
            } else {
                r.matched = false;
                r.bytes = entry.flags.size_known ? -std::abs(r.bytes) : 0;
            }
        }
        if (!entry.flags.totals_given) {
            r.total_allocated = total;
            r.total_reserved = total;
        }
        if (e.kind != event_kind::memory) continue;
        auto peak = std::find_if(list_.memory_peaks_.begin(), list_.memory_peaks_.end(),
                                 [&](const memory_peak& p) { return p.device == r.device; });
        if (peak == list_.memory_peaks_.end()) {
            list_.memory_peaks_.push_back({r.device, -1, 0, {}});
            peak = list_.memory_peaks_.end() - 1;
        }
        if (r.total_allocated > peak->bytes) {
            peak->bytes = r.total_allocated;
            peak->at_ns = e.start_ns;
            peak->op = e.parent == no_index ? std::string{} : std::string(ev().name(e.parent).text);
        }
    }
    for (memory_peak& peak : list_.memory_peaks_) peak.bytes = std::max<std::int64_t>(peak.bytes, 0);
    // Attribution: on the allocating thread, to every op or scope open around the event.
    list_.memory_usage_.assign(ev().size(), memory_usage{});
    for (event_index i = 0; i < ev().size(); ++i) {
        const event_row& e = ev().row(i);
        if (e.kind != event_kind::memory) continue;
        const memory_record& r = list_.memory_records_[ev().extra(i).memory_info];
        const bool on_cpu = r.device.type == device_type::cpu;
        const auto charge = [&](memory_usage& u, bool self) {
            (on_cpu ? u.cpu : u.device) += r.bytes;
            if (self) (on_cpu ? u.self_cpu : u.self_device) += r.bytes;
        };
        charge(list_.memory_usage_[i], true);
        bool direct = true;
        for (event_index p = e.parent; p != no_index; p = ev().row(p).parent) {
            charge(list_.memory_usage_[p], direct);
            direct = false;
        }
    }
}

std::vector<event_index> event_list_builder::ordered_indices() {
    const auto n = static_cast<event_index>(ev().size());
    std::vector<event_index> bounds{0};
    for (event_index b : runs_) {
        if (b > bounds.back() && b < n) bounds.push_back(b);
    }
    bounds.push_back(n);
    std::vector<event_index> order(n);
    for (event_index i = 0; i < n; ++i) order[i] = i;
    for (std::size_t r = 0; r + 1 < bounds.size(); ++r) {
        const event_index lo = bounds[r];
        const event_index hi = bounds[r + 1];
        const bool exact = !runs_.empty() && std::all_of(depth_.begin() + lo, depth_.begin() + hi,
                                                         [](std::uint32_t d) { return d != no_depth; });
        if (exact) {
            order_exact_run(order, static_cast<event_index>(r), lo, hi);
        } else {
            std::sort(order.begin() + lo, order.begin() + hi,
                      [this](event_index a, event_index b) { return before(a, b); });
        }
    }
    if (bounds.size() <= 2) return order;
    return merge_runs(order, bounds);
}

bool event_list_builder::before(event_index a, event_index b) const noexcept {
    const event_store& store = list_.store_;
    if (store.start(a) != store.start(b)) return store.start(a) < store.start(b);
    if (store.end(a) != store.end(b)) return store.end(a) > store.end(b);  // the enclosing one first
    if (exact_[a].run != no_index && exact_[a].run == exact_[b].run) return exact_[a].pre < exact_[b].pre;
    return a < b;  // insertion order: a scope recorded before its zero-length twin
}

void event_list_builder::link_exact_run(event_index lo, event_index hi, event_index run) {
    const event_store& ev = list_.store_;
    const event_index m = hi - lo;
    std::vector<std::int64_t> depth(m);
    std::int64_t level = 0;
    for (event_index i = 0; i < m; ++i) {
        if (i > 0) {
            const auto step = static_cast<std::uint16_t>(depth_[lo + i] - depth_[lo + i - 1]);
            level += step == 0xffff ? -1 : step;
        }
        depth[i] = level;
    }
    std::vector<event_index> pending;  // finished subtrees not yet given a parent, in arrival order
    for (event_index i = 0; i < m; ++i) {
        exact_place& place = exact_[lo + i];
        place.run = run;
        while (!pending.empty() && depth[pending.back()] > depth[i]) {
            const event_index child = pending.back();
            pending.pop_back();
            if (ev.end(lo + child) < ev.start(lo + i)) {
                // Ended before this record began: an orphan, and so is everything deeper below it.
                while (!pending.empty() && depth[pending.back()] > depth[i]) pending.pop_back();
                break;
            }
            exact_[lo + child].parent = lo + i;
            place.size += exact_[lo + child].size;
        }
        pending.push_back(i);
    }
    // Pre-order position = post-order position - subtree size + 1 + number of ancestors.
    pending.clear();  // now: the subtrees enclosing i
    for (event_index i = m; i-- > 0;) {
        while (!pending.empty() && pending.back() + 1 - exact_[lo + pending.back()].size > i) pending.pop_back();
        exact_[lo + i].pre = i + 1 - exact_[lo + i].size + static_cast<event_index>(pending.size());
        pending.push_back(i);
    }
}

void event_list_builder::order_exact_run(std::vector<event_index>& order, event_index run, event_index lo,
                                         event_index hi) {
    link_exact_run(lo, hi, run);
    for (event_index i = lo; i < hi; ++i) order[lo + exact_[i].pre] = i;
    const event_store& ev = list_.store_;
    const auto less = [this](event_index a, event_index b) { return before(a, b); };
    for (event_index i = lo; i < hi;) {
        event_index j = i + 1;
        while (j < hi && ev.start(order[j]) == ev.start(order[i])) ++j;
        if (j < hi && ev.start(order[j]) < ev.start(order[i])) {  // a clock that stepped back
            std::sort(order.begin() + lo, order.begin() + hi, less);
            return;
        }
        if (j - i > 1) std::sort(order.begin() + i, order.begin() + j, less);
        i = j;
    }
}

std::vector<event_index> event_list_builder::merge_runs(const std::vector<event_index>& order,
                                                        const std::vector<event_index>& bounds) const {
    struct head {
        event_index at;
        event_index end;
    };
    std::vector<head> heads;
    for (std::size_t r = 0; r + 1 < bounds.size(); ++r) heads.push_back({bounds[r], bounds[r + 1]});
    const auto comes_later = [&](const head& a, const head& b) { return before(order[b.at], order[a.at]); };
    std::make_heap(heads.begin(), heads.end(), comes_later);
    std::vector<event_index> merged;
    merged.reserve(order.size());
    while (!heads.empty()) {
        std::pop_heap(heads.begin(), heads.end(), comes_later);
        head& h = heads.back();
        merged.push_back(order[h.at]);
        if (++h.at == h.end) {
            heads.pop_back();
        } else {
            std::push_heap(heads.begin(), heads.end(), comes_later);
        }
    }
    return merged;
}

void event_list_builder::link_tree(const std::vector<event_index>& original) {
    event_store& ev = list_.store_;
    const auto n = static_cast<event_index>(ev.size());
    std::vector<event_index> position(n);
    for (event_index i = 0; i < n; ++i) position[original[i]] = i;
    constexpr event_index mixed = no_index - 1;
    std::vector<event_index> thread_run(list_.threads_.size(), no_index);
    // Device events and API calls whose launcher is known sit outside the runs: they take no part
    // in deciding how a thread is linked.
    const auto placed = [&](event_index i) { return ev.on_device(i) || launcher_of(original[i]) != not_linked; };
    for (event_index i = 0; i < n; ++i) {
        if (placed(i)) continue;
        event_index& run = thread_run[ev.row(i).thread];
        const event_index mine = exact_[original[i]].run == no_index ? mixed : exact_[original[i]].run;
        run = (run == no_index || run == mine) ? mine : mixed;
    }
    const auto contains = [&](event_index outer, event_index inner) {
        const exact_place& o = exact_[original[outer]];
        const exact_place& e = exact_[original[inner]];
        if (o.run != no_index && o.run == e.run) return o.pre < e.pre && e.pre < o.pre + o.size;
        return !(ev.end(outer) <= ev.start(inner) || ev.end(outer) < ev.end(inner));
    };
    std::vector<std::vector<event_index>> open(list_.threads_.size());
    std::vector<event_index> last_child(n, no_index);
    for (event_index i = 0; i < n; ++i) {
        // The row's `added` is its place as added: with the first id, the id an exporter that
        // reads the records gives it.
        ev.set_self(i, ev.duration(i));
        event_index p = no_index;
        const exact_place& place = exact_[original[i]];
        const event_index launcher = launcher_of(original[i]);
        event_index linked = no_index;
        if (launcher != not_linked) {
            linked = launcher == no_index ? no_index : position[launcher];
            ev.extra_to_write(i).linked = linked;
        }
        if (ev.on_device(i)) {
            ev.set_self(i, 0);  // device time is not CPU time; the track has no nesting
            continue;
        }
        const std::uint32_t thread = ev.row(i).thread;
        if (launcher != not_linked) {
            // An API call: inside the op that made it (which clamp_api_calls ordered first), or top-level.
            p = linked != no_index && linked < i ? linked : no_index;
        } else if (thread_run[thread] != mixed) {
            if (place.parent != no_index) p = position[place.parent];
        } else {
            auto& stack = open[thread];
            while (!stack.empty() && !contains(stack.back(), i)) stack.pop_back();
            if (!stack.empty()) p = stack.back();
            // The run's own parent wins over the stack, unless the stack found a scope of another
            // buffer nested inside that parent; a run's root has no parent in its own run.
            if (place.parent != no_index) {
                const event_index known = position[place.parent];
                if (p == no_index || exact_[original[p]].run == place.run || p < known) p = known;
            } else if (p != no_index && place.run != no_index && exact_[original[p]].run == place.run) {
                p = no_index;
            }
            stack.push_back(i);
        }
        if (p != no_index) {
            event_row& e = ev.row(i);
            e.parent = p;
            e.depth = static_cast<std::uint16_t>(std::min<int>(ev.row(p).depth + 1, 0xffff));
            ev.set_self(p, ev.self(p) - ev.duration(i));
            if (last_child[p] == no_index) {
                ev.row(p).first_child = i;
            } else {
                ev.row(last_child[p]).next_sibling = i;
            }
            last_child[p] = i;
        }
    }
}

void event_list_builder::place_counter_values(const std::vector<event_index>& original) {
    std::vector<event_index> position(ev().size());
    for (event_index i = 0; i < ev().size(); ++i) position[original[i]] = i;
    auto& counters = list_.counters_;
    counters.reserve(counter_values_.size());
    for (const auto& [added, value] : counter_values_) counters.push_back({position[added], value});
    std::sort(counters.begin(), counters.end(), [](const auto& a, const auto& b) { return a.event < b.event; });
}

void event_list_builder::link_points(const std::vector<event_index>& original) {
    const event_store& ev = list_.store_;
    std::vector<event_index> position(ev.size());
    for (event_index i = 0; i < ev.size(); ++i) position[original[i]] = i;
    auto& points = list_.points_;
    points.reserve(point_ids_.size());
    for (const auto& [added, id] : point_ids_) points.push_back({position[added], id});
    std::sort(points.begin(), points.end(), [](const auto& a, const auto& b) { return a.event < b.event; });

    std::vector<event_list::point_entry> flows;
    std::unordered_map<std::uint64_t, event_index> async_end;
    for (const auto& p : points) {
        const event_kind kind = ev.row(p.event).kind;
        if (kind == event_kind::flow_begin || kind == event_kind::flow_end) flows.push_back(p);
        if (kind == event_kind::async_end && !async_end.try_emplace(p.id, p.event).second) {
            ++list_.unmatched_.async_ends;  // a second end of one span id
        }
    }
    std::sort(flows.begin(), flows.end(), [&](const auto& a, const auto& b) {
        if (a.id != b.id) return a.id < b.id;
        if (ev.start(a.event) != ev.start(b.event)) return ev.start(a.event) < ev.start(b.event);
        return a.event < b.event;
    });
    event_index open = no_index;
    std::vector<event_index> early_ends;  // ends of the current tick that found no begin yet
    for (std::size_t f = 0; f < flows.size(); ++f) {
        const bool new_id = f > 0 && flows[f].id != flows[f - 1].id;
        if (f > 0 && (new_id || ev.start(flows[f].event) != ev.start(flows[f - 1].event))) {
            list_.unmatched_.flow_ends += early_ends.size();
            early_ends.clear();
        }
        if (new_id && open != no_index) {
            ++list_.unmatched_.flow_begins;
            open = no_index;
        }
        const event_index at = flows[f].event;
        if (ev.row(at).kind == event_kind::flow_begin) {
            const auto other_thread = std::find_if(early_ends.begin(), early_ends.end(), [&](event_index end) {
                return ev.row(end).thread != ev.row(at).thread;
            });
            if (other_thread != early_ends.end()) {
                list_.flows_.push_back({flows[f].id, at, *other_thread});
                early_ends.erase(other_thread);
                continue;
            }
            if (open != no_index) ++list_.unmatched_.flow_begins;
            open = at;
        } else if (open != no_index) {
            list_.flows_.push_back({flows[f].id, open, at});
            open = no_index;
        } else {
            early_ends.push_back(at);
        }
    }
    list_.unmatched_.flow_ends += early_ends.size();
    if (open != no_index) ++list_.unmatched_.flow_begins;
    std::sort(list_.flows_.begin(), list_.flows_.end(),
              [](const flow_link& a, const flow_link& b) { return a.end < b.end; });

    for (const auto& p : points) {
        if (ev.row(p.event).kind != event_kind::async_begin) continue;
        event_index end = no_index;
        if (auto found = async_end.find(p.id); found != async_end.end()) {
            end = found->second;
            async_end.erase(found);
        } else {
            ++list_.unmatched_.async_open;
        }
        list_.async_spans_.push_back({p.id, p.event, end});
    }
    list_.unmatched_.async_ends += async_end.size();
}

void event_list_builder::clamp_api_calls() {
    event_store& ev = list_.store_;
    for (event_index i = 0; i < launcher_.size() && i < ev.size(); ++i) {
        const event_index op = launcher_[i];
        if (op == not_linked || op == no_index || ev.on_device(i)) continue;
        const std::int64_t start = std::clamp(ev.start(i), ev.start(op), ev.end(op));
        ev.set_times(i, start, std::clamp(ev.end(i), start, ev.end(op)));
    }
}

void event_list_builder::link_device_events() {
    event_store& ev = list_.store_;
    const auto n = static_cast<event_index>(ev.size());
    std::vector<event_index> last(n, no_index);
    std::vector<std::int64_t> self_device(n, 0);  // CPU events': their launches' durations
    for (event_index i = 0; i < n; ++i) {
        if (!ev.on_device(i)) continue;
        ++list_.device_events_;
        event_extra& e = ev.extra_to_write(i);
        e.device_ns = e.self_device_ns = ev.duration(i);
        const event_index op = e.linked;
        if (op == no_index) continue;
        self_device[op] += ev.duration(i);
        if (last[op] == no_index) {
            ev.extra_to_write(op).first_linked = i;
        } else {
            ev.extra_to_write(last[op]).next_linked = i;
        }
        last[op] = i;
    }
    // Totals: children come after their parents, so a backward pass sums each subtree.
    std::vector<std::int64_t> total(self_device);
    for (event_index i = n; i-- > 0;) {
        if (!ev.on_device(i) && ev.row(i).parent != no_index) total[ev.row(i).parent] += total[i];
    }
    for (event_index i = 0; i < n; ++i) {
        if (ev.on_device(i) || total[i] == 0) continue;  // a CPU event without device time needs no extra
        event_extra& e = ev.extra_to_write(i);
        e.self_device_ns = self_device[i];
        e.device_ns = total[i];
    }
}

}  // namespace stint::detail
