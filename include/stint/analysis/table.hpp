#pragma once
// torch.profiler's summary table (`_build_table` in torch/autograd/profiler_util.py): the same columns,
// widths, units, sort keys and footer, so a stint table reads like the one people already know.

#include <array>          // std::array
#include <cstddef>        // std::size_t
#include <cstdint>        // std::int64_t, std::uint8_t
#include <deque>          // std::deque
#include <span>           // std::span
#include <string>         // std::string
#include <string_view>    // std::string_view
#include <unordered_map>  // std::unordered_map
#include <utility>        // std::move
#include <vector>         // std::vector

#include "stint/analysis/event.hpp"
#include "stint/analysis/event_list.hpp"
#include "stint/common/device.hpp"
#include "stint/common/event_kind.hpp"
#include "stint/detail/separate_compilation.hpp"

namespace stint {

/// How `table()` lays out its rows; the defaults are torch's `table()` defaults. (Every member has a
/// default initializer so designated initializers stay clean under gcc's -Wmissing-field-initializers.)
///
///     auto text = stint::table(prof.events(), {.sort_by = "cpu_time_total", .row_limit = 10});
///     auto secs = prof.key_averages().table({.time_unit = "s"});
struct table_options {
    std::string sort_by{};            ///< empty: keep the list's order; else a key from `valid_sort_keys()`
    int row_limit = 100;              ///< rows to print; any negative value (torch: -1) prints all
    int max_src_column_width = 75;    ///< at least 4
    int max_name_column_width = 55;   ///< at least 4; longer names end in "..."
    int max_shapes_column_width = 80; ///< at least 4
    std::string header{};             ///< empty: no title line (torch: header=None)
    bool top_level_events_only = false;
    std::string time_unit{};          ///< empty: per cell (s/ms/us); or "s", "ms", "us" everywhere
};

namespace detail {

// The columns a sort key reads. torch maps cuda, xpu and privateuse1 in a key to device, so all three
// spellings sort by the device times and device memory. A key whose column is all zeros (memory keys on
// a run without profile_memory, device keys on a CPU-only run: torch's test_flops sorts by
// self_cuda_time_total) keeps the list's order, as the sort is stable.
enum class sort_field : std::uint8_t {
    cpu_time,
    cpu_time_total,
    self_cpu_time_total,
    device_time,
    device_time_total,
    self_device_time_total,
    cpu_memory_usage,
    self_cpu_memory_usage,
    device_memory_usage,
    self_device_memory_usage,
    count,
    flops,
};

struct sort_key_entry {
    std::string_view name;
    sort_field field;
};

// torch resolves sort_by with getattr after mapping cuda/xpu/privateuse1 to device; these are the
// attributes that exist on both FunctionEvent and FunctionEventAvg. The first thirteen are the list
// in torch's table() docstring, in its order.
inline constexpr std::array<sort_key_entry, 27> sort_keys{{
    {"cpu_time", sort_field::cpu_time},
    {"cuda_time", sort_field::device_time},
    {"xpu_time", sort_field::device_time},
    {"cpu_time_total", sort_field::cpu_time_total},
    {"cuda_time_total", sort_field::device_time_total},
    {"xpu_time_total", sort_field::device_time_total},
    {"cpu_memory_usage", sort_field::cpu_memory_usage},
    {"cuda_memory_usage", sort_field::device_memory_usage},
    {"xpu_memory_usage", sort_field::device_memory_usage},
    {"self_cpu_memory_usage", sort_field::self_cpu_memory_usage},
    {"self_cuda_memory_usage", sort_field::self_device_memory_usage},
    {"self_xpu_memory_usage", sort_field::self_device_memory_usage},
    {"count", sort_field::count},
    {"self_cpu_time_total", sort_field::self_cpu_time_total},
    {"self_cuda_time_total", sort_field::self_device_time_total},
    {"self_xpu_time_total", sort_field::self_device_time_total},
    {"device_time", sort_field::device_time},
    {"device_time_total", sort_field::device_time_total},
    {"self_device_time_total", sort_field::self_device_time_total},
    {"device_memory_usage", sort_field::device_memory_usage},
    {"self_device_memory_usage", sort_field::self_device_memory_usage},
    {"privateuse1_time", sort_field::device_time},
    {"privateuse1_time_total", sort_field::device_time_total},
    {"self_privateuse1_time_total", sort_field::self_device_time_total},
    {"privateuse1_memory_usage", sort_field::device_memory_usage},
    {"self_privateuse1_memory_usage", sort_field::self_device_memory_usage},
    {"flops", sort_field::flops},
}};

// torch shows every "ProfilerStep#N" as one name (its _rewrite_name with_wildcard); the trace keeps N.
inline constexpr std::string_view profiler_step_prefix = "ProfilerStep#";
inline constexpr std::string_view profiler_step_wildcard = "ProfilerStep*";

// Python measures and pads text in code points, so widths count UTF-8 lead bytes, not bytes.
[[nodiscard]] STINT_DECL std::size_t text_width(std::string_view text) noexcept;

// torch's _rewrite_name(name, with_wildcard=True), as its function events carry names into
// key_averages and the table: a name of more than one character goes through c10::demangle
// (abi::__cxa_demangle; the name itself when that fails, so "_Z3foov" -> "foo()" and "forward" stays),
// then "ProfilerStep#N" becomes "ProfilerStep*". The trace keeps the names as recorded, as Kineto's
// does. Each distinct name is rewritten once: names are mostly a site's static string, so a pointer
// cache answers most events without hashing the text.
class display_names {
public:
    display_names() = default;
    display_names(const display_names&) = delete;
    display_names& operator=(const display_names&) = delete;

