#pragma once
// Builds an event_list from unordered events: orders them by start, links parent/children per thread
// using the nesting RAII guarantees, and computes self time.

#include <array>          // std::array
#include <cstddef>        // std::size_t
#include <cstdint>        // std::int64_t, std::uint16_t, std::uint32_t, std::uint64_t, std::uintptr_t
#include <memory>         // std::shared_ptr
#include <string>         // std::string
#include <string_view>    // std::string_view
#include <unordered_map>  // std::unordered_map
#include <unordered_set>  // std::unordered_set
#include <utility>        // std::move, std::pair
#include <vector>         // std::vector

#include "stint/analysis/detail/call_stacks.hpp"  // what build() runs, declared for the files that call it
#include "stint/analysis/detail/event_store.hpp"
#include "stint/analysis/detail/module_hierarchy.hpp"
#include "stint/analysis/event.hpp"
#include "stint/analysis/event_list.hpp"
#include "stint/detail/separate_compilation.hpp"

namespace stint::detail {

/// Collects events (from a drain, or by hand in tests) and turns them into an event_list.
///
///     event_list_builder b;
///     auto t = b.add_thread({.os_tid = 7, .name = "main"});
///     b.add(event_kind::cpu_op, "aten::mm", t, 0, 1000);
///     event_list list = std::move(b).build();
class event_list_builder {
public:
    STINT_DECL event_list_builder();

    /// Adds a thread; events name it by the returned index.
    std::uint32_t add_thread(thread_info info) {
        list_.threads_.push_back(std::move(info));
        return static_cast<std::uint32_t>(list_.threads_.size() - 1);
    }
    thread_info& thread(std::uint32_t index) { return list_.threads_[index]; }
    [[nodiscard]] std::size_t thread_count() const { return list_.threads_.size(); }

    /// Adds an event whose name outlives the list (a site's static name); `where` is the site's source
    /// location (static data of the instrumented code), if it has one.
    STINT_DECL event_index add(event_kind kind, std::string_view static_name, std::uint32_t thread,
                               std::int64_t start_ns, std::int64_t end_ns, const source_location* where = nullptr);
    /// Adds an event whose name is copied into the list (once per distinct name).
    STINT_DECL event_index add_copy(event_kind kind, std::string_view name, std::uint32_t thread,
                                    std::int64_t start_ns, std::int64_t end_ns, const source_location* where = nullptr);
    /// The flop estimate of event i.
    void set_flops(event_index i, std::int64_t flops) { ev().extra_to_write(i).flops = flops; }
    [[nodiscard]] event_kind kind_of(event_index i) const { return list_.store_.row(i).kind; }

    /// The track of one device stream, added the first time it is asked for.
    STINT_DECL std::uint32_t device_track(stint::device where, std::uint32_t stream);
    /// Adds a device event (kernel, copy, memset, sync) on a track of device_track(); its name is
    /// copied. It has no parent: set_launcher() says which CPU event launched it.
    STINT_DECL event_index add_device_event(event_kind kind, std::string_view name, std::uint32_t track,
                                            std::int64_t start_ns, std::int64_t end_ns, const device_args& args);
    /// Adds a CUDA API call made on CPU thread `thread` (its name is copied). Its parent is the CPU event
    /// that set_launcher() names; without one it is top-level.
    STINT_DECL event_index add_api_call(event_kind kind, std::string_view name, std::uint32_t thread,
                                        std::int64_t start_ns, std::int64_t end_ns, const device_args& args);
    /// Event `launched` (a device event or API call, as added) was launched by CPU event `launcher`
    /// (as added; no_index: by none that was recorded). An API call becomes the launcher's child.
    STINT_DECL void set_launcher(event_index launched, event_index launcher);
    /// Adds a [memory] or [OutOfMemory] instant on CPU thread `thread` (its parent is found from the
    /// thread's nesting as for any instant). `sequence` orders memory events across threads (a process-
    /// wide counter taken when each was reported): build() replays them in that order to size frees
    /// from their allocations and to compute totals.
    STINT_DECL event_index add_memory_event(event_kind kind, std::uint32_t thread, std::int64_t at_ns,
                                            const memory_record& record, std::uint64_t sequence,
                                            memory_event_flags flags = {}, const source_location* where = nullptr);
    /// Memory events lost to the buffer budget.
    void set_memory_dropped(std::uint64_t dropped) { list_.memory_dropped_ = dropped; }
    /// The device collection's status and losses, as the list reports them.
    void set_device_report(device_report report) { list_.device_ = std::move(report); }
    std::string_view copy_string(std::string_view text) { return arena_->store(text); }

