#pragma once
// torch.profiler's summary table (`_build_table` in torch/autograd/profiler_util.py): the same columns,
// widths, units, sort keys and footer, so a stint table reads like the one people already know.

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <iterator>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "stint/analysis/event.hpp"
#include "stint/analysis/event_list.hpp"
#include "stint/capture/detail/native_symbols.hpp"
#include "stint/common/device.hpp"
#include "stint/common/event_kind.hpp"
#include "stint/detail/deferred.hpp"

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
template <class = void>
[[nodiscard]] std::size_t text_width(std::string_view text) noexcept {
    return static_cast<std::size_t>(
        std::count_if(text.begin(), text.end(), [](char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; }));
}

template <class = void>
class basic_display_names;
/// basic_display_names's one form (a template only so that a file that does not use it does not compile it).
using display_names = basic_display_names<>;

// torch's _rewrite_name(name, with_wildcard=True), as its function events carry names into
// key_averages and the table: a name of more than one character goes through c10::demangle
// (abi::__cxa_demangle; the name itself when that fails, so "_Z3foov" -> "foo()" and "forward" stays),
// then "ProfilerStep#N" becomes "ProfilerStep*". The trace keeps the names as recorded, as Kineto's
// does. Each distinct name is rewritten once: names are mostly a site's static string, so a pointer
// cache answers most events without hashing the text.
template <class Unused>
class basic_display_names {
public:
    basic_display_names() = default;
    basic_display_names(const basic_display_names&) = delete;
    basic_display_names& operator=(const basic_display_names&) = delete;

    [[nodiscard]] std::string_view operator()(std::string_view raw) {
        slot& s = slots_[(reinterpret_cast<std::uintptr_t>(raw.data()) >> 3) & (slots_.size() - 1)];
        if (s.used && s.data == raw.data() && s.size == raw.size()) return s.shown;
        auto [at, added] = seen_.try_emplace(raw);
        if (added) at->second = rewrite(raw);
        s = {raw.data(), raw.size(), at->second, true};
        return at->second;
    }

private:
    struct slot {
        const char* data = nullptr;
        std::size_t size = 0;
        std::string_view shown;
        bool used = false;  // an empty name may have a null pointer, like an unused slot
    };

    std::string_view rewrite(std::string_view raw) {
        std::string_view name = raw;
        // The demangler reads a C string: a name with a NUL would be read up to it ("a\0b" as "a",
        // demangled to "signed char"), so such a name is shown as recorded.
        if (text_width(raw) > 1 && raw.find('\0') == std::string_view::npos) {  // Python's len(): code points
            deferred_t<std::string, Unused> demangled = demangle(std::string(raw).c_str());
            if (demangled != raw) name = demangled_.emplace_back(std::move(demangled));
        }
        return name.starts_with(profiler_step_prefix) ? profiler_step_wildcard : name;
    }

    std::array<slot, 64> slots_{};
    deferred_t<std::unordered_map<std::string_view, std::string_view>, Unused> seen_;
    deferred_t<std::deque<std::string>, Unused> demangled_;  // a deque never moves its strings: views stay valid
};

// torch's events hold no [memory] event that happened inside an op or scope: those only feed the memory
// usage of the events around them. Only a top-level one (outside every scope) is an event, and a row,
// of its own. An [OutOfMemory] event is always one.
template <class = void>
[[nodiscard]] bool is_nested_memory(const event& e) noexcept {
    return e.kind == event_kind::memory && e.parent != no_index;
}

// From here on, the functions take the event list, display names, strings and containers they work on
// as deferred_t<T, Unused> (exactly T, with Unused left at void; stint/detail/deferred.hpp), and so do
// their locals: their bodies are checked, and what they call instantiated, only when a table is made.

