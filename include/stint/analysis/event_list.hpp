#pragma once
// The merged, ordered, tree-linked list of a session's events (design §1 step 5). Every analysis and
// exporter reads this; none touches the recording buffers.

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "stint/analysis/event.hpp"

namespace stint {

namespace detail {
class event_list_builder;

/// Owns copies of runtime names; blocks never move, so string_views into them stay valid, and the
/// arena is shared by copies of an event_list.
class string_arena {
public:
    std::string_view store(std::string_view text) {
        if (text.empty()) return {};
        if (text.size() > block_size_ / 4) {
            big_.push_back(std::make_unique<char[]>(text.size()));
            std::copy(text.begin(), text.end(), big_.back().get());
            return {big_.back().get(), text.size()};
        }
        if (blocks_.empty() || used_ + text.size() > block_size_) {
            blocks_.push_back(std::make_unique<char[]>(block_size_));
            used_ = 0;
        }
        char* at = blocks_.back().get() + used_;
        std::copy(text.begin(), text.end(), at);
        used_ += text.size();
        return {at, text.size()};
    }

private:
    static constexpr std::size_t block_size_ = 64 * 1024;
    std::vector<std::unique_ptr<char[]>> blocks_;
    std::vector<std::unique_ptr<char[]>> big_;
    std::size_t used_ = 0;
};
}  // namespace detail

/// The events of one session (or one schedule window), ordered by start time.
///
///     for (const stint::event& e : prof.events())
///         fmt::print("{} {:.3f}us\n", e.name, e.cpu_time_total());
class event_list {
public:
    using value_type = event;
    using const_iterator = std::vector<event>::const_iterator;

    /// Iterates the direct children of one event, in start order.
    class child_range {
    public:
        class iterator {
        public:
            using iterator_category = std::forward_iterator_tag;
            using value_type = event;
            using difference_type = std::ptrdiff_t;
            using pointer = const event*;
            using reference = const event&;
            iterator() = default;
            iterator(const std::vector<event>* events, event_index at) : events_(events), at_(at) {}
            reference operator*() const { return (*events_)[at_]; }
            pointer operator->() const { return &(*events_)[at_]; }
            iterator& operator++() {
                at_ = (*events_)[at_].next_sibling;
                return *this;
            }
            iterator operator++(int) {
                iterator old = *this;
                ++*this;
                return old;
            }
            bool operator==(const iterator& other) const { return at_ == other.at_; }

        private:
            const std::vector<event>* events_ = nullptr;
            event_index at_ = no_index;
        };
        child_range(const std::vector<event>* events, event_index first) : events_(events), first_(first) {}
        [[nodiscard]] iterator begin() const { return {events_, first_}; }
        [[nodiscard]] iterator end() const { return {events_, no_index}; }
        [[nodiscard]] bool empty() const { return first_ == no_index; }
        [[nodiscard]] std::size_t size() const { return static_cast<std::size_t>(std::distance(begin(), end())); }

    private:
        const std::vector<event>* events_;
        event_index first_;
    };

    event_list() = default;

    [[nodiscard]] std::size_t size() const noexcept { return events_.size(); }
    [[nodiscard]] bool empty() const noexcept { return events_.empty(); }
    [[nodiscard]] const event& operator[](std::size_t i) const { return events_[i]; }
    [[nodiscard]] const_iterator begin() const noexcept { return events_.begin(); }
    [[nodiscard]] const_iterator end() const noexcept { return events_.end(); }
    [[nodiscard]] std::span<const event> all() const noexcept { return events_; }

    /// Index of an event of this list (for parent/child links).
    [[nodiscard]] event_index index_of(const event& e) const noexcept {
        return static_cast<event_index>(&e - events_.data());
    }
    [[nodiscard]] const event* parent(const event& e) const noexcept {
        return e.parent == no_index ? nullptr : &events_[e.parent];
    }
    [[nodiscard]] child_range children(const event& e) const noexcept { return {&events_, e.first_child}; }

    [[nodiscard]] std::span<const thread_info> threads() const noexcept { return threads_; }
    [[nodiscard]] const thread_info& thread_of(const event& e) const { return threads_[e.thread]; }
    /// Captured inputs of an op, or nullptr when none were captured.
    [[nodiscard]] const event_args* args(const event& e) const noexcept {
        return e.args == no_index ? nullptr : &args_[e.args];
    }
    /// Stack of an event, innermost frame first (as torch's FunctionEvent.stack); empty if none.
    [[nodiscard]] std::span<const std::string> stack(const event& e) const noexcept {
        if (e.stack == no_index) return {};
        return stacks_[e.stack];
    }

    /// Records kept and records lost to the buffer budget, summed over threads.
    [[nodiscard]] std::uint64_t recorded() const noexcept { return recorded_; }
    [[nodiscard]] std::uint64_t dropped() const noexcept { return dropped_; }
    /// Records of earlier sessions that reached their buffers after those sessions were drained (a
    /// thread preempted between a scope's end and its append), found while this one ran: not in any
    /// event list, counted here instead.
    [[nodiscard]] std::uint64_t late() const noexcept { return late_; }
    /// Wall-clock time (ns since the Unix epoch) that event time 0 corresponds to.
    [[nodiscard]] std::int64_t base_time_ns() const noexcept { return base_time_ns_; }

    /// Appends another list (a later window) after this one, keeping both trees intact.
    void append(const event_list& later);

private:
    friend class detail::event_list_builder;
    std::vector<event> events_;
    std::vector<thread_info> threads_;
    std::vector<event_args> args_;
    std::vector<std::vector<std::string>> stacks_;
    std::vector<std::shared_ptr<detail::string_arena>> arenas_;
    std::uint64_t recorded_ = 0;
    std::uint64_t dropped_ = 0;
    std::uint64_t late_ = 0;
    std::int64_t base_time_ns_ = 0;
};

}  // namespace stint
