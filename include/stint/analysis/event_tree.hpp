#pragma once
// Builds an event_list from unordered events: orders them by start, links parent/children per thread
// using the nesting RAII guarantees, and computes self time.

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
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
template <class Unused>
class basic_event_list_builder {
    // T, named through Unused: the bodies below are checked when a list is built, not when parsed.
    template <class T>
    using later = deferred_t<T, Unused>;

public:
    basic_event_list_builder() : arena_(std::make_shared<later<string_arena>>()) {}

    /// Adds a thread; events name it by the returned index.
    std::uint32_t add_thread(thread_info info) {
        list_.threads_.push_back(std::move(info));
        return static_cast<std::uint32_t>(list_.threads_.size() - 1);
    }
    thread_info& thread(std::uint32_t index) { return list_.threads_[index]; }
    [[nodiscard]] std::size_t thread_count() const { return list_.threads_.size(); }

    /// Adds an event whose name outlives the list (a site's static name); `where` is the site's source
    /// location (static data of the instrumented code), if it has one.
    event_index add(event_kind kind, std::string_view static_name, std::uint32_t thread, std::int64_t start_ns,
                    std::int64_t end_ns, const source_location* where = nullptr) {
        return ev().push(kind, name_index(static_name, where), thread, start_ns, end_ns);
    }
    /// Adds an event whose name is copied into the list (once per distinct name).
    event_index add_copy(event_kind kind, std::string_view name, std::uint32_t thread, std::int64_t start_ns,
                         std::int64_t end_ns, const source_location* where = nullptr) {
        const auto found = copies_.find(name);
        const std::string_view kept = found != copies_.end() ? *found : *copies_.insert(arena_->store(name)).first;
        return add(kind, kept, thread, start_ns, end_ns, where);
    }
    /// The flop estimate of event i.
    void set_flops(event_index i, std::int64_t flops) { ev().extra_to_write(i).flops = flops; }
    [[nodiscard]] event_kind kind_of(event_index i) const { return list_.store_.row(i).kind; }

    /// The track of one device stream, added the first time it is asked for.
    std::uint32_t device_track(stint::device where, std::uint32_t stream) {
        for (std::uint32_t t = 0; t < list_.threads_.size(); ++t) {
            const thread_info& info = list_.threads_[t];
            if (info.device == where && info.os_tid == stream) return t;
        }
        thread_info info;
        info.os_tid = stream;
        info.device = where;
        return add_thread(std::move(info));
    }
    /// Adds a device event (kernel, copy, memset, sync) on a track of device_track(); its name is
    /// copied. It has no parent: set_launcher() says which CPU event launched it.
    event_index add_device_event(event_kind kind, std::string_view name, std::uint32_t track, std::int64_t start_ns,
                                 std::int64_t end_ns, const device_args& args) {
        const event_index i = add_copy(kind, name, track, start_ns, end_ns);
        event_extra& e = ev().extra_to_write(i);
        e.device = list_.threads_[track].device;
        e.stream = static_cast<std::uint32_t>(list_.threads_[track].os_tid);
        e.device_info = static_cast<event_index>(list_.device_args_.size());
        list_.device_args_.push_back(args);
        return i;
    }
    /// Adds a CUDA API call made on CPU thread `thread` (its name is copied). Its parent is the CPU event
    /// that set_launcher() names; without one it is top-level.
    event_index add_api_call(event_kind kind, std::string_view name, std::uint32_t thread, std::int64_t start_ns,
                             std::int64_t end_ns, const device_args& args) {
        const event_index i = add_copy(kind, name, thread, start_ns, end_ns);
        ev().extra_to_write(i).device_info = static_cast<event_index>(list_.device_args_.size());
        list_.device_args_.push_back(args);
        set_launcher(i, no_index);
        return i;
    }
    /// Event `launched` (a device event or API call, as added) was launched by CPU event `launcher`
    /// (as added; no_index: by none that was recorded). An API call becomes the launcher's child.
    void set_launcher(event_index launched, event_index launcher) {
        if (launcher_.size() <= launched) launcher_.resize(std::size_t{launched} + 1, not_linked);
        launcher_[launched] = launcher;
    }
    /// Adds a [memory] or [OutOfMemory] instant on CPU thread `thread` (its parent is found from the
    /// thread's nesting as for any instant). `sequence` orders memory events across threads (a process-
    /// wide counter taken when each was reported): build() replays them in that order to size frees
    /// from their allocations and to compute totals.
    event_index add_memory_event(event_kind kind, std::uint32_t thread, std::int64_t at_ns, const memory_record& record,
                                 std::uint64_t sequence, memory_event_flags flags = {},
                                 const source_location* where = nullptr) {
        const std::string_view name = kind == event_kind::memory ? "[memory]" : "[OutOfMemory]";
        const event_index i = add(kind, name, thread, at_ns, at_ns, where);
        const auto record_index = static_cast<event_index>(list_.memory_records_.size());
        ev().extra_to_write(i).memory_info = record_index;
        list_.memory_records_.push_back(record);
        memory_order_.push_back({sequence, record_index, flags});
        return i;
    }
    /// Memory events lost to the buffer budget.
    void set_memory_dropped(std::uint64_t dropped) { list_.memory_dropped_ = dropped; }
    /// The device collection's status and losses, as the list reports them.
    void set_device_report(device_report report) { list_.device_ = std::move(report); }
    std::string_view copy_string(std::string_view text) { return arena_->store(text); }