// `i` or the first sibling after it that torch's tree holds (every child has a parent, so a [memory]
// child is skipped, and a counter's sample, which torch has no event for); no_index when none. Without
// memory events or counters no sibling is read.
template <class Unused = void>
[[nodiscard]] event_index next_in_torch_tree(deferred_t<const event_list, Unused>& list, event_index i) noexcept {
    if (!list.has_memory_events() && !list.has_counters()) return i;
    while (i != no_index && (list[i].kind == event_kind::memory || list[i].kind == event_kind::counter)) {
        i = list[i].next_sibling;
    }
    return i;
}

// torch's _build_tree deletes an event whose parent has the same name and no other child, and hands its
// children to that parent (_remove_dup_nodes): `f` calling itself once is one call, not two. [memory]
// children do not count: torch's tree has none. Each sibling scans only the [memory] run after it, and
// only the last one the run before the first, so a list is checked in linear time.
template <class Unused = void>
[[nodiscard]] bool is_folded_recursion(deferred_t<const event_list, Unused>& list, const event& e,
                                       deferred_t<display_names, Unused>& names) {
    if (e.parent == no_index || next_in_torch_tree(list, e.next_sibling) != no_index) return false;
    const event& p = list[e.parent];
    return next_in_torch_tree(list, p.first_child) == list.index_of(e) && names(p.name) == names(e.name);
}

// torch's FunctionEvent times, to the last bit. Kineto gives integer nanoseconds; torch divides each
// timestamp by 1000 as a double (start_us = rel_start_ns / 1000), so a duration is end_us - start_us,
// not (end_ns - start_ns) / 1000, and a self time subtracts the children's durations, summed in order
// from 0. Integer sums round some half-way cells the other way: a[0,18] b[100,109] c[200,205] (ns)
// shows b at 28.13% in torch, 28.12% from nanosecond sums.
template <class = void>
[[nodiscard]] double torch_elapsed_us(const event& e) noexcept {
    return static_cast<double>(e.end_ns) / 1e3 - static_cast<double>(e.start_ns) / 1e3;
}

// torch's cpu_time_total: 0 for an event on a device.
template <class = void>
[[nodiscard]] double torch_cpu_time_total(const event& e) noexcept {
    return e.on_device() ? 0.0 : torch_elapsed_us(e);
}

// The first child of an event that survives folding: a folded chain's children are those of its
// innermost member, which _remove_dup_nodes hands to the survivor.
template <class Unused = void>
[[nodiscard]] event_index torch_first_child(deferred_t<const event_list, Unused>& list, const event& e,
                                            deferred_t<display_names, Unused>& names) {
    event_index first = next_in_torch_tree(list, e.first_child);
    const std::string_view name = first == no_index ? std::string_view() : names(e.name);
    while (first != no_index) {
        const event& child = list[first];
        if (next_in_torch_tree(list, child.next_sibling) != no_index || names(child.name) != name) break;
        first = next_in_torch_tree(list, child.first_child);
    }
    return first;
}

// One event's memory usage as torch's FunctionEvent gives it (bytes). A folded chain's survivor keeps
// its own totals; its self usage is its total less that of the innermost member's children, which is
// what every member allocated directly.
template <class Unused = void>
[[nodiscard]] memory_usage torch_memory_usage(deferred_t<const event_list, Unused>& list, const event& e,
                                              deferred_t<display_names, Unused>& names) {
    memory_usage u = list.memory_usage_of(e);
    if (!list.has_memory_events() || e.kind == event_kind::memory) return u;
    event_index member = next_in_torch_tree(list, e.first_child);
    const std::string_view name = member == no_index ? std::string_view() : names(e.name);
    while (member != no_index) {
        const event& child = list[member];
        if (next_in_torch_tree(list, child.next_sibling) != no_index || names(child.name) != name) break;
        const memory_usage own = list.memory_usage_of(child);
        u.self_cpu += own.self_cpu;
        u.self_device += own.self_device;
        member = next_in_torch_tree(list, child.first_child);
    }
    return u;
}

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