    [[nodiscard]] STINT_DECL std::string_view operator()(std::string_view raw);

private:
    struct slot {
        const char* data = nullptr;
        std::size_t size = 0;
        std::string_view shown;
        bool used = false;  // an empty name may have a null pointer, like an unused slot
    };

    STINT_DECL std::string_view rewrite(std::string_view raw);

    std::array<slot, 64> slots_{};
    std::unordered_map<std::string_view, std::string_view> seen_;
    std::deque<std::string> demangled_;  // a deque never moves its strings: views stay valid
};

// torch's events hold no [memory] event that happened inside an op or scope: those only feed the memory
// usage of the events around them. Only a top-level one (outside every scope) is an event, and a row,
// of its own. An [OutOfMemory] event is always one.
[[nodiscard]] inline bool is_nested_memory(const event& e) noexcept {
    return e.kind == event_kind::memory && e.parent != no_index;
}

// `i` or the first sibling after it that torch's tree holds (every child has a parent, so a [memory]
// child is skipped, and a counter's sample, which torch has no event for); no_index when none. Without
// memory events or counters no sibling is read.
[[nodiscard]] STINT_DECL event_index next_in_torch_tree(const event_list& list, event_index i) noexcept;

// torch's _build_tree deletes an event whose parent has the same name and no other child, and hands its
// children to that parent (_remove_dup_nodes): `f` calling itself once is one call, not two. [memory]
// children do not count: torch's tree has none. Each sibling scans only the [memory] run after it, and
// only the last one the run before the first, so a list is checked in linear time.
[[nodiscard]] STINT_DECL bool is_folded_recursion(const event_list& list, const event& e, display_names& names);

// torch's FunctionEvent times, to the last bit. Kineto gives integer nanoseconds; torch divides each
// timestamp by 1000 as a double (start_us = rel_start_ns / 1000), so a duration is end_us - start_us,
// not (end_ns - start_ns) / 1000, and a self time subtracts the children's durations, summed in order
// from 0. Integer sums round some half-way cells the other way: a[0,18] b[100,109] c[200,205] (ns)
// shows b at 28.13% in torch, 28.12% from nanosecond sums.
[[nodiscard]] inline double torch_elapsed_us(const event& e) noexcept {
    return static_cast<double>(e.end_ns) / 1e3 - static_cast<double>(e.start_ns) / 1e3;
}

// torch's cpu_time_total: 0 for an event on a device.
[[nodiscard]] inline double torch_cpu_time_total(const event& e) noexcept {
    return e.on_device() ? 0.0 : torch_elapsed_us(e);
}

// The first child of an event that survives folding: a folded chain's children are those of its
// innermost member, which _remove_dup_nodes hands to the survivor.
[[nodiscard]] STINT_DECL event_index torch_first_child(const event_list& list, const event& e,
                                                       display_names& names);

// One event's memory usage as torch's FunctionEvent gives it (bytes). A folded chain's survivor keeps
// its own totals; its self usage is its total less that of the innermost member's children, which is
// what every member allocated directly.
[[nodiscard]] STINT_DECL memory_usage torch_memory_usage(const event_list& list, const event& e,
                                                         display_names& names);

// One event's times as torch's FunctionEvent gives them (µs). A device event has no CPU time and its
// duration as both device times. A CPU event's device time is that of the device events it and its
// descendants launched; its self device time leaves out its children's (after folding). torch's
// _remove_dup_nodes keeps only the innermost member's kernels on a folded chain's survivor; here the
// survivor keeps the whole chain's, so no device time vanishes from the table.
struct torch_times {
    double cpu_time_total = 0;
    double self_cpu_time_total = 0;
    double device_time_total = 0;
    double self_device_time_total = 0;
};

[[nodiscard]] STINT_DECL torch_times torch_event_times(const event_list& list, const event& e,
                                                       display_names& names);

// What the table reads of one row, from a raw event or an averaged one. A new column adds a field here.
struct table_row {
    std::string_view name;
    double self_cpu_time_total = 0;  // µs
    double cpu_time_total = 0;       // µs
    double cpu_time = 0;             // µs, average per call
    double self_device_time_total = 0;  // µs
    double device_time_total = 0;       // µs
    double device_time = 0;             // µs, average per call
    device_type device = device_type::cpu;  // where the row's events ran
    bool is_user_annotation = false;
    std::int64_t count = 0;
    const std::vector<std::vector<std::int64_t>>* input_shapes = nullptr;  // nullptr: none
    call_stack stack;                                                     // an event's, innermost first,
    std::span<const std::string> frames;                                  // or an averaged event's
    std::size_t widest_frame = 0;                                         // text_width, widest frame
    std::int64_t flops = 0;                                               // <= 0: none ("--")
    bool has_cpu_parent = false;
    std::int64_t cpu_memory_usage = 0;  // bytes, allocated minus freed
    std::int64_t self_cpu_memory_usage = 0;
    std::int64_t device_memory_usage = 0;
    std::int64_t self_device_memory_usage = 0;
};

// Which memory columns a table shows. torch shows CPU Mem and Self CPU Mem on every profile_memory run,
// and the device pair when there is device memory: here when the list has memory events, and when one
// of them is on a device.
struct memory_columns {
    bool cpu = false;
    bool device = false;
};

[[nodiscard]] STINT_DECL memory_columns memory_columns_of(const event_list& list) noexcept;

// Calls `f` on each frame of the row's stack, innermost first.
template <class F>
void for_each_frame(const table_row& r, F&& f) {
    for (const std::string& frame : r.frames) f(frame);
    for (const std::string& frame : r.stack) f(frame);
}

// The text_width of each stack's widest frame, per node of `tree`: from its caller's, so linear in the
// nodes however deep the stacks nest (a loop over each event's frames would be quadratic).
[[nodiscard]] STINT_DECL std::vector<std::size_t> widest_frames(const stack_tree& tree);

[[nodiscard]] STINT_DECL const sort_key_entry* find_sort_key(std::string_view name) noexcept;

[[nodiscard]] STINT_DECL double sort_value(const table_row& row, sort_field field) noexcept;

enum class time_unit_kind : std::uint8_t { automatic, s, ms, us };

[[nodiscard]] STINT_DECL time_unit_kind parse_time_unit(std::string_view unit);

// torch's _format_time, or its override_time_unit when a unit is forced.
STINT_DECL void append_time(std::string& out, double us, time_unit_kind unit);

// torch's _format_time_share.
STINT_DECL void append_share(std::string& out, double part, double total);

// torch's _format_memory (its KB is 1024 bytes; the unit follows the magnitude, the sign is kept):
// 1536 -> "1.50 Kb", -2097152 -> "-2.00 Mb", 12 -> "12 b".
STINT_DECL void append_memory(std::string& out, std::int64_t bytes);

[[nodiscard]] STINT_DECL std::string format_memory(std::int64_t bytes);

// Python's str() of a list of int lists: "[[64, 32], []]".
STINT_DECL void append_shapes(std::string& out, const std::vector<std::vector<std::int64_t>>* shapes);

// Byte offset of the code point that starts after `points` code points.
[[nodiscard]] STINT_DECL std::size_t byte_offset(std::string_view text, std::size_t points) noexcept;

[[nodiscard]] inline std::string_view first_points(std::string_view text, std::size_t points) noexcept {
    return text.substr(0, byte_offset(text, points));
}

// torch's trim_path: keep the last `width` code points and mark the cut with "...".
[[nodiscard]] STINT_DECL std::string trim_path(std::string_view path, std::size_t width);

struct table_column {
    std::size_t width;
    bool left = false;  // only Source Location is left-aligned; the rest, Name included, align right
};

class table_writer {
public:
    explicit table_writer(std::vector<table_column> columns) : columns_(std::move(columns)) {}

