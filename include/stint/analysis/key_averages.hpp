#pragma once
// torch.profiler's key_averages(): events grouped by name (and optionally input shapes and stack
// frames), with totals, self times, memory, call counts and flops per group (torch's FunctionEventAvg).

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <ostream>
#include <stdexcept>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "stint/analysis/event.hpp"
#include "stint/analysis/event_list.hpp"
#include "stint/analysis/table.hpp"
#include "stint/detail/deferred.hpp"
#include "stint/common/device.hpp"

namespace stint {

/// What `key_averages()` groups by besides the event name.
///
///     auto by_shape = stint::key_averages(prof.events(), {.group_by_input_shape = true});
///     auto by_site  = stint::key_averages(prof.events(), {.group_by_stack_n = 5});
struct key_averages_options {
    bool group_by_input_shape = false;  ///< also split by the inputs' dims ("Input Dims")
    int group_by_stack_n = 0;           ///< also split by the innermost n stack frames; 0: not
    bool group_by_overload_name = false;  ///< accepted for torch parity; stint ops have no overload
                                          ///< names yet, so this groups by name alone
};

/// One group of events (torch's FunctionEventAvg). Times are microseconds, as in torch.
///
///     for (const stint::averaged_event& a : prof.key_averages())
///         fmt::print("{} x{} {:.3f}us\n", a.key, a.count, a.cpu_time);
struct averaged_event {
    std::string key;                 ///< the event name, demangled; every "ProfilerStep#N" shows as "ProfilerStep*"
    std::int64_t count = 0;          ///< events in the group
    double cpu_time_total = 0;       ///< sum of the events' durations (a recursive op counts each level)
    double self_cpu_time_total = 0;  ///< sum of the events' self times
    double cpu_time = 0;             ///< cpu_time_total / count (0 when count is 0)
    /// Where the events ran: a kernel's row never merges with a CPU op's row of the same name.
    stint::device_type device_type = stint::device_type::cpu;
    /// Sum of the events' device times: a device event's duration, a CPU event's launched device work
    /// with its descendants' (event::device_time_total).
    double device_time_total = 0;
    /// Sum of the events' self device times: a CPU event's without its children's.
    double self_device_time_total = 0;
    double device_time = 0;          ///< device_time_total / count (0 when count is 0)
    /// Bytes the events allocated minus bytes they freed on the CPU (profile_memory), with and without
    /// those under their children, summed over the group (event_list::memory_usage_of). A "[memory]" row
    /// (allocations and frees outside every scope) holds their bytes; a free of a block allocated inside
    /// an op makes it negative.
    std::int64_t cpu_memory_usage = 0;
    std::int64_t self_cpu_memory_usage = 0;
    /// The same for device memory (CUDA and other accelerators).
    std::int64_t device_memory_usage = 0;
    std::int64_t self_device_memory_usage = 0;
    /// The first event's input dims when grouped by input shape; empty otherwise.
    std::vector<std::vector<std::int64_t>> input_shapes;
    /// The first event's innermost `group_by_stack_n` frames, innermost first; empty when not grouped.
    std::vector<std::string> stack;
    /// Summed flop estimates of the events that have one; 0 when none has (torch's convention, and the
    /// table prints "--" for it).
    std::int64_t flops = 0;
    bool is_user_annotation = false;  ///< a scope (STINT_SCOPE, ProfilerStep) rather than an op
    /// Whether the group's first event ran inside another event; torch decides
    /// top_level_events_only by this one event.
    bool has_cpu_parent = false;