    /// Event i (a flow or async span point, as added) carried `id`; build() pairs the points.
    void set_point_id(event_index i, std::uint64_t id) { point_ids_.push_back({i, id}); }

    /// Event i (a counter's sample, as added) recorded `value`.
    void set_counter_value(event_index i, const counter_value& value) { counter_values_.push_back({i, value}); }

    void set_args(event_index i, event_args args) {
        ev().extra_to_write(i).args = static_cast<event_index>(list_.args_.size());
        list_.args_.push_back(std::move(args));
    }
    /// Event i's args, made empty first if it has none.
    event_args& args_of(event_index i) {
        if (ev().extra(i).args == no_index) set_args(i, {});
        return list_.args_[ev().extra(i).args];
    }
    void set_stack(event_index i, const later<std::vector<std::string>>& frames_innermost_first) {
        event_index at = no_index;
        for (auto frame = frames_innermost_first.rbegin(); frame != frames_innermost_first.rend(); ++frame) {
            list_.stacks_.frames.push_back(*frame);
            at = list_.stacks_.push(static_cast<std::uint32_t>(list_.stacks_.frames.size() - 1), at);
        }
        ev().extra_to_write(i).stack = at;
    }
    /// Native return addresses an event recorded (with_stack<native>), innermost first; build() names
    /// them when stacks are built.
    void set_native_frames(event_index i, later<std::vector<std::uint64_t>> frames) {
        ev().extra_to_write(i).stack = static_cast<event_index>(native_frames_.size());
        native_frames_.push_back(std::move(frames));
    }
    /// build() gives every event a stack (with_stack): its location and its ancestors', or its native
    /// frames.
    void build_call_stacks() { call_stacks_ = true; }
    /// build() gives every op inside module scopes its "Module Hierarchy" (with_modules).
    void build_module_hierarchy() { module_hierarchy_ = true; }
    void set_totals(std::uint64_t recorded, std::uint64_t dropped, std::uint64_t late = 0) {
        list_.recorded_ = recorded;
        list_.dropped_ = dropped;
        list_.late_ = late;
    }
    void set_base_time_ns(std::int64_t ns) { list_.base_time_ns_ = ns; }
    void set_base_steady_ns(std::int64_t ns) { list_.base_steady_ns_ = ns; }
    /// First "Record function id" to hand out (so ids stay unique across windows): the n-th event added
    /// gets first_id + n.
    void set_first_id(std::uint64_t id) { ev().set_first_id(id); }

    /// Room for `events` events, so that a drain never copies the list while it grows.
    void reserve(std::size_t events) {
        ev().reserve(events);
        depth_.reserve(events);
    }

    /// Starts a run: the events added until the next run come from one thread buffer, which appends
    /// each scope when it ends. build() rebuilds a run's nesting from that order.
    void begin_run() { runs_.push_back(static_cast<event_index>(ev().size())); }

    /// The nesting depth (modulo 2^16) that the thread had when event `i` began, as a record stores it
    /// (recording/buffer.hpp). A run whose events all have one is linked exactly: the arrival order and
    /// the depths say who is inside whom, whatever the times say.
    void set_record_depth(event_index i, std::uint16_t depth) {
        if (depth_.size() <= i) depth_.resize(std::size_t{i} + 1, no_depth);
        depth_[i] = depth;
    }

