#pragma once
// The merged, ordered, tree-linked list of a session's events (design §1 step 5). Every analysis and
// exporter reads this; none touches the recording buffers.

#include <cstddef>      // std::size_t, std::ptrdiff_t
#include <cstdint>      // std::int64_t, std::uint32_t, std::uint64_t
#include <deque>        // std::deque
#include <iterator>     // std::forward_iterator_tag, std::forward_iterator, std::distance
#include <memory>       // std::shared_ptr, std::unique_ptr
#include <optional>     // std::optional
#include <span>         // std::span
#include <string>       // std::string
#include <string_view>  // std::string_view
#include <vector>       // std::vector

#include "stint/analysis/detail/event_store.hpp"
#include "stint/analysis/event.hpp"
#include "stint/detail/separate_compilation.hpp"

namespace stint {

class event_list;

namespace detail {
class event_list_builder;

/// Owns copies of runtime names; blocks never move, so string_views into them stay valid, and the
/// arena is shared by copies of an event_list.
class string_arena {
public:
    STINT_DECL std::string_view store(std::string_view text);

private:
    static constexpr std::size_t block_size_ = 64 * 1024;
    std::vector<std::unique_ptr<char[]>> blocks_;
    std::vector<std::unique_ptr<char[]>> big_;
    std::size_t used_ = 0;
};

/// The stacks of an event_list, interned as a tree: a stack is one frame (its innermost) on top of
/// its caller's stack, so N nested scopes cost N nodes, not N^2/2 frames, and each distinct frame is
/// one string. A node's parent always comes before it.
struct stack_tree {
    struct node {
        std::uint32_t frame;  // into `frames`
        event_index parent;   // the stack without this frame; no_index: this is the outermost frame
        std::uint32_t size;   // frames in the stack, this one included
    };
    std::vector<node> nodes;
    std::deque<std::string> frames;  // a deque never moves its strings: views into them stay valid

    /// The stack `frame` on top of `parent` (no_index: none), as a new node.
    event_index push(std::uint32_t frame, event_index parent) {
        const std::uint32_t size = parent == no_index ? 1 : nodes[parent].size + 1;
        nodes.push_back({frame, parent, size});
        return static_cast<event_index>(nodes.size() - 1);
    }
    /// Appends another list's stacks; returns the offset to add to its node indices.
    STINT_DECL event_index append(const stack_tree& later);
};

struct call_stack_access;
}  // namespace detail

/// An event's call stack as event_list::stack() returns it: its frames, innermost first (torch's
/// FunctionEvent.stack order). A view of the list's stack tree: copying one copies no frames, size()
/// is O(1), and it stays valid while the event_list lives unchanged.
///
///     const stint::call_stack stack = prof.events().stack(e);
///     for (const std::string& frame : stack) fmt::print("  at {}\n", frame);  // innermost first
///     std::vector<std::string> root_first(stack.begin(), stack.end());  // then std::ranges::reverse
class call_stack {
public:
    /// Walks from the innermost frame outwards.
    class iterator {
    public:
        using iterator_category = std::forward_iterator_tag;
        using value_type = std::string;
        using difference_type = std::ptrdiff_t;
        using pointer = const std::string*;
        using reference = const std::string&;
        iterator() = default;
        reference operator*() const { return tree_->frames[tree_->nodes[node_].frame]; }
        pointer operator->() const { return &**this; }
        iterator& operator++() {
            node_ = --left_ == 0 ? no_index : tree_->nodes[node_].parent;
            return *this;
        }
        iterator operator++(int) {
            iterator old = *this;
            ++*this;
            return old;
        }
        bool operator==(const iterator& other) const { return node_ == other.node_ && left_ == other.left_; }

    private:
        friend class call_stack;
        iterator(const detail::stack_tree* tree, event_index node, std::uint32_t left)
            : tree_(tree), node_(node), left_(left) {}
        const detail::stack_tree* tree_ = nullptr;
        event_index node_ = no_index;
        std::uint32_t left_ = 0;
    };
    using const_iterator = iterator;
    using value_type = std::string;
    using size_type = std::size_t;

