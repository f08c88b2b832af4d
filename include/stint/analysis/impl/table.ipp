#pragma once
// The bodies of analysis/table.hpp: torch's summary table, its cells, and the per-event times it shows.

#include "stint/analysis/table.hpp"

#include <algorithm>  // std::count_if, std::max, std::min, std::clamp, std::stable_sort
#include <cmath>      // std::log10, std::floor, std::pow
#include <stdexcept>  // std::invalid_argument
#include <utility>    // std::exchange

#include <fmt/core.h>  // fmt::format

#include "stint/common/number_text.hpp"
#include "stint/capture/detail/native_symbols.hpp"

namespace stint {
namespace detail {

std::size_t text_width(std::string_view text) noexcept {
    return static_cast<std::size_t>(
        std::count_if(text.begin(), text.end(), [](char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; }));
}

std::string_view display_names::operator()(std::string_view raw) {
    slot& s = slots_[(reinterpret_cast<std::uintptr_t>(raw.data()) >> 3) & (slots_.size() - 1)];
    if (s.used && s.data == raw.data() && s.size == raw.size()) return s.shown;
    auto [at, added] = seen_.try_emplace(raw);
    if (added) at->second = rewrite(raw);
    s = {raw.data(), raw.size(), at->second, true};
    return at->second;
}

std::string_view display_names::rewrite(std::string_view raw) {
    std::string_view name = raw;
    // The demangler reads a C string: a name with a NUL would be read up to it ("a\0b" as "a",
    // demangled to "signed char"), so such a name is shown as recorded.
    if (text_width(raw) > 1 && raw.find('\0') == std::string_view::npos) {  // Python's len(): code points
        std::string demangled = demangle(std::string(raw).c_str());
        if (demangled != raw) name = demangled_.emplace_back(std::move(demangled));
    }
    return name.starts_with(profiler_step_prefix) ? profiler_step_wildcard : name;
}

event_index next_in_torch_tree(const event_list& list, event_index i) noexcept {
    if (!list.has_memory_events() && !list.has_counters()) return i;
    while (i != no_index && (list[i].kind == event_kind::memory || list[i].kind == event_kind::counter)) {
        i = list[i].next_sibling;
    }
    return i;
}

bool is_folded_recursion(const event_list& list, const event& e, display_names& names) {
    if (e.parent == no_index || next_in_torch_tree(list, e.next_sibling) != no_index) return false;
    const event& p = list[e.parent];
    return next_in_torch_tree(list, p.first_child) == list.index_of(e) && names(p.name) == names(e.name);
}

event_index torch_first_child(const event_list& list, const event& e, display_names& names) {
    event_index first = next_in_torch_tree(list, e.first_child);
    const std::string_view name = first == no_index ? std::string_view() : names(e.name);
    while (first != no_index) {
        const event& child = list[first];
        if (next_in_torch_tree(list, child.next_sibling) != no_index || names(child.name) != name) break;
        first = next_in_torch_tree(list, child.first_child);
    }
    return first;
}

memory_usage torch_memory_usage(const event_list& list, const event& e, display_names& names) {
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

torch_times torch_event_times(const event_list& list, const event& e, display_names& names) {
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

memory_columns memory_columns_of(const event_list& list) noexcept {
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

std::vector<std::size_t> widest_frames(const stack_tree& tree) {
    std::vector<std::size_t> frame_width;
    frame_width.reserve(tree.frames.size());
    for (const std::string& frame : tree.frames) frame_width.push_back(text_width(frame));
    std::vector<std::size_t> widest(tree.nodes.size());
    for (std::size_t i = 0; i < tree.nodes.size(); ++i) {  // a parent comes before its children
        const stack_tree::node& n = tree.nodes[i];
        widest[i] = std::max(frame_width[n.frame], n.parent == no_index ? 0 : widest[n.parent]);
    }
    return widest;
}

const sort_key_entry* find_sort_key(std::string_view name) noexcept {
    for (const sort_key_entry& k : sort_keys) {
        if (k.name == name) return &k;
    }
    return nullptr;
}

double sort_value(const table_row& row, sort_field field) noexcept {
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

time_unit_kind parse_time_unit(std::string_view unit) {
    if (unit.empty()) return time_unit_kind::automatic;
    if (unit == "s") return time_unit_kind::s;
    if (unit == "ms") return time_unit_kind::ms;
    if (unit == "us") return time_unit_kind::us;
    throw std::invalid_argument(
        fmt::format("stint: table(): unknown time_unit '{}'; use \"s\", \"ms\", \"us\", or \"\" for a unit per cell",
                    unit));
}

void append_time(std::string& out, double us, time_unit_kind unit) {
    if (unit == time_unit_kind::automatic) {
        unit = us >= 1e6 ? time_unit_kind::s : us >= 1e3 ? time_unit_kind::ms : time_unit_kind::us;
    }
    switch (unit) {
        case time_unit_kind::s: append_fixed(out, us / 1e6, 3); out += 's'; return;
        case time_unit_kind::ms: append_fixed(out, us / 1e3, 3); out += "ms"; return;
        case time_unit_kind::us:
        case time_unit_kind::automatic: append_fixed(out, us, 3); out += "us"; return;
    }
}

void append_share(std::string& out, double part, double total) {
    if (total == 0) {
        out += "NaN";
        return;
    }
    append_fixed(out, part * 100.0 / total, 2);
    out += '%';
}

void append_memory(std::string& out, std::int64_t bytes) {
    constexpr std::uint64_t kb = 1024;
    constexpr std::uint64_t mb = 1024 * kb;
    constexpr std::uint64_t gb = 1024 * mb;
    const std::uint64_t magnitude =
        bytes < 0 ? std::uint64_t{0} - static_cast<std::uint64_t>(bytes) : static_cast<std::uint64_t>(bytes);
    const double value = static_cast<double>(bytes);
    if (magnitude >= gb) {
        append_fixed(out, value / static_cast<double>(gb), 2);
        out += " Gb";
    } else if (magnitude >= mb) {
        append_fixed(out, value / static_cast<double>(mb), 2);
        out += " Mb";
    } else if (magnitude >= kb) {
        append_fixed(out, value / static_cast<double>(kb), 2);
        out += " Kb";
    } else {
        append_integer(out, bytes);
        out += " b";
    }
}

std::string format_memory(std::int64_t bytes) {
    std::string out;
    append_memory(out, bytes);
    return out;
}

void append_shapes(std::string& out, const std::vector<std::vector<std::int64_t>>* shapes) {
    out += '[';
    if (shapes != nullptr) {
        for (std::size_t i = 0; i < shapes->size(); ++i) {
            if (i != 0) out += ", ";
            out += '[';
            for (std::size_t d = 0; d < (*shapes)[i].size(); ++d) {
                if (d != 0) out += ", ";
                append_integer(out, (*shapes)[i][d]);
            }
            out += ']';
        }
    }
    out += ']';
}

std::size_t byte_offset(std::string_view text, std::size_t points) noexcept {
    std::size_t seen = 0;
    for (std::size_t i = 0; i < text.size(); ++i) {
        if ((static_cast<unsigned char>(text[i]) & 0xC0) == 0x80) continue;
        if (seen == points) return i;
        ++seen;
    }
    return text.size();
}

std::string trim_path(std::string_view path, std::size_t width) {
    const std::size_t len = text_width(path);
    if (len <= width) return std::string(path);
    std::string_view tail = path.substr(byte_offset(path, len - width));
    if (width <= 3) return std::string(tail);
    return "..." + std::string(tail.substr(byte_offset(tail, 3)));
}

void table_writer::row(std::string& out, const std::vector<std::string>& cells) const {
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

void table_writer::separator(std::string& out) const {
    for (const table_column& c : columns_) {
        out.append(c.width, '-');
        out += "  ";
    }
    out += '\n';
}

std::size_t table_writer::line_length() const noexcept {
    std::size_t n = 0;
    for (const table_column& c : columns_) n += c.width + 2;
    return n - 2;
}

void check_width(const char* option, int value) {
    if (value < 4) {
        throw std::invalid_argument(fmt::format("stint: table(): {} must be at least 4, got {}", option, value));
    }
}

std::string unknown_sort_key_message(std::string_view key) {
    std::string message = fmt::format("stint: table(): unknown sort_by '{}'; valid keys: ", key);
    for (std::size_t i = 0; i < sort_keys.size(); ++i) {
        if (i != 0) message += ", ";
        message += sort_keys[i].name;
    }
    return message;
}

void check_options(const table_options& options) {
    if (!options.sort_by.empty() && find_sort_key(options.sort_by) == nullptr) {
        throw std::invalid_argument(unknown_sort_key_message(options.sort_by));
    }
    (void)parse_time_unit(options.time_unit);
    check_width("max_name_column_width", options.max_name_column_width);
    check_width("max_src_column_width", options.max_src_column_width);
    check_width("max_shapes_column_width", options.max_shapes_column_width);
}

std::string build_table(std::vector<table_row> rows, const table_options& options, memory_columns memory) {
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

    std::vector<std::string> shapes_text;
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
    std::vector<std::string> headers{"Name",        "Self CPU %", "Self CPU",
                                                        "CPU total %", "CPU total",  "CPU time avg"};
    if (has_device_time) headers.insert(headers.end(), {"Self CUDA", "Self CUDA %", "CUDA total", "CUDA time avg"});
    if (memory.cpu) headers.insert(headers.end(), {"CPU Mem", "Self CPU Mem"});
    if (memory.device) headers.insert(headers.end(), {"CUDA Mem", "Self CUDA Mem"});
    headers.emplace_back("# of Calls");
    std::vector<table_column> columns{{name_width}};
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
    const table_writer writer(std::move(columns));

    std::string out;
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

    std::vector<std::string> cells(writer.size());
    std::vector<std::string> blank(writer.size());
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
        append_integer(cells[++c], r.count);
        if (has_input_shapes) cells[++c] = first_points(shapes_text[i], shapes_width);
        if (has_stack && !r.frames.empty()) cells[++c] = trim_path(r.frames.front(), src_width);
        else if (has_stack && !r.stack.empty()) cells[++c] = trim_path(r.stack.front(), src_width);
        else if (has_stack) ++c;
        if (has_flops) {
            if (r.flops <= 0) {
                cells[++c] = "--";
            } else {
                append_fixed(cells[++c], static_cast<double>(r.flops) * flops_scale, 3, 8);
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

std::vector<std::string_view> valid_sort_keys() {
    std::vector<std::string_view> keys;
    keys.reserve(detail::sort_keys.size());
    for (const detail::sort_key_entry& k : detail::sort_keys) keys.push_back(k.name);
    return keys;
}

std::string table(const event_list& events, const table_options& options) {
    detail::check_options(options);
    std::vector<detail::table_row> rows;
    rows.reserve(events.size());
    detail::display_names names;
    std::vector<std::size_t> widest;
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
