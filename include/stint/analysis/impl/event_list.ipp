#pragma once
// The bodies of event_list (analysis/event_list.hpp): its string arena, stack tree, lookups, and
// appending and retiming a list.

#include "stint/analysis/event_list.hpp"

#include <algorithm>  // std::copy, std::find_if, std::lower_bound, std::none_of
#include <cmath>      // std::llround

namespace stint {
namespace detail {

std::string_view string_arena::store(std::string_view text) {
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

event_index stack_tree::append(const stack_tree& later) {
    const auto node_offset = static_cast<event_index>(nodes.size());
    const auto frame_offset = static_cast<std::uint32_t>(frames.size());
    for (node n : later.nodes) {
        n.frame += frame_offset;
        if (n.parent != no_index) n.parent += node_offset;
        nodes.push_back(n);
    }
    frames.insert(frames.end(), later.frames.begin(), later.frames.end());
    return node_offset;
}

}  // namespace detail

std::uint64_t event_list::point_id(const event& e) const noexcept {
    if (!is_point_kind(e.kind)) return 0;
    const event_index i = index_of(e);
    const auto at = std::lower_bound(points_.begin(), points_.end(), i,
                                     [](const point_entry& p, event_index v) { return p.event < v; });
    return at != points_.end() && at->event == i ? at->id : 0;
}

std::optional<counter_value> event_list::counter_of(const event& e) const noexcept {
    if (e.kind != event_kind::counter) return std::nullopt;
    const event_index i = index_of(e);
    const auto at = std::lower_bound(counters_.begin(), counters_.end(), i,
                                     [](const counter_entry& c, event_index v) { return c.event < v; });
    if (at == counters_.end() || at->event != i) return std::nullopt;
    return at->value;
}

void event_list::append(const event_list& later) {
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
    std::vector<std::uint32_t> thread_map(later.threads_.size());
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
    store_.append(later.store_, thread_map, shift, args_offset, stacks_offset, device_offset, memory_offset);
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
        std::vector<device_properties> devices = std::move(device_.devices);
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

void event_list::retime(std::int64_t offset_ns, double drift, std::int64_t reference_ns, std::int64_t base_time_ns) {
    const auto stretch = [drift](std::int64_t d) {
        return d + static_cast<std::int64_t>(std::llround(drift * static_cast<double>(d)));
    };
    const auto at = [&](std::int64_t t) { return reference_ns + offset_ns + stretch(t - reference_ns); };
    const auto span = stretch;
    for (event_index i = 0; i < store_.size(); ++i) {
        store_.set_times(i, at(store_.start(i)), at(store_.end(i)));
        store_.set_self(i, span(store_.self(i)));
        if (store_.row(i).extra == no_index) continue;
        detail::event_extra& x = store_.extra_to_write(i);
        x.device_ns = span(x.device_ns);
        x.self_device_ns = span(x.self_device_ns);
    }
    for (memory_peak& peak : memory_peaks_) peak.at_ns = at(peak.at_ns);
    base_time_ns_ = base_time_ns;
}

}  // namespace stint