    /// Orders events by (start, longer first, then the program's order or insertion), links the tree,
    /// and gives each event the id first_id + its place in the order added.
    event_list build() && {
        depth_.resize(ev().size(), no_depth);
        exact_.assign(ev().size(), exact_place{});
        clamp_api_calls();
        later<std::vector<event_index>> order = ordered_indices();
        const later<std::vector<event_index>> original = order;  // permute consumes `order`
        ev().permute(order);
        link_tree(original);
        if (!point_ids_.empty()) link_points(original);
        if (!counter_values_.empty()) place_counter_values(original);
        if (!list_.device_args_.empty()) link_device_events();
        if (!list_.memory_records_.empty()) resolve_memory();
        if (call_stacks_) {
            assign_call_stacks(ev(), native_frames_, list_.stacks_);
        } else if (!native_frames_.empty()) {
            for (event_index i = 0; i < ev().size(); ++i) {  // frames recorded, stacks not asked for
                if (ev().row(i).extra != no_index) ev().extra_to_write(i).stack = no_index;
            }
        }
        if (module_hierarchy_) assign_module_hierarchy(ev(), list_.args_);
        list_.arenas_.push_back(std::move(arena_));
        return std::move(list_);
    }

private:
    static constexpr std::uint32_t no_depth = 0xffffffffU;

    later<event_store>& ev() noexcept { return list_.store_; }

    // The list's name entry for `text` (static, or kept in the arena) at `where`.
    std::uint32_t name_index(std::string_view text, const source_location* where) {
        const name_key key{text.data(), text.size(), where};
        recent_name& slot = recent_names_[name_key_hash{}(key) >> (sizeof(std::size_t) * 8 - 4)];  // the top 4 bits
        if (slot.index != no_index && slot.key == key) return slot.index;
        auto [at, added] = name_indices_.try_emplace(key, 0);
        if (added) at->second = ev().add_name({text, where});
        slot = {key, at->second};
        return at->second;
    }

    struct memory_order_entry {
        std::uint64_t sequence = 0;
        event_index record = 0;
        memory_event_flags flags;
    };