    /// torch's legacy names of the device times.
    [[nodiscard]] double cuda_time_total() const noexcept { return device_time_total; }
    [[nodiscard]] double self_cuda_time_total() const noexcept { return self_device_time_total; }
    [[nodiscard]] double cuda_time() const noexcept { return device_time; }
    /// torch's legacy names of the device memory.
    [[nodiscard]] std::int64_t cuda_memory_usage() const noexcept { return device_memory_usage; }
    [[nodiscard]] std::int64_t self_cuda_memory_usage() const noexcept { return self_device_memory_usage; }
};

template <class = void>
class basic_averaged_event_list;
/// basic_averaged_event_list's one form (a template only so that a file that does not use it does not compile it).
using averaged_event_list = basic_averaged_event_list<>;

/// The groups of `key_averages()`, in the order each group's first event started.
///
///     const stint::averaged_event_list avg = prof.key_averages();
///     std::cout << avg.table({.sort_by = "self_cpu_time_total", .row_limit = 10});
template <class Unused>
class basic_averaged_event_list {
public:
    using value_type = averaged_event;
    using const_iterator = std::vector<averaged_event>::const_iterator;

    basic_averaged_event_list() = default;
    /// `memory` picks the table's memory columns; key_averages() sets them when the list had memory events.
    explicit basic_averaged_event_list(detail::deferred_t<std::vector<averaged_event>, Unused> events,
                                       detail::memory_columns memory = {})
        : events_(std::move(events)), memory_(memory) {}

    [[nodiscard]] std::size_t size() const noexcept { return events_.size(); }
    [[nodiscard]] bool empty() const noexcept { return events_.empty(); }
    [[nodiscard]] const averaged_event& operator[](std::size_t i) const { return events_[i]; }
    [[nodiscard]] const_iterator begin() const noexcept { return events_.begin(); }
    [[nodiscard]] const_iterator end() const noexcept { return events_.end(); }

    /// All groups summed into one, keyed "Total" (torch's EventList.total_average). Like torch, the
    /// descriptive fields (shapes, stack, flags) are those of the last group.
    ///
    ///     double all_self_us = prof.key_averages().total_average().self_cpu_time_total;
    [[nodiscard]] averaged_event total_average() const;