template <class Unused = void>
[[nodiscard]] torch_times torch_event_times(deferred_t<const event_list, Unused>& list, const event& e,
                                            deferred_t<display_names, Unused>& names) {
    torch_times t;
    if (e.on_device()) {
        t.device_time_total = t.self_device_time_total = torch_elapsed_us(e);
        return t;
    }
    t.cpu_time_total = torch_elapsed_us(e);
    t.device_time_total = static_cast<double>(e.device_ns) / 1e3;
    const event_index first = torch_first_child(list, e, names);
    double children = 0;
    std::int64_t children_device_ns = 0;
    for (event_index c = first; c != no_index;) {
        const event child = list[c];  // assembled once
        children += torch_cpu_time_total(child);
        children_device_ns += child.device_ns;
        c = child.next_sibling;
    }
    t.self_cpu_time_total = t.cpu_time_total - children;
    t.self_device_time_total = static_cast<double>(e.device_ns - children_device_ns) / 1e3;
    return t;
}

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

template <class Unused = void>
[[nodiscard]] memory_columns memory_columns_of(deferred_t<const event_list, Unused>& list) noexcept {
    memory_columns shown;
    if (!list.has_memory_events()) return shown;
    shown.cpu = true;
    for (const event& e : list) {
        const memory_record* r = list.memory_of(e);
        if (r != nullptr && r->device.type != device_type::cpu) {
            shown.device = true;
            break;
        }
    }
    return shown;
}

// Calls `f` on each frame of the row's stack, innermost first.
template <class F>
void for_each_frame(const table_row& r, F&& f) {
    for (const std::string& frame : r.frames) f(frame);
    for (const std::string& frame : r.stack) f(frame);
}

// The text_width of each stack's widest frame, per node of `tree`: from its caller's, so linear in the
// nodes however deep the stacks nest (a loop over each event's frames would be quadratic).
template <class Unused = void>
[[nodiscard]] std::vector<std::size_t> widest_frames(deferred_t<const stack_tree, Unused>& tree) {
    deferred_t<std::vector<std::size_t>, Unused> frame_width;
    frame_width.reserve(tree.frames.size());
    for (const std::string& frame : tree.frames) frame_width.push_back(text_width(frame));
    deferred_t<std::vector<std::size_t>, Unused> widest(tree.nodes.size());
    for (std::size_t i = 0; i < tree.nodes.size(); ++i) {  // a parent comes before its children
        const stack_tree::node& n = tree.nodes[i];
        widest[i] = std::max(frame_width[n.frame], n.parent == no_index ? 0 : widest[n.parent]);
    }
    return widest;
}

[[nodiscard]] inline const sort_key_entry* find_sort_key(std::string_view name) noexcept {
    for (const sort_key_entry& k : sort_keys) {
        if (k.name == name) return &k;
    }
    return nullptr;
}

template <class = void>
[[nodiscard]] double sort_value(const table_row& row, sort_field field) noexcept {
    switch (field) {
        case sort_field::cpu_time: return row.cpu_time;
        case sort_field::cpu_time_total: return row.cpu_time_total;
        case sort_field::self_cpu_time_total: return row.self_cpu_time_total;
        case sort_field::device_time: return row.device_time;
        case sort_field::device_time_total: return row.device_time_total;
        case sort_field::self_device_time_total: return row.self_device_time_total;
        case sort_field::cpu_memory_usage: return static_cast<double>(row.cpu_memory_usage);
        case sort_field::self_cpu_memory_usage: return static_cast<double>(row.self_cpu_memory_usage);
        case sort_field::device_memory_usage: return static_cast<double>(row.device_memory_usage);
        case sort_field::self_device_memory_usage: return static_cast<double>(row.self_device_memory_usage);
        case sort_field::count: return static_cast<double>(row.count);
        case sort_field::flops: return static_cast<double>(std::max<std::int64_t>(row.flops, 0));
    }
    return 0;
}

enum class time_unit_kind : std::uint8_t { automatic, s, ms, us };

