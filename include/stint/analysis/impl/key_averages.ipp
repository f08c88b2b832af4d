#pragma once
// The bodies of analysis/key_averages.hpp: grouping events as torch's key_averages() does, and the
// groups' totals and table.

#include "stint/analysis/key_averages.hpp"

#include <algorithm>      // std::max
#include <functional>     // std::hash
#include <optional>       // std::optional
#include <ostream>        // std::ostream
#include <stdexcept>      // std::invalid_argument
#include <unordered_map>  // std::unordered_map

namespace stint {
namespace detail {

std::size_t group_key_hash::operator()(const group_key& k) const noexcept {
    std::size_t h = std::hash<std::string_view>{}(k.name);
    mix(h, k.user_annotation ? 1 : 0);
    mix(h, k.async ? 1 : 0);
    mix(h, static_cast<std::size_t>(k.device));
    if (k.shapes != nullptr) {
        for (const auto& dims : *k.shapes) {
            mix(h, dims.size());
            for (std::int64_t d : dims) mix(h, static_cast<std::size_t>(d));
        }
    }
    for (const std::string& frame : k.stack) mix(h, std::hash<std::string_view>{}(frame));
    return h;
}

bool group_key_equal::operator()(const group_key& a, const group_key& b) const noexcept {
    if (a.name != b.name || a.user_annotation != b.user_annotation || a.async != b.async || a.device != b.device) {
        return false;
    }
    if ((a.shapes == nullptr) != (b.shapes == nullptr)) return false;
    if (a.shapes != nullptr && a.shapes != b.shapes && *a.shapes != *b.shapes) return false;
    return a.stack == b.stack;
}

void open_group(averaged_event& a, std::string_view name, const event& e, const group_key& key) {
    a.key = name;
    a.is_user_annotation = (e.kind == event_kind::user_annotation || e.kind == event_kind::module);
    a.has_cpu_parent = e.parent != no_index;
    a.device_type = e.device.type;
    if (key.shapes != nullptr) a.input_shapes = *key.shapes;
    a.stack.assign(key.stack.begin(), key.stack.end());
}

void add_to_group(averaged_event& a, const event_list& events, const event& e, display_names& names) {
    ++a.count;
    const torch_times times = torch_event_times(events, e, names);
    a.cpu_time_total += times.cpu_time_total;
    a.self_cpu_time_total += times.self_cpu_time_total;
    a.device_time_total += times.device_time_total;
    a.self_device_time_total += times.self_device_time_total;
    // Only with memory events: the lookup cost 1 M events without any 8.6 -> 9.5 ms (measured).
    if (events.has_memory_events()) {
        const memory_usage memory = torch_memory_usage(events, e, names);
        a.cpu_memory_usage += memory.cpu;
        a.self_cpu_memory_usage += memory.self_cpu;
        a.device_memory_usage += memory.device;
        a.self_device_memory_usage += memory.self_device;
    }
    if (e.flops > 0) a.flops += e.flops;
}

void add_async_span(averaged_event& a, const event_list& events, const async_span& span) {
    ++a.count;
    a.cpu_time_total += static_cast<double>(events[span.end].start_ns - events[span.begin].start_ns) / 1e3;
}

void finish_group(averaged_event& a) {
    a.cpu_time = a.count == 0 ? 0.0 : a.cpu_time_total / static_cast<double>(a.count);
    a.device_time = a.count == 0 ? 0.0 : a.device_time_total / static_cast<double>(a.count);
}

table_row to_table_row(const averaged_event& a) {
    table_row r;
    r.name = a.key;
    r.self_cpu_time_total = a.self_cpu_time_total;
    r.cpu_time_total = a.cpu_time_total;
    r.cpu_time = a.cpu_time;
    r.self_device_time_total = a.self_device_time_total;
    r.device_time_total = a.device_time_total;
    r.device_time = a.device_time;
    r.device = a.device_type;
    r.is_user_annotation = a.is_user_annotation;
    r.count = a.count;
    r.input_shapes = &a.input_shapes;
    r.frames = a.stack;
    for (const std::string& frame : a.stack) r.widest_frame = std::max(r.widest_frame, text_width(frame));
    r.flops = a.flops;
    r.has_cpu_parent = a.has_cpu_parent;
    r.cpu_memory_usage = a.cpu_memory_usage;
    r.self_cpu_memory_usage = a.self_cpu_memory_usage;
    r.device_memory_usage = a.device_memory_usage;
    r.self_device_memory_usage = a.self_device_memory_usage;
    return r;
}

}  // namespace detail

averaged_event_list key_averages(const event_list& events, key_averages_options options) {
    if (options.group_by_stack_n < 0) {
        throw std::invalid_argument(fmt::format(
            "stint: key_averages(): group_by_stack_n must be 0 (no stack grouping) or more, got {}",
            options.group_by_stack_n));
    }
    const auto stack_n = static_cast<std::size_t>(options.group_by_stack_n);

    std::vector<averaged_event> groups;
    using group_index =
        std::unordered_map<detail::group_key, std::uint32_t, detail::group_key_hash, detail::group_key_equal>;
    group_index index;
    index.reserve(256);
    detail::display_names names;
    // Names are mostly a site's static string, so the same pointer recurs; when only the name and kind
    // decide the group, a pointer hit skips hashing the text (1 M events: 55 ms -> 15 ms, measured).
    const bool cache_usable = !options.group_by_input_shape && stack_n == 0;
    detail::name_cache cache;

    const auto on_span = [&](const event& begin, const async_span& span) {
        detail::group_key key;
        key.name = names(begin.name);
        key.user_annotation = true;
        key.async = true;
        const auto [at, opened] = index.try_emplace(key, static_cast<std::uint32_t>(groups.size()));
        if (opened) {
            detail::open_group(groups.emplace_back(), key.name, begin, key);
            groups.back().has_cpu_parent = false;  // a span of its own, whatever scope it began in
        }
        detail::add_async_span(groups[at->second], events, span);
    };
    const auto on_event = [&](const event& e) {
        const bool user_annotation = e.kind == event_kind::user_annotation || e.kind == event_kind::module;
        const device_type device = e.device.type;
        std::uint32_t group = 0;
        detail::name_cache::slot& hit = cache.at(e.name, user_annotation);
        if (cache_usable && hit.used && hit.name == e.name.data() && hit.size == e.name.size() &&
            hit.user_annotation == user_annotation && hit.device == device) {
            group = hit.group;
        } else {
            detail::group_key key;
            key.name = names(e.name);
            key.user_annotation = user_annotation;
            key.device = device;
            if (options.group_by_input_shape) {
                const event_args* args = events.args(e);
                if (args != nullptr && !args->input_dims.empty()) key.shapes = &args->input_dims;
            }
            if (stack_n > 0) {
                key.stack = events.stack(e).first(stack_n);
            }
            const auto [at, opened] = index.try_emplace(key, static_cast<std::uint32_t>(groups.size()));
            if (opened) detail::open_group(groups.emplace_back(), key.name, e, key);
            group = at->second;
            hit = {e.name.data(), e.name.size(), user_annotation, device, true, group};
        }
        detail::add_to_group(groups[group], events, e, names);
    };
    detail::for_each_averaged(events, names, on_event, on_span);
    for (averaged_event& a : groups) detail::finish_group(a);
    return averaged_event_list(std::move(groups), detail::memory_columns_of(events));
}

averaged_event total_average(const event_list& events) {
    averaged_event total;
    detail::display_names names;
    std::optional<event> last;
    detail::for_each_averaged(
        events, names,
        [&](const event& e) {
            detail::add_to_group(total, events, e, names);
            last = e;
        },
        [&](const event&, const async_span& span) { detail::add_async_span(total, events, span); });
    if (last) {
        total.is_user_annotation = (last->kind == event_kind::user_annotation || last->kind == event_kind::module);
        total.has_cpu_parent = last->parent != no_index;
        total.device_type = last->device.type;
        if (const event_args* args = events.args(*last)) total.input_shapes = args->input_dims;
        const call_stack frames = events.stack(*last);
        total.stack.assign(frames.begin(), frames.end());
    }
    total.key = "Total";
    detail::finish_group(total);
    return total;
}

averaged_event averaged_event_list::total_average() const {
    averaged_event total;
    for (const averaged_event& a : events_) {
        total.count += a.count;
        total.cpu_time_total += a.cpu_time_total;
        total.self_cpu_time_total += a.self_cpu_time_total;
        total.device_time_total += a.device_time_total;
        total.self_device_time_total += a.self_device_time_total;
        total.cpu_memory_usage += a.cpu_memory_usage;
        total.self_cpu_memory_usage += a.self_cpu_memory_usage;
        total.device_memory_usage += a.device_memory_usage;
        total.self_device_memory_usage += a.self_device_memory_usage;
        total.flops += a.flops;
        total.input_shapes = a.input_shapes;
        total.stack = a.stack;
        total.is_user_annotation = a.is_user_annotation;
        total.has_cpu_parent = a.has_cpu_parent;
        total.device_type = a.device_type;
    }
    total.key = "Total";
    detail::finish_group(total);
    return total;
}

std::string averaged_event_list::table(const table_options& options) const {
    std::vector<detail::table_row> rows;
    rows.reserve(events_.size());
    for (const averaged_event& a : events_) rows.push_back(detail::to_table_row(a));
    return detail::build_table(std::move(rows), options, memory_);
}

std::ostream& operator<<(std::ostream& out, const averaged_event_list& list) { return out << list.table(); }

}  // namespace stint
