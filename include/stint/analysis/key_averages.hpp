#pragma once
// torch.profiler's key_averages(): events grouped by name (and optionally input shapes and stack
// frames), with totals, self times, memory, call counts and flops per group (torch's FunctionEventAvg).

#include <array>        // std::array
#include <cstddef>      // std::size_t
#include <cstdint>      // std::int64_t, std::uint32_t, std::uintptr_t
#include <iosfwd>       // std::ostream
#include <span>         // std::span
#include <string>       // std::string
#include <string_view>  // std::string_view
#include <utility>      // std::move
#include <vector>       // std::vector

#include <fmt/core.h>  // fmt::formatter, fmt::formatter<std::string_view>

#include "stint/analysis/event.hpp"
#include "stint/analysis/event_list.hpp"
#include "stint/analysis/table.hpp"
#include "stint/common/device.hpp"
#include "stint/common/event_kind.hpp"
#include "stint/detail/separate_compilation.hpp"

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

/// The groups of `key_averages()`, in the order each group's first event started.
///
///     const stint::averaged_event_list avg = prof.key_averages();
///     std::cout << avg.table({.sort_by = "self_cpu_time_total", .row_limit = 10});
class averaged_event_list {
public:
    using value_type = averaged_event;
    using const_iterator = std::vector<averaged_event>::const_iterator;

    averaged_event_list() = default;
    /// `memory` picks the table's memory columns; key_averages() sets them when the list had memory events.
    explicit averaged_event_list(std::vector<averaged_event> events, detail::memory_columns memory = {})
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
    [[nodiscard]] STINT_DECL averaged_event total_average() const;

    /// torch's summary table of these groups; "" when there are none. Throws std::invalid_argument
    /// for an unknown sort key or time unit, or a maximum width under 4.
    ///
    ///     std::cout << prof.key_averages().table({.sort_by = "cpu_time_total", .time_unit = "ms"});
    [[nodiscard]] STINT_DECL std::string table(const table_options& options = {}) const;

private:
    std::vector<averaged_event> events_;
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
    STINT_DECL std::size_t operator()(const group_key& k) const noexcept;
};

struct group_key_equal {
    STINT_DECL bool operator()(const group_key& a, const group_key& b) const noexcept;
};

// Direct-mapped: recorded name pointer, kind and device type -> group. A slot is only trusted on an
// exact pointer, size, kind and device match, and equal pointers with equal sizes are equal names.
struct name_cache {
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

// torch's FunctionEventAvg.add: the descriptive fields come from the event that opens the group.
STINT_DECL void open_group(averaged_event& a, std::string_view name, const event& e, const group_key& key);

// torch's FunctionEventAvg.add: the times of torch's FunctionEvent, added in the list's order.
STINT_DECL void add_to_group(averaged_event& a, const event_list& events, const event& e, display_names& names);

// An async span (stint::async_scope) in its row: its time is the span's, from begin to end, and none of
// it is self CPU time (no thread ran it; the threads' own scopes keep theirs).
STINT_DECL void add_async_span(averaged_event& a, const event_list& events, const async_span& span);

// Calls on_event(e) for each event that key_averages counts as itself, and on_span(begin point, span)
// for each async span that ended: flow points and counters' samples are no rows, an async span is one
// row at its begin.
template <class OnEvent, class OnSpan>
void for_each_averaged(const event_list& events, display_names& names, OnEvent&& on_event, OnSpan&& on_span) {
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

STINT_DECL void finish_group(averaged_event& a);

[[nodiscard]] STINT_DECL table_row to_table_row(const averaged_event& a);

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
[[nodiscard]] STINT_DECL averaged_event_list key_averages(const event_list& events, key_averages_options options = {});

/// Every event summed into one "Total" (torch's `EventList.total_average()` over `prof.events()`),
/// after the same merging of single-child recursion as `key_averages()`, and without the [memory] events
/// inside scopes (their bytes are in the scopes' memory already).
///
///     const stint::averaged_event all = stint::total_average(prof.events());
[[nodiscard]] STINT_DECL averaged_event total_average(const event_list& events);

/// Writes `list.table()` (default options).
///
///     std::cout << prof.key_averages();
STINT_DECL std::ostream& operator<<(std::ostream& out, const averaged_event_list& list);

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

#if defined(STINT_HEADER_ONLY)
#include "stint/analysis/impl/key_averages.ipp"
#endif