template <class Unused = void>
[[nodiscard]] time_unit_kind parse_time_unit(deferred_t<std::string_view, Unused> unit) {
    if (unit.empty()) return time_unit_kind::automatic;
    if (unit == "s") return time_unit_kind::s;
    if (unit == "ms") return time_unit_kind::ms;
    if (unit == "us") return time_unit_kind::us;
    throw std::invalid_argument(
        fmt::format("stint: table(): unknown time_unit '{}'; use \"s\", \"ms\", \"us\", or \"\" for a unit per cell",
                    unit));
}

// torch's _format_time, or its override_time_unit when a unit is forced.
template <class Unused = void>
void append_time(deferred_t<std::string, Unused>& out, double us, time_unit_kind unit) {
    auto to = std::back_inserter(out);
    switch (unit) {
        case time_unit_kind::s: fmt::format_to(to, "{:.3f}s", us / 1e6); return;
        case time_unit_kind::ms: fmt::format_to(to, "{:.3f}ms", us / 1e3); return;
        case time_unit_kind::us: fmt::format_to(to, "{:.3f}us", us); return;
        case time_unit_kind::automatic: break;
    }
    if (us >= 1e6) {
        fmt::format_to(to, "{:.3f}s", us / 1e6);
    } else if (us >= 1e3) {
        fmt::format_to(to, "{:.3f}ms", us / 1e3);
    } else {
        fmt::format_to(to, "{:.3f}us", us);
    }
}

// torch's _format_time_share.
template <class Unused = void>
void append_share(deferred_t<std::string, Unused>& out, double part, double total) {
    if (total == 0) {
        out += "NaN";
        return;
    }
    fmt::format_to(std::back_inserter(out), "{:.2f}%", part * 100.0 / total);
}

// torch's _format_memory (its KB is 1024 bytes; the unit follows the magnitude, the sign is kept):
// 1536 -> "1.50 Kb", -2097152 -> "-2.00 Mb", 12 -> "12 b".
template <class Unused = void>
void append_memory(deferred_t<std::string, Unused>& out, std::int64_t bytes) {
    constexpr std::uint64_t kb = 1024;
    constexpr std::uint64_t mb = 1024 * kb;
    constexpr std::uint64_t gb = 1024 * mb;
    const std::uint64_t magnitude =
        bytes < 0 ? std::uint64_t{0} - static_cast<std::uint64_t>(bytes) : static_cast<std::uint64_t>(bytes);
    const double value = static_cast<double>(bytes);
    auto to = std::back_inserter(out);
    if (magnitude >= gb) {
        fmt::format_to(to, "{:.2f} Gb", value / static_cast<double>(gb));
    } else if (magnitude >= mb) {
        fmt::format_to(to, "{:.2f} Mb", value / static_cast<double>(mb));
    } else if (magnitude >= kb) {
        fmt::format_to(to, "{:.2f} Kb", value / static_cast<double>(kb));
    } else {
        fmt::format_to(to, "{} b", bytes);
    }
}

template <class Unused = void>
[[nodiscard]] std::string format_memory(std::int64_t bytes) {
    deferred_t<std::string, Unused> out;
    append_memory(out, bytes);
    return out;
}

// Python's str() of a list of int lists: "[[64, 32], []]".
template <class Unused = void>
void append_shapes(deferred_t<std::string, Unused>& out,
                   const deferred_t<std::vector<std::vector<std::int64_t>>, Unused>* shapes) {
    out += '[';
    if (shapes != nullptr) {
        for (std::size_t i = 0; i < shapes->size(); ++i) {
            if (i != 0) out += ", ";
            fmt::format_to(std::back_inserter(out), "[{}]", fmt::join((*shapes)[i], ", "));
        }
    }
    out += ']';
}