    /// Event i (a flow or async span point, as added) carried `id`; build() pairs the points.
    void set_point_id(event_index i, std::uint64_t id) { point_ids_.push_back({i, id}); }

    /// Event i (a counter's sample, as added) recorded `value`.
    void set_counter_value(event_index i, const counter_value& value) { counter_values_.push_back({i, value}); }

    STINT_DECL void set_args(event_index i, event_args args);
    /// Event i's args, made empty first if it has none.
    STINT_DECL event_args& args_of(event_index i);
    STINT_DECL void set_stack(event_index i, const std::vector<std::string>& frames_innermost_first);
    /// Native return addresses an event recorded (with_stack<native>), innermost first; build() names
    /// them when stacks are built.
    STINT_DECL void set_native_frames(event_index i, std::vector<std::uint64_t> frames);
    /// What builds the stacks, and what the module paths (a drain's options: the profiler's config names them).
    using call_stack_builder = void (*)(event_store& events, const std::vector<std::vector<std::uint64_t>>& native,
                                        stack_tree& stacks);
    using module_hierarchy_builder = void (*)(event_store& events, std::vector<event_args>& args);
    /// build() gives every event a stack (with_stack): its location and its ancestors', or its native
    /// frames. A pointer, so that only a program whose config names with_stack emits the builder.
    void build_call_stacks(call_stack_builder builder = &assign_call_stacks) { call_stacks_ = builder; }
    /// build() gives every op inside module scopes its "Module Hierarchy" (with_modules).
    void build_module_hierarchy(module_hierarchy_builder builder = &assign_module_hierarchy) {
        module_hierarchy_ = builder;
    }
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
    STINT_DECL void set_record_depth(event_index i, std::uint16_t depth);

    /// Orders events by (start, longer first, then the program's order or insertion), links the tree,
    /// and gives each event the id first_id + its place in the order added.
    STINT_DECL event_list build() &&;

private:
    static constexpr std::uint32_t no_depth = 0xffffffffU;

    event_store& ev() noexcept { return list_.store_; }

    // The list's name entry for `text` (static, or kept in the arena) at `where`.
    STINT_DECL std::uint32_t name_index(std::string_view text, const source_location* where);

    struct memory_order_entry {
        std::uint64_t sequence = 0;
        event_index record = 0;
        memory_event_flags flags;
    };

    // Replays the memory events in the order they were reported: a free takes its size from the live
    // allocation at its address, totals are the session's live bytes per device (unless the allocator
    // gave its own), peaks are noted, then each event's bytes are charged to the events around it.
    STINT_DECL void resolve_memory();

    // Where an event of an exactly linked run sits in its run's forest: the run, its parent (an
    // index as added), its pre-order position and subtree size within the run.
    struct exact_place {
        event_index run = no_index;
        event_index parent = no_index;
        event_index pre = 0;
        event_index size = 1;
    };

    // The order of the list: each run ordered on its own, then the runs merged.
    STINT_DECL std::vector<event_index> ordered_indices();

    [[nodiscard]] STINT_DECL bool before(event_index a, event_index b) const noexcept;

    // Links run [lo, hi) from its arrival order and depths.
    //
    // A thread appends a scope at its exit and an instant when it happens, so a run is the post-order
    // of the thread's forest: the records that arrived since a scope began are inside it. With depths,
    // the records of greater depth that arrived since the last one of equal or lower depth are the
    // next record's children (the depth falls at most one level per record, which unwraps the 16
    // stored bits). A record whose enclosing scope is missing (it began before start(), or was dropped
    // over budget) is deeper than its neighbours: it goes to the nearest recorded ancestor, or becomes
    // a root when its times prove it ended before that ancestor began.
    STINT_DECL void link_exact_run(event_index lo, event_index hi, event_index run);