    /// An empty stack.
    call_stack() = default;

    [[nodiscard]] std::size_t size() const noexcept { return size_; }
    [[nodiscard]] bool empty() const noexcept { return size_ == 0; }
    [[nodiscard]] iterator begin() const noexcept { return {tree_, size_ == 0 ? no_index : node_, size_}; }
    [[nodiscard]] iterator end() const noexcept { return {tree_, no_index, 0}; }
    /// The innermost frame (the event's own); the stack must not be empty.
    [[nodiscard]] const std::string& front() const { return *begin(); }
    /// Frame `i`, innermost first. Walks `i` links: iterate rather than index in a loop.
    [[nodiscard]] const std::string& operator[](std::size_t i) const {
        event_index at = node_;
        for (; i > 0; --i) at = tree_->nodes[at].parent;
        return tree_->frames[tree_->nodes[at].frame];
    }
    /// The caller's stack: this one without its innermost frame (empty when it has one frame).
    [[nodiscard]] call_stack outer() const noexcept {
        if (size_ <= 1) return {};
        return {tree_, tree_->nodes[node_].parent, size_ - 1};
    }
    /// The innermost `n` frames (all of them when there are fewer).
    [[nodiscard]] call_stack first(std::size_t n) const noexcept {
        if (n == 0) return {};
        return {tree_, node_, n < size_ ? static_cast<std::uint32_t>(n) : size_};
    }
    /// The same frames in the same order.
    friend bool operator==(const call_stack& a, const call_stack& b) noexcept {
        if (a.size_ != b.size_) return false;
        if (a.tree_ == b.tree_ && a.node_ == b.node_) return true;
        for (iterator x = a.begin(), y = b.begin(); x != a.end(); ++x, ++y) {
            if (*x != *y) return false;
        }
        return true;
    }

private:
    friend class event_list;
    friend struct detail::call_stack_access;
    call_stack(const detail::stack_tree* tree, event_index node, std::uint32_t size)
        : tree_(tree), node_(node), size_(size) {}
    const detail::stack_tree* tree_ = nullptr;
    event_index node_ = no_index;  // the innermost frame's node
    std::uint32_t size_ = 0;       // frames shown: the node's size, or fewer (first())
};
static_assert(std::forward_iterator<call_stack::iterator>);

namespace detail {
/// What analyses read of a call_stack besides its frames: the tree it views and its innermost node.
struct call_stack_access {
    static const stack_tree* tree(const call_stack& s) noexcept { return s.tree_; }
    static event_index node(const call_stack& s) noexcept { return s.node_; }
};
}  // namespace detail

/// The events of one session (or one schedule window), ordered by start time. An event_list stores
/// each event in 48 bytes and assembles the ones it hands out: list[i] by value, an iterator into itself.
///
///     for (auto& e : prof.events())
///         fmt::print("{} {:.3f}us\n", e.name, e.cpu_time_total());
class event_list {
public:
    using value_type = event;