    /// torch's summary table of these groups; "" when there are none. Throws std::invalid_argument
    /// for an unknown sort key or time unit, or a maximum width under 4.
    ///
    ///     std::cout << prof.key_averages().table({.sort_by = "cpu_time_total", .time_unit = "ms"});
    [[nodiscard]] std::string table(const table_options& options = {}) const;

private:
    detail::deferred_t<std::vector<averaged_event>, Unused> events_;
    detail::memory_columns memory_;
};

namespace detail {

// A group's identity, borrowed from the events: no string is built per event.
struct group_key {
    std::string_view name;
    bool user_annotation = false;
    bool async = false;  // an async span's row: apart from a scope of the same name
    device_type device = device_type::cpu;
    const std::vector<std::vector<std::int64_t>>* shapes = nullptr;  // nullptr: not grouped, or no dims
    call_stack stack;                                                // empty when not grouped by stack
};

struct group_key_hash {
    static void mix(std::size_t& h, std::size_t v) noexcept { h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2); }
    std::size_t operator()(const group_key& k) const noexcept {
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
};

struct group_key_equal {
    bool operator()(const group_key& a, const group_key& b) const noexcept {
        if (a.name != b.name || a.user_annotation != b.user_annotation || a.async != b.async || a.device != b.device) {
            return false;
        }
        if ((a.shapes == nullptr) != (b.shapes == nullptr)) return false;
        if (a.shapes != nullptr && a.shapes != b.shapes && *a.shapes != *b.shapes) return false;
        return a.stack == b.stack;
    }
};

template <class = void>
struct basic_name_cache;
/// basic_name_cache's one form (a template only so that a file that does not use it does not compile it).
using name_cache = basic_name_cache<>;

// Direct-mapped: recorded name pointer, kind and device type -> group. A slot is only trusted on an
// exact pointer, size, kind and device match, and equal pointers with equal sizes are equal names.
template <class>
struct basic_name_cache {
    struct slot {
        const char* name = nullptr;
        std::size_t size = 0;
        bool user_annotation = false;
        device_type device = device_type::cpu;
        bool used = false;  // an empty name may have a null pointer, like an unused slot
        std::uint32_t group = 0;
    };
    std::array<slot, 64> slots{};
    slot& at(std::string_view name, bool user_annotation) noexcept {
        const auto bits = reinterpret_cast<std::uintptr_t>(name.data());
        return slots[((bits >> 3) ^ (bits >> 9) ^ (user_annotation ? 1U : 0U)) & (slots.size() - 1)];
    }
};

// The group functions take their events and groups as deferred_t<T, Unused> (exactly T, Unused left at
// void; stint/detail/deferred.hpp): their bodies are checked only when key_averages() is used.

// torch's FunctionEventAvg.add: the descriptive fields come from the event that opens the group.
template <class Unused = void>
void open_group(deferred_t<averaged_event, Unused>& a, std::string_view name, const event& e, const group_key& key) {
    a.key = name;
    a.is_user_annotation = (e.kind == event_kind::user_annotation || e.kind == event_kind::module);
    a.has_cpu_parent = e.parent != no_index;
    a.device_type = e.device.type;
    if (key.shapes != nullptr) a.input_shapes = *key.shapes;
    a.stack.assign(key.stack.begin(), key.stack.end());
}

// torch's FunctionEventAvg.add: the times of torch's FunctionEvent, added in the list's order.
template <class Unused = void>
void add_to_group(deferred_t<averaged_event, Unused>& a, deferred_t<const event_list, Unused>& events, const event& e,
                  deferred_t<display_names, Unused>& names) {
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

// An async span (stint::async_scope) in its row: its time is the span's, from begin to end, and none of
// it is self CPU time (no thread ran it; the threads' own scopes keep theirs).
template <class Unused = void>
void add_async_span(deferred_t<averaged_event, Unused>& a, deferred_t<const event_list, Unused>& events,
                    const async_span& span) {
    ++a.count;
    a.cpu_time_total += static_cast<double>(events[span.end].start_ns - events[span.begin].start_ns) / 1e3;
}

// Calls on_event(e) for each event that key_averages counts as itself, and on_span(begin point, span)
// for each async span that ended: flow points and counters' samples are no rows, an async span is one
// row at its begin.
// (`events` and `names` are deferred through OnEvent, which the callbacks give.)
template <class OnEvent, class OnSpan>
void for_each_averaged(deferred_t<const event_list, OnEvent>& events, deferred_t<display_names, OnEvent>& names,
                       OnEvent&& on_event, OnSpan&& on_span) {
    std::size_t span = 0;
    const std::span<const async_span> spans = events.async_spans();
    for (const event& e : events) {
        if (is_point_kind(e.kind)) {
            if (e.kind != event_kind::async_begin) continue;
            // async_spans() are in begin order, as the list is.
            while (span < spans.size() && spans[span].begin < events.index_of(e)) ++span;
            if (span < spans.size() && spans[span].begin == events.index_of(e) && spans[span].end != no_index) {
                on_span(e, spans[span]);
            }
            continue;
        }
        if (e.kind == event_kind::counter || is_nested_memory(e) || is_folded_recursion(events, e, names)) continue;
        on_event(e);
    }
}

template <class Unused = void>
void finish_group(deferred_t<averaged_event, Unused>& a) {
    a.cpu_time = a.count == 0 ? 0.0 : a.cpu_time_total / static_cast<double>(a.count);
    a.device_time = a.count == 0 ? 0.0 : a.device_time_total / static_cast<double>(a.count);
}

template <class Unused = void>
[[nodiscard]] table_row to_table_row(deferred_t<const averaged_event, Unused>& a) {
    deferred_t<table_row, Unused> r;
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

/// Groups events as torch's `key_averages()` does: by name, kind (scope or op) and device type (a
/// kernel's row is apart from a CPU op's of the same name), plus input dims
/// and the innermost stack frames when asked. Names are demangled ("_Z3foov" shows as "foo()") and
/// every "ProfilerStep#N" joins one "ProfilerStep*" group. An event that is the only child of a
/// same-named parent is merged into that parent, as torch's tree drops it; any other recursion counts
/// each level in cpu_time_total, as torch does. Times are torch's to the last bit: each timestamp in
/// µs as a double, durations and sums taken in torch's order. With profile_memory, a [memory] event
/// inside a scope is no group (it counts in the memory of the events around it); those outside every
/// scope form a "[memory]" group and out-of-memory events an "[OutOfMemory]" one, as in torch. Flow
/// points are no group; each async span (stint::async_scope) that ended joins a row of its own name,
/// apart from any scope's, with its begin-to-end time as CPU total and no self CPU time.
///
///     auto avg = stint::key_averages(prof.events(), {.group_by_input_shape = true});
///     std::cout << avg.table({.sort_by = "cpu_time_total", .row_limit = 10});
template <class Unused = void>
[[nodiscard]] averaged_event_list key_averages(detail::deferred_t<const event_list, Unused>& events,
                                               key_averages_options options = {}) {
    if (options.group_by_stack_n < 0) {
        throw std::invalid_argument(fmt::format(
            "stint: key_averages(): group_by_stack_n must be 0 (no stack grouping) or more, got {}",
            options.group_by_stack_n));
    }
    const auto stack_n = static_cast<std::size_t>(options.group_by_stack_n);

    detail::deferred_t<std::vector<averaged_event>, Unused> groups;
    using group_index =
        std::unordered_map<detail::group_key, std::uint32_t, detail::group_key_hash, detail::group_key_equal>;
    detail::deferred_t<group_index, Unused> index;
    index.reserve(256);
    detail::deferred_t<detail::display_names, Unused> names;
    // Names are mostly a site's static string, so the same pointer recurs; when only the name and kind
    // decide the group, a pointer hit skips hashing the text (1 M events: 55 ms -> 15 ms, measured).
    const bool cache_usable = !options.group_by_input_shape && stack_n == 0;
    detail::deferred_t<detail::name_cache, Unused> cache;

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

/// Every event summed into one "Total" (torch's `EventList.total_average()` over `prof.events()`),
/// after the same merging of single-child recursion as `key_averages()`, and without the [memory] events
/// inside scopes (their bytes are in the scopes' memory already).
///
///     const stint::averaged_event all = stint::total_average(prof.events());
template <class Unused = void>
[[nodiscard]] averaged_event total_average(detail::deferred_t<const event_list, Unused>& events) {
    detail::deferred_t<averaged_event, Unused> total;
    detail::deferred_t<detail::display_names, Unused> names;
    detail::deferred_t<std::optional<event>, Unused> last;
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

template <class T>
averaged_event basic_averaged_event_list<T>::total_average() const {
    detail::deferred_t<averaged_event, T> total;
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

template <class T>
std::string basic_averaged_event_list<T>::table(const table_options& options) const {
    detail::deferred_t<std::vector<detail::table_row>, T> rows;
    rows.reserve(events_.size());
    for (const averaged_event& a : events_) rows.push_back(detail::to_table_row(a));
    return detail::build_table(std::move(rows), options, memory_);
}

/// Writes `list.table()` (default options).
///
///     std::cout << prof.key_averages();
template <class = void>
std::ostream& operator<<(std::ostream& out, const averaged_event_list& list) { return out << list.table(); }

}  // namespace stint

/// `fmt::print("{}", prof.key_averages())` prints `table()` with default options; string format specs
/// (width, alignment) apply to the whole text.
template <>
struct fmt::formatter<stint::averaged_event_list> : fmt::formatter<std::string_view> {
    template <typename FormatContext>
    auto format(const stint::averaged_event_list& list, FormatContext& ctx) const {
        const std::string text = list.table();
        return fmt::formatter<std::string_view>::format(text, ctx);
    }
};