    // Orders run [lo, hi) by `before` in linear time when starts are distinct: pre-order is the
    // entry order, whose starts never fall; only groups of equal starts are sorted.
    STINT_DECL void order_exact_run(std::vector<event_index>& order, event_index run, event_index lo,
                                    event_index hi);

    // Merges the ordered runs [bounds[r], bounds[r + 1]) with a heap of their heads.
    STINT_DECL std::vector<event_index> merge_runs(const std::vector<event_index>& order,
                                                   const std::vector<event_index>& bounds) const;

    // Links parents, children, depth and self time. `original[i]` is the index as added of event i.
    // A thread whose events all come from one exactly linked run takes that run's parents. Otherwise
    // (hand-built events, or one OS thread recording through several buffers: a shared library with
    // hidden visibility has its own) an open-scope stack decides: exactly within a run, by times across
    // runs (torch's rule: what ended when or before an event starts, or ends before it does, cannot
    // contain it).
    STINT_DECL void link_tree(const std::vector<event_index>& original);

    // Gives the counters' values to their samples by final index.
    STINT_DECL void place_counter_values(const std::vector<event_index>& original);

    // Gives the points their ids (by final index) and pairs them. A flow's begin pairs with the next end
    // of its id in time; among points of one id in one tick (a coarse clock makes them common) the
    // list's order decides, which on one thread is the program's (§8), and an end that comes before any
    // begin of its tick on another thread takes the next such begin (the two ran in the same tick, so
    // either may have been first in the list). An async span's begin pairs with the end of its id (ids
    // are unique). What finds no partner is counted.
    STINT_DECL void link_points(const std::vector<event_index>& original);

    // An API call lies inside the op that made it, whatever the two clocks say (CUPTI's timestamps of
    // API calls come through the same tick counter, but a coarse tick can put its start a step before
    // the op's): its times are clamped into the op's, so it orders after it and nests inside it.
    STINT_DECL void clamp_api_calls();

    // Gives each device event to its launcher's chain (event_list::kernels) and sums device times:
    // an event's own (its duration), a CPU event's self (its launches) and total (with descendants').
    STINT_DECL void link_device_events();

    static constexpr event_index not_linked = no_index - 1;

    // The launcher set for event `added` (as added), or not_linked; a list without device activity
    // never sized launcher_.
    [[nodiscard]] event_index launcher_of(event_index added) const noexcept {
        return added < launcher_.size() ? launcher_[added] : not_linked;
    }

    event_list list_;
    std::shared_ptr<string_arena> arena_;
    std::vector<event_index> launcher_;  // per event as added: its launcher (as added), no_index, or not_linked
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
    std::unordered_map<name_key, std::uint32_t, name_key_hash> name_indices_;
    struct recent_name {
        name_key key{nullptr, 0, nullptr};
        std::uint32_t index = no_index;
    };
    std::array<recent_name, 16> recent_names_{};  // a session's few hot sites skip the map

    std::unordered_set<std::string_view> copies_;  // views into arena_
    std::vector<event_index> runs_;  // first event of each run
    std::vector<std::uint32_t> depth_;  // per event as added: its record's depth, or no_depth
    std::vector<exact_place> exact_;    // per event as added, during build()
    std::vector<memory_order_entry> memory_order_;  // per memory event, as added
    std::vector<std::pair<event_index, std::uint64_t>> point_ids_;  // per point: as added, its id
    // per counter sample: as added, its value
    std::vector<std::pair<event_index, counter_value>> counter_values_;
    std::vector<std::vector<std::uint64_t>> native_frames_;
    call_stack_builder call_stacks_ = nullptr;
    module_hierarchy_builder module_hierarchy_ = nullptr;
};

}  // namespace stint::detail

#if defined(STINT_HEADER_ONLY)
#include "stint/analysis/impl/event_tree.ipp"
#endif