    /// Walks the list in order. Each event is assembled from its 48-byte row into the iterator itself, so
    /// that `for (auto& e : list)` works as over any container; a reference from `*it` lives while `it`
    /// does and does not move (copy the event, or use list[i], to keep it longer). Forward only, for
    /// algorithms: std::reverse_iterator would hand out a reference into a copy it has destroyed.
    class iterator {
    public:
        using iterator_concept = std::forward_iterator_tag;
        using iterator_category = std::input_iterator_tag;  // its reference lives in the iterator
        using value_type = event;
        using difference_type = std::ptrdiff_t;
        using reference = const event&;
        iterator() = default;
        iterator(const detail::event_store* store, event_index at) : store_(store), at_(at) {}
        [[nodiscard]] const event& operator*() const {
            store_->assemble_into(current_, at_);
            return current_;
        }
        [[nodiscard]] const event* operator->() const { return &**this; }
        [[nodiscard]] event operator[](difference_type n) const {
            return store_->assemble(static_cast<event_index>(at_ + n));
        }
        iterator& operator++() { ++at_; return *this; }
        iterator operator++(int) { iterator old = *this; ++at_; return old; }
        iterator& operator--() { --at_; return *this; }
        iterator operator--(int) { iterator old = *this; --at_; return old; }
        iterator& operator+=(difference_type n) { at_ = static_cast<event_index>(at_ + n); return *this; }
        iterator& operator-=(difference_type n) { at_ = static_cast<event_index>(at_ - n); return *this; }
        friend iterator operator+(iterator i, difference_type n) { return i += n; }
        friend iterator operator+(difference_type n, iterator i) { return i += n; }
        friend iterator operator-(iterator i, difference_type n) { return i -= n; }
        friend difference_type operator-(const iterator& a, const iterator& b) {
            return static_cast<difference_type>(a.at_) - static_cast<difference_type>(b.at_);
        }
        friend bool operator==(const iterator& a, const iterator& b) { return a.at_ == b.at_; }
        friend auto operator<=>(const iterator& a, const iterator& b) { return a.at_ <=> b.at_; }

    private:
        const detail::event_store* store_ = nullptr;
        event_index at_ = 0;
        mutable event current_;  // what *this refers to
    };
    using const_iterator = iterator;

    /// Iterates the direct children of one event, or the device events it launched, in start order.
    class child_range {
    public:
        class iterator {
        public:
            using iterator_concept = std::forward_iterator_tag;
            using iterator_category = std::input_iterator_tag;  // its reference lives in the iterator
            using value_type = event;
            using difference_type = std::ptrdiff_t;
            using reference = const event&;
            iterator() = default;
            iterator(const detail::event_store* store, event_index at, bool linked = false)
                : store_(store), at_(at), linked_(linked) {}
            [[nodiscard]] const event& operator*() const {
                store_->assemble_into(current_, at_);
                return current_;
            }
            [[nodiscard]] const event* operator->() const { return &**this; }
            iterator& operator++() {
                at_ = linked_ ? store_->extra(at_).next_linked : store_->row(at_).next_sibling;
                return *this;
            }
            iterator operator++(int) {
                iterator old = *this;
                ++*this;
                return old;
            }
            bool operator==(const iterator& other) const { return at_ == other.at_; }

        private:
            const detail::event_store* store_ = nullptr;
            event_index at_ = no_index;
            bool linked_ = false;  // walks a launcher's device events instead of siblings
            mutable event current_;  // what *this refers to
        };
        child_range(const detail::event_store* store, event_index first, bool linked = false)
            : store_(store), first_(first), linked_(linked) {}
        [[nodiscard]] iterator begin() const { return {store_, first_, linked_}; }
        [[nodiscard]] iterator end() const { return {store_, no_index, linked_}; }
        [[nodiscard]] bool empty() const { return first_ == no_index; }
        [[nodiscard]] std::size_t size() const { return static_cast<std::size_t>(std::distance(begin(), end())); }

    private:
        const detail::event_store* store_;
        event_index first_;
        bool linked_;
    };

    event_list() = default;

    [[nodiscard]] std::size_t size() const noexcept { return store_.size(); }
    [[nodiscard]] bool empty() const noexcept { return store_.size() == 0; }
    /// Event i, assembled.
    [[nodiscard]] event operator[](std::size_t i) const { return store_.assemble(static_cast<event_index>(i)); }
    [[nodiscard]] iterator begin() const noexcept { return {&store_, 0}; }
    [[nodiscard]] iterator end() const noexcept { return {&store_, static_cast<event_index>(store_.size())}; }