// Byte offset of the code point that starts after `points` code points.
template <class = void>
[[nodiscard]] std::size_t byte_offset(std::string_view text, std::size_t points) noexcept {
    std::size_t seen = 0;
    for (std::size_t i = 0; i < text.size(); ++i) {
        if ((static_cast<unsigned char>(text[i]) & 0xC0) == 0x80) continue;
        if (seen == points) return i;
        ++seen;
    }
    return text.size();
}

template <class = void>
[[nodiscard]] std::string_view first_points(std::string_view text, std::size_t points) noexcept {
    return text.substr(0, byte_offset(text, points));
}

// torch's trim_path: keep the last `width` code points and mark the cut with "...".
template <class = void>
[[nodiscard]] std::string trim_path(std::string_view path, std::size_t width) {
    const std::size_t len = text_width(path);
    if (len <= width) return std::string(path);
    std::string_view tail = path.substr(byte_offset(path, len - width));
    if (width <= 3) return std::string(tail);
    return "..." + std::string(tail.substr(byte_offset(tail, 3)));
}

struct table_column {
    std::size_t width;
    bool left = false;  // only Source Location is left-aligned; the rest, Name included, align right
};

template <class = void>
class basic_table_writer;
/// basic_table_writer's one form (a template only so that a file that does not use it does not compile it).
using table_writer = basic_table_writer<>;

template <class Unused>
class basic_table_writer {
public:
    explicit basic_table_writer(deferred_t<std::vector<table_column>, Unused> columns) : columns_(std::move(columns)) {}

    // One line of cells, each padded to its column and followed by the two-space gap (trailing too,
    // as torch's row format writes it).
    template <typename Cells>
    void row(std::string& out, const Cells& cells) const {
        std::size_t i = 0;
        for (const auto& cell : cells) {
            const std::string_view text(cell);
            const std::size_t width = text_width(text);
            const std::size_t pad = columns_[i].width > width ? columns_[i].width - width : 0;
            if (!columns_[i].left) out.append(pad, ' ');
            out += text;
            if (columns_[i].left) out.append(pad, ' ');
            out += "  ";
            ++i;
        }
        out += '\n';
    }
    void separator(std::string& out) const {
        for (const table_column& c : columns_) {
            out.append(c.width, '-');
            out += "  ";
        }
        out += '\n';
    }
    [[nodiscard]] std::size_t line_length() const noexcept {
        std::size_t n = 0;
        for (const table_column& c : columns_) n += c.width + 2;
        return n - 2;
    }
    [[nodiscard]] std::size_t size() const noexcept { return columns_.size(); }

private:
    deferred_t<std::vector<table_column>, Unused> columns_;
};

template <class Unused = void>
void check_width(const char* option, deferred_t<int, Unused> value) {
    if (value < 4) {
        throw std::invalid_argument(fmt::format("stint: table(): {} must be at least 4, got {}", option, value));
    }
}

template <class Unused = void>
[[nodiscard]] std::string unknown_sort_key_message(deferred_t<std::string_view, Unused> key) {
    deferred_t<std::string, Unused> message = fmt::format("stint: table(): unknown sort_by '{}'; valid keys: ", key);
    for (std::size_t i = 0; i < sort_keys.size(); ++i) {
        if (i != 0) message += ", ";
        message += sort_keys[i].name;
    }
    return message;
}

// Options are checked before the emptiness test, so a typo fails on the first run, not the first
// non-empty one.
template <class = void>
void check_options(const table_options& options) {
    if (!options.sort_by.empty() && find_sort_key(options.sort_by) == nullptr) {
        throw std::invalid_argument(unknown_sort_key_message(options.sort_by));
    }
    (void)parse_time_unit(options.time_unit);
    check_width("max_name_column_width", options.max_name_column_width);
    check_width("max_src_column_width", options.max_src_column_width);
    check_width("max_shapes_column_width", options.max_shapes_column_width);
}