    // One line of cells, each padded to its column and followed by the two-space gap (trailing too,
    // as torch's row format writes it).
    STINT_DECL void row(std::string& out, const std::vector<std::string>& cells) const;
    STINT_DECL void separator(std::string& out) const;
    [[nodiscard]] STINT_DECL std::size_t line_length() const noexcept;
    [[nodiscard]] std::size_t size() const noexcept { return columns_.size(); }

private:
    std::vector<table_column> columns_;
};

STINT_DECL void check_width(const char* option, int value);

[[nodiscard]] STINT_DECL std::string unknown_sort_key_message(std::string_view key);

// Options are checked before the emptiness test, so a typo fails on the first run, not the first
// non-empty one.
STINT_DECL void check_options(const table_options& options);

// torch's _build_table for the columns stint records (overload and node id columns join here when their
// fields exist).
[[nodiscard]] STINT_DECL std::string build_table(std::vector<table_row> rows, const table_options& options,
                                                memory_columns memory = {});

}  // namespace detail

/// The sort keys `table_options::sort_by` accepts (torch's, with cuda/xpu/privateuse1 spellings, which
/// all sort by device time or device memory). Memory keys sort by bytes allocated minus freed, largest
/// first, and keep the list's order on a run without memory events.
///
///     for (std::string_view key : stint::valid_sort_keys()) fmt::print("{}\n", key);
[[nodiscard]] STINT_DECL std::vector<std::string_view> valid_sort_keys();

/// One row per event, as torch's `EventList.table()` prints `prof.events()`: "ProfilerStep#N" shows
/// as "ProfilerStep*", and an event that is the only child of a same-named parent is merged into that
/// parent (torch's tree drops it). A device event (kernel, copy) is a row with no CPU time; the CUDA
/// columns and footer line appear when some row has self device time. With memory events, CPU Mem and
/// Self CPU Mem appear (CUDA Mem, Self CUDA Mem too when some are on a device); a [memory] event inside
/// a scope is no row, it counts in the scopes around it. An empty list gives "". Throws
/// std::invalid_argument for an unknown sort key or time unit, or a maximum width under 4.
///
///     std::cout << stint::table(prof.events(), {.sort_by = "self_cpu_time_total", .row_limit = 20});
[[nodiscard]] STINT_DECL std::string table(const event_list& events, const table_options& options = {});

}  // namespace stint

#if defined(STINT_HEADER_ONLY)
#include "stint/analysis/impl/table.ipp"
#endif
