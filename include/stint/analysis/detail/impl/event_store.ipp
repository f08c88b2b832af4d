#pragma once
// The bodies of event_store (analysis/detail/event_store.hpp): adding, retiming and assembling events.

#include "stint/analysis/detail/event_store.hpp"

#include <algorithm>  // std::max, std::upper_bound
#include <limits>     // std::numeric_limits

namespace stint::detail {

event_index event_store::push(event_kind kind, std::uint32_t name, std::uint32_t thread, std::int64_t start_ns,
                              std::int64_t end_ns) {
    event_row r;
    r.kind = kind;
    r.name = name;
    r.thread = thread;
    r.added = static_cast<std::uint32_t>(rows_.size());
    rows_.push_back(r);
    const auto i = static_cast<event_index>(rows_.size() - 1);
    set_times(i, start_ns, std::max(end_ns, start_ns));
    return i;
}

void event_store::set_times(event_index i, std::int64_t start_ns, std::int64_t end_ns) {
    const std::int64_t self_ns = self(i);
    event_row& r = rows_[i];
    r.start_ns = start_ns;
    const std::int64_t span = end_ns - start_ns;
    if ((r.flags & event_row::long_times) == 0 && span >= 0 && span <= std::numeric_limits<std::uint32_t>::max()) {
        r.duration_ns = static_cast<std::uint32_t>(span);
        return;
    }
    make_long(i, self_ns).end_ns = end_ns;
}

void event_store::set_self(event_index i, std::int64_t self_ns) {
    event_row& r = rows_[i];
    if ((r.flags & event_row::long_times) == 0 && self_ns >= std::numeric_limits<std::int32_t>::min() &&
        self_ns <= std::numeric_limits<std::int32_t>::max()) {
        r.self_ns = static_cast<std::int32_t>(self_ns);
        return;
    }
    make_long(i, self_ns).self_ns = self_ns;
}

event_extra& event_store::extra_to_write(event_index i) {
    event_row& r = rows_[i];
    if (r.extra == no_index) {
        r.extra = static_cast<event_index>(extras_.size());
        extras_.emplace_back();
    }
    return extras_[r.extra];
}

void event_store::assemble_into(event& e, event_index i) const {
    const event_row& r = rows_[i];
    e = event{};  // the defaults are what an event without an extra has
    e.index = i;
    e.name = names_[r.name].text;
    e.location = names_[r.name].location;
    e.id = id(i);
    e.thread = r.thread;
    e.kind = r.kind;
    e.depth = r.depth;
    e.start_ns = r.start_ns;
    e.end_ns = r.start_ns + std::int64_t{r.duration_ns};
    e.self_ns = r.self_ns;
    e.parent = r.parent;
    e.first_child = r.first_child;
    e.next_sibling = r.next_sibling;
    if (r.extra == no_index) return;
    const event_extra& x = extras_[r.extra];
    if ((r.flags & event_row::long_times) != 0) {
        e.end_ns = x.end_ns;
        e.self_ns = x.self_ns;
    }
    e.args = x.args;
    e.stack = x.stack;
    e.flops = x.flops;
    e.device = x.device;
    e.stream = x.stream;
    e.linked = x.linked;
    e.first_linked = x.first_linked;
    e.next_linked = x.next_linked;
    e.device_info = x.device_info;
    e.device_ns = x.device_ns;
    e.self_device_ns = x.self_device_ns;
    e.memory_info = x.memory_info;
}

void event_store::permute(std::vector<event_index>& order) {
    for (event_index i = 0; i < order.size(); ++i) {
        if (order[i] == i) continue;
        const event_row first = rows_[i];
        event_index j = i;
        for (;;) {
            const event_index k = order[j];
            order[j] = j;
            if (k == i) {
                rows_[j] = first;
                break;
            }
            rows_[j] = rows_[k];
            j = k;
        }
    }
}

void event_store::append(const event_store& later, const std::vector<std::uint32_t>& thread_map,
                         std::int64_t shift_ns, event_index args_offset, event_index stacks_offset,
                         event_index device_offset, event_index memory_offset) {
    const auto offset = static_cast<event_index>(rows_.size());
    const auto relink = [offset](event_index i) { return i == no_index ? no_index : i + offset; };
    const auto name_offset = static_cast<std::uint32_t>(names_.size());
    const auto extra_offset = static_cast<event_index>(extras_.size());
    names_.insert(names_.end(), later.names_.begin(), later.names_.end());
    if (windows_.empty()) windows_.push_back({0, 0});
    if (later.windows_.empty()) {
        windows_.push_back({offset, 0});
    } else {
        for (const window& w : later.windows_) windows_.push_back({w.first + offset, w.first_id});
    }
    for (event_extra x : later.extras_) {
        x.end_ns += shift_ns;
        x.linked = relink(x.linked);
        x.first_linked = relink(x.first_linked);
        x.next_linked = relink(x.next_linked);
        if (x.args != no_index) x.args += args_offset;
        if (x.stack != no_index) x.stack += stacks_offset;
        if (x.device_info != no_index) x.device_info += device_offset;
        if (x.memory_info != no_index) x.memory_info += memory_offset;
        extras_.push_back(x);
    }
    for (event_row r : later.rows_) {
        r.start_ns += shift_ns;
        r.thread = thread_map[r.thread];
        r.parent = relink(r.parent);
        r.first_child = relink(r.first_child);
        r.next_sibling = relink(r.next_sibling);
        r.name += name_offset;
        if (r.extra != no_index) r.extra += extra_offset;
        rows_.push_back(r);
    }
}

const event_store::window& event_store::window_of(event_index i) const noexcept {
    if (windows_.size() == 1) return windows_[0];
    return *(std::upper_bound(windows_.begin(), windows_.end(), i,
                              [](event_index v, const window& x) { return v < x.first; }) - 1);
}

event_extra& event_store::make_long(event_index i, std::int64_t self_ns) {
    const std::int64_t end_ns = end(i);
    event_extra& x = extra_to_write(i);
    event_row& r = rows_[i];
    if ((r.flags & event_row::long_times) == 0) {
        x.end_ns = end_ns;
        x.self_ns = self_ns;
        r.flags |= event_row::long_times;
        r.duration_ns = 0;
        r.self_ns = 0;
    }
    return x;
}

}  // namespace stint::detail