// torch's _build_table for the columns stint records (overload and node id columns join here when their
// fields exist).
template <class Unused = void>
[[nodiscard]] std::string build_table(deferred_t<std::vector<table_row>, Unused> rows, const table_options& options,
                                             memory_columns memory = {}) {
    check_options(options);
    if (rows.empty()) return {};
    const time_unit_kind unit = parse_time_unit(options.time_unit);

    if (!options.sort_by.empty()) {
        const sort_field field = find_sort_key(options.sort_by)->field;
        // Python's sorted(reverse=True) is stable: equal keys keep the list's order.
        std::stable_sort(rows.begin(), rows.end(), [field](const table_row& a, const table_row& b) {
            return sort_value(a, field) > sort_value(b, field);
        });
    }

    // Widths, optional columns and the footer total all look at every row, not only the printed ones.
    const auto max_name = static_cast<std::size_t>(options.max_name_column_width);
    std::size_t name_width = 0;
    bool has_input_shapes = false;
    bool has_stack = false;
    std::size_t src_width = 0;
    std::int64_t min_flops = 0;
    double sum_self_cpu = 0;
    // torch's has_device_time and sum_self_device_time_total: the share and the footer sum the rows of
    // device events only, as a CPU row's self device time is theirs again.
    bool has_device_time = false;
    double sum_self_device = 0;
    for (const table_row& r : rows) {
        name_width = std::max(name_width, text_width(r.name));
        has_input_shapes = has_input_shapes || (r.input_shapes != nullptr && !r.input_shapes->empty());
        if (!r.stack.empty() || !r.frames.empty()) {
            has_stack = true;
            src_width = std::max(src_width, r.widest_frame);
        }
        if (r.flops > 0 && (min_flops == 0 || r.flops < min_flops)) min_flops = r.flops;
        sum_self_cpu += r.self_cpu_time_total;
        has_device_time = has_device_time || r.self_device_time_total > 0;
        if (r.device != device_type::cpu && !r.is_user_annotation) sum_self_device += r.self_device_time_total;
    }
    name_width = std::min(name_width + 4, max_name);
    src_width = std::min(src_width + 4, static_cast<std::size_t>(options.max_src_column_width));

    deferred_t<std::vector<std::string>, Unused> shapes_text;
    std::size_t shapes_width = 0;
    if (has_input_shapes) {
        shapes_text.resize(rows.size());
        for (std::size_t i = 0; i < rows.size(); ++i) {
            append_shapes(shapes_text[i], rows[i].input_shapes);
            shapes_width = std::max(shapes_width, text_width(shapes_text[i]));
        }
        shapes_width = std::min(shapes_width + 4, static_cast<std::size_t>(options.max_shapes_column_width));
    }

    // torch scales every flops cell by the unit of the smallest non-zero count.
    static constexpr std::array<std::string_view, 6> flops_units{"FLOPs",  "KFLOPs", "MFLOPs",
                                                                 "GFLOPs", "TFLOPs", "PFLOPs"};
    const bool has_flops = min_flops > 0;
    double flops_scale = 1;
    std::string_view flops_unit;
    if (has_flops) {
        const double log_flops = std::clamp(std::log10(static_cast<double>(min_flops)) / 3.0, 0.0, 5.0);
        const double index = std::floor(log_flops);
        flops_scale = std::pow(10.0, index * -3.0);
        flops_unit = flops_units[static_cast<std::size_t>(index)];
    }

    constexpr std::size_t default_width = 12;
    deferred_t<std::vector<std::string>, Unused> headers{"Name",        "Self CPU %", "Self CPU",
                                                        "CPU total %", "CPU total",  "CPU time avg"};
    if (has_device_time) headers.insert(headers.end(), {"Self CUDA", "Self CUDA %", "CUDA total", "CUDA time avg"});
    if (memory.cpu) headers.insert(headers.end(), {"CPU Mem", "Self CPU Mem"});
    if (memory.device) headers.insert(headers.end(), {"CUDA Mem", "Self CUDA Mem"});
    headers.emplace_back("# of Calls");
    deferred_t<std::vector<table_column>, Unused> columns{{name_width}};
    columns.resize(headers.size(), {default_width});
    if (has_input_shapes) {
        headers.emplace_back("Input Shapes");
        columns.push_back({shapes_width});
    }
    // torch's header order; torch fills the FLOPs value before the source frame, which misplaces both
    // cells when stacks and flops appear together, so values here follow the headers.
    std::size_t src_column = 0;
    if (has_stack) {
        headers.emplace_back("Source Location");
        src_column = columns.size();
        columns.push_back({src_width, true});
    }
    if (has_flops) {
        headers.push_back(fmt::format("Total {}", flops_unit));
        columns.push_back({default_width});
    }
    const deferred_t<table_writer, Unused> writer(std::move(columns));

    deferred_t<std::string, Unused> out;
    if (!options.header.empty()) {
        out.append(writer.line_length(), '=');
        out += '\n';
        out += options.header;
        out += '\n';
    }
    if (options.top_level_events_only) {
        out.append(writer.line_length(), '=');
        out += "\nThis report only display top-level ops statistics\n";
    }
    writer.separator(out);
    writer.row(out, headers);
    writer.separator(out);

    deferred_t<std::vector<std::string>, Unused> cells(writer.size());
    deferred_t<std::vector<std::string>, Unused> blank(writer.size());
    int printed = 0;
    for (std::size_t i = 0; i < rows.size(); ++i) {
        const table_row& r = rows[i];
        if (printed == options.row_limit) break;
        if (options.top_level_events_only && r.has_cpu_parent) continue;
        ++printed;
        for (std::string& c : cells) c.clear();

        // torch appends "..." once a name reaches the limit minus three, even when nothing is cut.
        std::size_t c = 0;
        if (text_width(r.name) + 3 >= max_name) {
            cells[c] = first_points(r.name, max_name - 3);
            cells[c] += "...";
        } else {
            cells[c] = r.name;
        }
        append_share(cells[++c], r.self_cpu_time_total, sum_self_cpu);
        append_time(cells[++c], r.self_cpu_time_total, unit);
        append_share(cells[++c], r.cpu_time_total, sum_self_cpu);
        append_time(cells[++c], r.cpu_time_total, unit);
        append_time(cells[++c], r.cpu_time, unit);
        if (has_device_time) {
            append_time(cells[++c], r.self_device_time_total, unit);
            append_share(cells[++c], r.self_device_time_total, sum_self_device);
            append_time(cells[++c], r.device_time_total, unit);
            append_time(cells[++c], r.device_time, unit);
        }
        if (memory.cpu) {
            append_memory(cells[++c], r.cpu_memory_usage);
            append_memory(cells[++c], r.self_cpu_memory_usage);
        }
        if (memory.device) {
            append_memory(cells[++c], r.device_memory_usage);
            append_memory(cells[++c], r.self_device_memory_usage);
        }
        fmt::format_to(std::back_inserter(cells[++c]), "{}", r.count);
        if (has_input_shapes) cells[++c] = first_points(shapes_text[i], shapes_width);
        if (has_stack && !r.frames.empty()) cells[++c] = trim_path(r.frames.front(), src_width);
        else if (has_stack && !r.stack.empty()) cells[++c] = trim_path(r.stack.front(), src_width);
        else if (has_stack) ++c;
        if (has_flops) {
            if (r.flops <= 0) {
                cells[++c] = "--";
            } else {
                fmt::format_to(std::back_inserter(cells[++c]), "{:8.3f}", static_cast<double>(r.flops) * flops_scale);
            }
        }
        writer.row(out, cells);

        if (has_stack) {
            bool innermost = true;
            for_each_frame(r, [&](const std::string& frame) {
                if (std::exchange(innermost, false)) return;  // in the row itself
                blank[src_column] = trim_path(frame, src_width);
                writer.row(out, blank);
            });
            blank[src_column].clear();
            writer.row(out, blank);
        }
    }

    writer.separator(out);
    out += "Self CPU time total: ";
    append_time(out, sum_self_cpu, unit);
    out += '\n';
    if (has_device_time) {
        out += "Self CUDA time total: ";
        append_time(out, sum_self_device, unit);
        out += '\n';
    }
    return out;
}

}  // namespace detail