    // Replays the memory events in the order they were reported: a free takes its size from the live
    // allocation at its address, totals are the session's live bytes per device (unless the allocator
    // gave its own), peaks are noted, then each event's bytes are charged to the events around it.
    void resolve_memory() {
        std::sort(memory_order_.begin(), memory_order_.end(),
                  [](const memory_order_entry& a, const memory_order_entry& b) { return a.sequence < b.sequence; });
        later<std::vector<event_index>> event_of(list_.memory_records_.size(), no_index);
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
        later<std::unordered_map<std::pair<std::uint64_t, std::uint64_t>, std::int64_t, pair_hash>> live;
        later<std::vector<std::pair<stint::device, std::int64_t>>> totals;
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

    // Where an event of an exactly linked run sits in its run's forest: the run, its parent (an
    // index as added), its pre-order position and subtree size within the run.
    struct exact_place {
        event_index run = no_index;
        event_index parent = no_index;
        event_index pre = 0;
        event_index size = 1;
    };

    // The order of the list: each run ordered on its own, then the runs merged.
    later<std::vector<event_index>> ordered_indices() {
        const auto n = static_cast<event_index>(ev().size());
        later<std::vector<event_index>> bounds{0};
        for (event_index b : runs_) {
            if (b > bounds.back() && b < n) bounds.push_back(b);
        }
        bounds.push_back(n);
        later<std::vector<event_index>> order(n);
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

    [[nodiscard]] bool before(event_index a, event_index b) const noexcept {
        const later<event_store>& store = list_.store_;
        if (store.start(a) != store.start(b)) return store.start(a) < store.start(b);
        if (store.end(a) != store.end(b)) return store.end(a) > store.end(b);  // the enclosing one first
        if (exact_[a].run != no_index && exact_[a].run == exact_[b].run) return exact_[a].pre < exact_[b].pre;
        return a < b;  // insertion order: a scope recorded before its zero-length twin
    }

    // Links run [lo, hi) from its arrival order and depths.
    //
    // A thread appends a scope at its exit and an instant when it happens, so a run is the post-order
    // of the thread's forest: the records that arrived since a scope began are inside it. With depths,
    // the records of greater depth that arrived since the last one of equal or lower depth are the
    // next record's children (the depth falls at most one level per record, which unwraps the 16
    // stored bits). A record whose enclosing scope is missing (it began before start(), or was dropped
    // over budget) is deeper than its neighbours: it goes to the nearest recorded ancestor, or becomes
    // a root when its times prove it ended before that ancestor began.
    void link_exact_run(event_index lo, event_index hi, event_index run) {
        const later<event_store>& ev = list_.store_;
        const event_index m = hi - lo;
        later<std::vector<std::int64_t>> depth(m);
        std::int64_t level = 0;
        for (event_index i = 0; i < m; ++i) {
            if (i > 0) {
                const auto step = static_cast<std::uint16_t>(depth_[lo + i] - depth_[lo + i - 1]);
                level += step == 0xffff ? -1 : step;
            }
            depth[i] = level;
        }
        later<std::vector<event_index>> pending;  // finished subtrees not yet given a parent, in arrival order
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

    // Orders run [lo, hi) by `before` in linear time when starts are distinct: pre-order is the
    // entry order, whose starts never fall; only groups of equal starts are sorted.
    void order_exact_run(later<std::vector<event_index>>& order, event_index run, event_index lo, event_index hi) {
        link_exact_run(lo, hi, run);
        for (event_index i = lo; i < hi; ++i) order[lo + exact_[i].pre] = i;
        const later<event_store>& ev = list_.store_;
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

    // Merges the ordered runs [bounds[r], bounds[r + 1]) with a heap of their heads.
    later<std::vector<event_index>> merge_runs(const later<std::vector<event_index>>& order,
                                        const later<std::vector<event_index>>& bounds) const {
        struct head {
            event_index at;
            event_index end;
        };
        later<std::vector<head>> heads;
        for (std::size_t r = 0; r + 1 < bounds.size(); ++r) heads.push_back({bounds[r], bounds[r + 1]});
        const auto comes_later = [&](const head& a, const head& b) { return before(order[b.at], order[a.at]); };
        std::make_heap(heads.begin(), heads.end(), comes_later);
        later<std::vector<event_index>> merged;
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

    // Links parents, children, depth and self time. `original[i]` is the index as added of event i.
    // A thread whose events all come from one exactly linked run takes that run's parents. Otherwise
    // (hand-built events, or one OS thread recording through several buffers: a shared library with
    // hidden visibility has its own) an open-scope stack decides: exactly within a run, by times across
    // runs (torch's rule: what ended when or before an event starts, or ends before it does, cannot
    // contain it).
    void link_tree(const later<std::vector<event_index>>& original) {
        later<event_store>& ev = list_.store_;
        const auto n = static_cast<event_index>(ev.size());
        later<std::vector<event_index>> position(n);
        for (event_index i = 0; i < n; ++i) position[original[i]] = i;
        constexpr event_index mixed = no_index - 1;
        later<std::vector<event_index>> thread_run(list_.threads_.size(), no_index);
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
        later<std::vector<std::vector<event_index>>> open(list_.threads_.size());
        later<std::vector<event_index>> last_child(n, no_index);
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

    // Gives the counters' values to their samples by final index.
    void place_counter_values(const later<std::vector<event_index>>& original) {
        later<std::vector<event_index>> position(ev().size());
        for (event_index i = 0; i < ev().size(); ++i) position[original[i]] = i;
        auto& counters = list_.counters_;
        counters.reserve(counter_values_.size());
        for (const auto& [added, value] : counter_values_) counters.push_back({position[added], value});
        std::sort(counters.begin(), counters.end(), [](const auto& a, const auto& b) { return a.event < b.event; });
    }

    // Gives the points their ids (by final index) and pairs them. A flow's begin pairs with the next end
    // of its id in time; among points of one id in one tick (a coarse clock makes them common) the
    // list's order decides, which on one thread is the program's (§8), and an end that comes before any
    // begin of its tick on another thread takes the next such begin (the two ran in the same tick, so
    // either may have been first in the list). An async span's begin pairs with the end of its id (ids
    // are unique). What finds no partner is counted.
    void link_points(const later<std::vector<event_index>>& original) {
        const later<event_store>& ev = list_.store_;
        later<std::vector<event_index>> position(ev.size());
        for (event_index i = 0; i < ev.size(); ++i) position[original[i]] = i;
        auto& points = list_.points_;
        points.reserve(point_ids_.size());
        for (const auto& [added, id] : point_ids_) points.push_back({position[added], id});
        std::sort(points.begin(), points.end(), [](const auto& a, const auto& b) { return a.event < b.event; });

        later<std::vector<event_list::point_entry>> flows;
        later<std::unordered_map<std::uint64_t, event_index>> async_end;
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
        later<std::vector<event_index>> early_ends;  // ends of the current tick that found no begin yet
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

    // An API call lies inside the op that made it, whatever the two clocks say (CUPTI's timestamps of
    // API calls come through the same tick counter, but a coarse tick can put its start a step before
    // the op's): its times are clamped into the op's, so it orders after it and nests inside it.
    void clamp_api_calls() {
        later<event_store>& ev = list_.store_;
        for (event_index i = 0; i < launcher_.size() && i < ev.size(); ++i) {
            const event_index op = launcher_[i];
            if (op == not_linked || op == no_index || ev.on_device(i)) continue;
            const std::int64_t start = std::clamp(ev.start(i), ev.start(op), ev.end(op));
            ev.set_times(i, start, std::clamp(ev.end(i), start, ev.end(op)));
        }
    }

    // Gives each device event to its launcher's chain (event_list::kernels) and sums device times:
    // an event's own (its duration), a CPU event's self (its launches) and total (with descendants').
    void link_device_events() {
        later<event_store>& ev = list_.store_;
        const auto n = static_cast<event_index>(ev.size());
        later<std::vector<event_index>> last(n, no_index);
        later<std::vector<std::int64_t>> self_device(n, 0);  // CPU events': their launches' durations
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
        later<std::vector<std::int64_t>> total(self_device);
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

    static constexpr event_index not_linked = no_index - 1;

    // The launcher set for event `added` (as added), or not_linked; a list without device activity
    // never sized launcher_.
    [[nodiscard]] event_index launcher_of(event_index added) const noexcept {
        return added < launcher_.size() ? launcher_[added] : not_linked;
    }

    later<event_list> list_;
    later<std::shared_ptr<string_arena>> arena_;
    later<std::vector<event_index>> launcher_;  // per event as added: its launcher (as added), no_index, or not_linked
    // Names interned: each (text, location) once in the list, a copied text once in the arena.
    struct name_key {
        const char* data;
        std::size_t size;
        const source_location* where;
        bool operator==(const name_key&) const noexcept = default;
    };
    struct name_key_hash {
        std::size_t operator()(const name_key& k) const noexcept {
            const auto mix = [](std::uint64_t h, std::uint64_t v) { return (h ^ v) * 0x9e3779b97f4a7c15ULL; };
            return static_cast<std::size_t>(mix(mix(reinterpret_cast<std::uintptr_t>(k.data), k.size),
                                                reinterpret_cast<std::uintptr_t>(k.where)));
        }
    };
    later<std::unordered_map<name_key, std::uint32_t, name_key_hash>> name_indices_;
    struct recent_name {
        name_key key{nullptr, 0, nullptr};
        std::uint32_t index = no_index;
    };
    std::array<recent_name, 16> recent_names_{};  // a session's few hot sites skip the map

    later<std::unordered_set<std::string_view>> copies_;  // views into arena_
    later<std::vector<event_index>> runs_;  // first event of each run
    later<std::vector<std::uint32_t>> depth_;  // per event as added: its record's depth, or no_depth
    later<std::vector<exact_place>> exact_;    // per event as added, during build()
    later<std::vector<memory_order_entry>> memory_order_;  // per memory event, as added
    later<std::vector<std::pair<event_index, std::uint64_t>>> point_ids_;  // per point: as added, its id
    // per counter sample: as added, its value
    later<std::vector<std::pair<event_index, counter_value>>> counter_values_;
    later<std::vector<std::vector<std::uint64_t>>> native_frames_;
    bool call_stacks_ = false;
    bool module_hierarchy_ = false;
};

}  // namespace stint::detail

namespace stint {

template <class T>
void basic_event_list<T>::append(const basic_event_list& later) {
    if (later.empty() && later.recorded_ == 0 && later.dropped_ == 0 && later.late_ == 0) return;
    if (empty() && threads_.empty()) {
        // Counts of earlier windows that had no events (all dropped, or only late records found) stay.
        const std::uint64_t recorded = recorded_;
        const std::uint64_t dropped = dropped_;
        const std::uint64_t late = late_;
        const std::uint64_t memory_dropped = memory_dropped_;
        *this = later;
        recorded_ += recorded;
        dropped_ += dropped;
        late_ += late;
        memory_dropped_ += memory_dropped;
        return;
    }
    const std::int64_t shift = later.base_time_ns_ - base_time_ns_;
    detail::deferred_t<std::vector<std::uint32_t>, T> thread_map(later.threads_.size());
    for (std::size_t t = 0; t < later.threads_.size(); ++t) {
        const thread_info& info = later.threads_[t];
        auto found = std::find_if(threads_.begin(), threads_.end(), [&](const thread_info& mine) {
            return mine.os_tid == info.os_tid && mine.device == info.device;
        });
        if (found == threads_.end()) {
            threads_.push_back(info);
            thread_map[t] = static_cast<std::uint32_t>(threads_.size() - 1);
        } else {
            found->recorded += info.recorded;
            found->dropped += info.dropped;
            thread_map[t] = static_cast<std::uint32_t>(found - threads_.begin());
        }
    }
    const auto offset = static_cast<event_index>(size());
    const auto relink = [offset](event_index i) { return i == no_index ? no_index : i + offset; };
    const auto args_offset = static_cast<event_index>(args_.size());
    const event_index stacks_offset = stacks_.append(later.stacks_);
    const auto device_offset = static_cast<event_index>(device_args_.size());
    const auto memory_offset = static_cast<event_index>(memory_records_.size());
    if (!later.memory_usage_.empty() || !memory_usage_.empty()) {
        memory_usage_.resize(size());
        if (later.memory_usage_.empty()) {
            memory_usage_.resize(size() + later.size());
        } else {
            memory_usage_.insert(memory_usage_.end(), later.memory_usage_.begin(), later.memory_usage_.end());
        }
    }
    memory_records_.insert(memory_records_.end(), later.memory_records_.begin(), later.memory_records_.end());
    for (const memory_peak& peak : later.memory_peaks_) {
        auto mine = std::find_if(memory_peaks_.begin(), memory_peaks_.end(),
                                 [&](const memory_peak& p) { return p.device == peak.device; });
        if (mine == memory_peaks_.end()) {
            memory_peaks_.push_back(peak);
            memory_peaks_.back().at_ns += shift;
        } else if (peak.bytes > mine->bytes) {
            *mine = peak;
            mine->at_ns += shift;
        }
    }
    memory_dropped_ += later.memory_dropped_;
    store_.append(
        later.store_, relink, [&](std::uint32_t t) { return thread_map[t]; }, shift, args_offset, stacks_offset,
        device_offset, memory_offset);
    args_.insert(args_.end(), later.args_.begin(), later.args_.end());
    for (const point_entry& p : later.points_) points_.push_back({p.event + offset, p.id});
    for (const counter_entry& c : later.counters_) counters_.push_back({c.event + offset, c.value});
    for (const flow_link& f : later.flows_) flows_.push_back({f.id, f.begin + offset, f.end + offset});
    for (const async_span& a : later.async_spans_) async_spans_.push_back({a.id, a.begin + offset, relink(a.end)});
    unmatched_ += later.unmatched_;
    device_args_.insert(device_args_.end(), later.device_args_.begin(), later.device_args_.end());
    device_events_ += later.device_events_;
    device_.loss += later.device_.loss;
    if (later.device_.status != "off") {
        device_loss loss = device_.loss;
        detail::deferred_t<std::vector<device_properties>, T> devices = std::move(device_.devices);
        device_ = later.device_;  // the latest window's status
        device_.loss = loss;
        for (const device_properties& d : later.device_.devices) {
            const auto same = [&](const device_properties& o) { return o.id == d.id; };
            if (std::none_of(devices.begin(), devices.end(), same)) {
                devices.push_back(d);
            }
        }
        device_.devices = std::move(devices);
    }
    arenas_.insert(arenas_.end(), later.arenas_.begin(), later.arenas_.end());
    recorded_ += later.recorded_;
    dropped_ += later.dropped_;
    late_ += later.late_;
}

}  // namespace stint