    /// Index of an event of this list (for parent/child links).
    [[nodiscard]] event_index index_of(const event& e) const noexcept { return e.index; }
    /// The event's parent, or nothing for a top-level event.
    [[nodiscard]] std::optional<event> parent(const event& e) const {
        if (e.parent == no_index) return std::nullopt;
        return store_.assemble(e.parent);
    }
    [[nodiscard]] child_range children(const event& e) const noexcept { return {&store_, e.first_child}; }
    /// Bytes the list holds for its events (their rows and side tables; arguments, stacks and names
    /// not counted): 48 per event plus what the few events with extras carry.
    [[nodiscard]] std::size_t event_bytes() const noexcept { return store_.bytes(); }

    [[nodiscard]] std::span<const thread_info> threads() const noexcept { return threads_; }
    [[nodiscard]] const thread_info& thread_of(const event& e) const { return threads_[e.thread]; }
    /// Captured inputs of an op, or nullptr when none were captured.
    [[nodiscard]] const event_args* args(const event& e) const noexcept {
        return e.args == no_index ? nullptr : &args_[e.args];
    }
    /// Stack of an event, innermost frame first (as torch's FunctionEvent.stack); empty if none.
    /// Events on one call path share a stack (equal `event::stack`).
    ///
    ///     for (const std::string& frame : prof.events().stack(e)) fmt::print("  at {}\n", frame);
    [[nodiscard]] call_stack stack(const event& e) const noexcept {
        if (e.stack == no_index) return {};
        return {&stacks_, e.stack, stacks_.nodes[e.stack].size};
    }

    /// A device event's or CUDA API call's CUPTI details (grid, bytes, correlation...), or nullptr.
    [[nodiscard]] const device_args* device_args_of(const event& e) const noexcept {
        return e.device_info == no_index ? nullptr : &device_args_[e.device_info];
    }
    /// The CPU op or scope that launched a device event or made a CUDA API call, or nothing.
    [[nodiscard]] std::optional<event> launcher(const event& e) const {
        if (e.linked == no_index) return std::nullopt;
        return store_.assemble(e.linked);
    }
    /// The device events (kernels, copies, memsets, syncs) that a CPU event launched itself, in start
    /// order (torch's FunctionEvent.kernels); its descendants' are theirs.
    ///
    ///     for (const stint::event& k : prof.events().kernels(op))
    ///         fmt::print("{} {}us\n", k.name, k.duration_ns() / 1e3);
    [[nodiscard]] child_range kernels(const event& e) const noexcept { return {&store_, e.first_linked, true}; }
    /// Whether any event ran on a device.
    [[nodiscard]] bool has_device_events() const noexcept { return device_events_ != 0; }
    /// The device collection of the session: its status and what it lost.
    [[nodiscard]] const device_report& device() const noexcept { return device_; }

    /// A [memory] or [OutOfMemory] event's block, bytes, totals and device, or nullptr.
    [[nodiscard]] const memory_record* memory_of(const event& e) const noexcept {
        return e.memory_info == no_index ? nullptr : &memory_records_[e.memory_info];
    }
    /// Bytes an event allocated minus freed (profile_memory); zeros when the session tracked none.
    ///
    ///     fmt::print("{} kept {} bytes\n", op.name, prof.events().memory_usage_of(op).cpu);
    [[nodiscard]] memory_usage memory_usage_of(const event& e) const noexcept {
        return memory_usage_.empty() ? memory_usage{} : memory_usage_[index_of(e)];
    }
    /// Whether the session recorded memory events.
    [[nodiscard]] bool has_memory_events() const noexcept { return !memory_records_.empty(); }
    /// The highest live memory of each device that had memory events, in the order first seen.
    [[nodiscard]] std::span<const memory_peak> memory_peaks() const noexcept { return memory_peaks_; }
    /// Memory events lost to the buffer budget (also counted in dropped()).
    [[nodiscard]] std::uint64_t memory_dropped() const noexcept { return memory_dropped_; }