/// The sort keys `table_options::sort_by` accepts (torch's, with cuda/xpu/privateuse1 spellings, which
/// all sort by device time or device memory). Memory keys sort by bytes allocated minus freed, largest
/// first, and keep the list's order on a run without memory events.
///
///     for (std::string_view key : stint::valid_sort_keys()) fmt::print("{}\n", key);
template <class Unused = void>
[[nodiscard]] std::vector<std::string_view> valid_sort_keys() {
    detail::deferred_t<std::vector<std::string_view>, Unused> keys;
    keys.reserve(detail::sort_keys.size());
    for (const detail::sort_key_entry& k : detail::sort_keys) keys.push_back(k.name);
    return keys;
}

/// One row per event, as torch's `EventList.table()` prints `prof.events()`: "ProfilerStep#N" shows
/// as "ProfilerStep*", and an event that is the only child of a same-named parent is merged into that
/// parent (torch's tree drops it). A device event (kernel, copy) is a row with no CPU time; the CUDA
/// columns and footer line appear when some row has self device time. With memory events, CPU Mem and
/// Self CPU Mem appear (CUDA Mem, Self CUDA Mem too when some are on a device); a [memory] event inside
/// a scope is no row, it counts in the scopes around it. An empty list gives "". Throws
/// std::invalid_argument for an unknown sort key or time unit, or a maximum width under 4.
///
///     std::cout << stint::table(prof.events(), {.sort_by = "self_cpu_time_total", .row_limit = 20});
template <class Unused = void>
[[nodiscard]] std::string table(detail::deferred_t<const event_list, Unused>& events,
                                const table_options& options = {}) {
    detail::check_options(options);
    detail::deferred_t<std::vector<detail::table_row>, Unused> rows;
    rows.reserve(events.size());
    detail::deferred_t<detail::display_names, Unused> names;
    detail::deferred_t<std::vector<std::size_t>, Unused> widest;
    for (const event& e : events) {
        if (e.stack == no_index) continue;
        widest = detail::widest_frames(*detail::call_stack_access::tree(events.stack(e)));
        break;
    }
    for (const event& e : events) {
        // A counter's sample is a value, not work: no row.
        if (e.kind == event_kind::counter || detail::is_nested_memory(e) ||
            detail::is_folded_recursion(events, e, names)) {
            continue;
        }
        detail::table_row& r = rows.emplace_back();
        r.name = names(e.name);
        const detail::torch_times times = detail::torch_event_times(events, e, names);
        r.self_cpu_time_total = times.self_cpu_time_total;
        r.cpu_time_total = times.cpu_time_total;
        r.cpu_time = r.cpu_time_total;
        r.self_device_time_total = times.self_device_time_total;
        r.device_time_total = times.device_time_total;
        r.device_time = r.device_time_total;
        r.device = e.device.type;
        r.is_user_annotation = e.kind == event_kind::user_annotation || e.kind == event_kind::module;
        r.count = 1;
        if (const event_args* args = events.args(e)) r.input_shapes = &args->input_dims;
        r.stack = events.stack(e);
        if (!r.stack.empty()) r.widest_frame = widest[detail::call_stack_access::node(r.stack)];
        r.flops = e.flops;
        r.has_cpu_parent = e.parent != no_index;
        const memory_usage memory = detail::torch_memory_usage(events, e, names);
        r.cpu_memory_usage = memory.cpu;
        r.self_cpu_memory_usage = memory.self_cpu;
        r.device_memory_usage = memory.device;
        r.self_device_memory_usage = memory.self_device;
    }
    return detail::build_table(std::move(rows), options, detail::memory_columns_of(events));
}

}  // namespace stint