    /// The id a flow or async span point carried (its kind is_point_kind); 0 for other events.
    [[nodiscard]] STINT_DECL std::uint64_t point_id(const event& e) const noexcept;
    /// The value a counter's sample recorded (its kind is `counter`); nothing for other events.
    [[nodiscard]] STINT_DECL std::optional<counter_value> counter_of(const event& e) const noexcept;
    /// Whether the list holds counters' samples.
    [[nodiscard]] bool has_counters() const noexcept { return !counters_.empty(); }
    /// The flows whose two points are both in the list, in the order their ends ran. The scopes they
    /// join are the points' parents.
    ///
    ///     for (const stint::flow_link& f : list.flows())
    ///         fmt::print("{} -> {}\n", list.parent(list[f.begin])->name, list.parent(list[f.end])->name);
    [[nodiscard]] std::span<const flow_link> flows() const noexcept { return flows_; }
    /// The async spans that began in the list, in the order they began.
    [[nodiscard]] std::span<const async_span> async_spans() const noexcept { return async_spans_; }
    /// Points without a partner in the list, counted.
    [[nodiscard]] const unmatched_points& unmatched() const noexcept { return unmatched_; }

    /// Records kept and records lost to the buffer budget, summed over threads.
    [[nodiscard]] std::uint64_t recorded() const noexcept { return recorded_; }
    [[nodiscard]] std::uint64_t dropped() const noexcept { return dropped_; }
    /// Records of earlier sessions that reached their buffers after those sessions were drained (a
    /// thread preempted between a scope's end and its append), found while this one ran: not in any
    /// event list, counted here instead.
    [[nodiscard]] std::uint64_t late() const noexcept { return late_; }
    /// Wall-clock time (ns since the Unix epoch) that event time 0 corresponds to.
    [[nodiscard]] std::int64_t base_time_ns() const noexcept { return base_time_ns_; }
    /// steady_clock's reading (ns since its epoch) that event time 0 corresponds to: where clocks are
    /// compared (distributed/mpi.hpp), since the wall clock may be stepped during a session.
    [[nodiscard]] std::int64_t base_steady_ns() const noexcept { return base_steady_ns_; }

    /// Appends another list (a later window) after this one, keeping both trees intact.
    STINT_DECL void append(const event_list& later);

    /// Moves the list onto another clock (a job's trace puts each rank's events on rank 0's): each
    /// time t becomes t + offset_ns + drift * (t - reference_ns), durations stretch by (1 + drift),
    /// and time 0 becomes `base_time_ns` (ns since the Unix epoch); base_steady_ns() stays this
    /// process's. Order and nesting are kept: the map is increasing (|drift| < 1).
    STINT_DECL void retime(std::int64_t offset_ns, double drift, std::int64_t reference_ns, std::int64_t base_time_ns);

private:
    friend class detail::event_list_builder;
    detail::event_store store_;
    std::vector<thread_info> threads_;
    std::vector<event_args> args_;
    detail::stack_tree stacks_;
    std::vector<std::shared_ptr<detail::string_arena>> arenas_;
    std::vector<device_args> device_args_;
    device_report device_;
    std::size_t device_events_ = 0;
    std::vector<memory_record> memory_records_;
    std::vector<memory_usage> memory_usage_;  // per event, when memory_records_ is not empty
    std::vector<memory_peak> memory_peaks_;
    struct point_entry {
        event_index event;
        std::uint64_t id;
    };
    std::vector<point_entry> points_;  // the points' ids, by event index
    struct counter_entry {
        event_index event;
        counter_value value;
    };
    std::vector<counter_entry> counters_;  // the counters' values, by event index
    std::vector<flow_link> flows_;
    std::vector<async_span> async_spans_;
    unmatched_points unmatched_;
    std::uint64_t memory_dropped_ = 0;
    std::uint64_t recorded_ = 0;
    std::uint64_t dropped_ = 0;
    std::uint64_t late_ = 0;
    std::int64_t base_time_ns_ = 0;
    std::int64_t base_steady_ns_ = 0;
};


}  // namespace stint

#if defined(STINT_HEADER_ONLY)
#include "stint/analysis/impl/event_list.ipp"
#endif
