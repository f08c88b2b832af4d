#pragma once
// The bodies of chrome_trace.hpp: the Chrome trace's head, events and end, written through json_writer.

#include "stint/export/chrome_trace.hpp"

#include <algorithm>  // std::copy, std::find, std::min
#include <cmath>      // std::copysign, std::isfinite, std::isnan
#include <limits>     // std::numeric_limits
#include <cstddef>    // std::size_t, std::ptrdiff_t

#include <fmt/compile.h>  // FMT_COMPILE
#include <fmt/format.h>   // fmt::format_to, fmt::memory_buffer, fmt::to_string

#include "stint/capture/detail/input_decoding.hpp"
#include "stint/detail/export_macros.hpp"
#include "stint/detail/platform.hpp"
#include "stint/export/counter_tracks.hpp"
#include "stint/export/device_trace.hpp"
#include "stint/export/output_file.hpp"
#include "stint/export/trace_time.hpp"

namespace stint::detail {

void write_values(json_writer& out, const event_args& args, const value_keys& keys) {
    const auto int_list = [&](const std::vector<std::int64_t>& values) {
        out.raw("[");
        for (std::size_t i = 0; i < values.size(); ++i) {
            if (i != 0) out.raw(", ");
            out.number(values[i]);
        }
        out.raw("]");
    };
    const auto shapes = [&](const std::vector<std::vector<std::int64_t>>& flat,
                            const std::vector<std::vector<std::vector<std::int64_t>>>& nested) {
        out.raw("[");
        for (std::size_t i = 0; i < flat.size(); ++i) {
            if (i != 0) out.raw(", ");
            const bool is_list = i < args.input_kinds.size() && args.input_kinds[i] == input_kind::tensor_list &&
                                 i < nested.size();
            if (!is_list) {
                int_list(flat[i]);
                continue;
            }
            out.raw("[");
            for (std::size_t t = 0; t < nested[i].size(); ++t) {
                if (t != 0) out.raw(", ");
                int_list(nested[i][t]);
            }
            out.raw("]");
        }
        out.raw("]");
    };
    const auto strings = [&](const std::vector<std::string>& values) {
        out.raw("[");
        for (std::size_t i = 0; i < values.size(); ++i) {
            if (i != 0) out.raw(", ");
            out.string(values[i]);
        }
        out.raw("]");
    };
    if (!args.input_types.empty() || args.truncated) {
        out.raw(keys.dims);
        shapes(args.input_dims, args.tensor_list_dims);
        out.raw(keys.strides);
        shapes(args.input_strides, args.tensor_list_strides);
        out.raw(keys.types);
        strings(args.input_types);
        if (!args.concrete_inputs.empty()) {
            out.raw(keys.concrete);
            strings(args.concrete_inputs);
        }
        if (args.truncated) out.raw(keys.truncated);
    }
}

void write_named_args(json_writer& out, const event_args& args) {
    for (const named_arg& a : args.named_args) {
        out.raw(", ");
        const bool taken = std::find(event_arg_keys.begin(), event_arg_keys.end(), a.name) != event_arg_keys.end();
        out.string(taken ? a.name + " (arg)" : a.name);
        out.raw(": ");
        switch (a.type) {
            case arg_type::integer: out.number(a.integer); break;
            case arg_type::unsigned_integer: out.number(static_cast<std::uint64_t>(a.integer)); break;
            case arg_type::real: out.number(a.real); break;
            case arg_type::boolean: out.boolean(a.integer != 0); break;
            case arg_type::string: out.string(a.text); break;
        }
    }
    if (args.named_args_cut) out.raw(", \"Args truncated\": true");
}

void write_event_args(json_writer& out, const event_args& args) {
    write_values(out, args, input_keys);
    if (!args.outputs.empty()) {
        event_args outputs;
        inputs_to_args(op_inputs({}, args.outputs), true, outputs);
        bool concrete = false;
        for (const std::string& text : outputs.concrete_inputs) concrete = concrete || !text.empty();
        if (!concrete) outputs.concrete_inputs.clear();
        outputs.truncated = false;
        write_values(out, outputs, output_keys);
    }
    if (!args.module_hierarchy.empty()) {
        out.raw(", \"Module Hierarchy\": ");
        out.string(args.module_hierarchy);
    }
    write_named_args(out, args);
}

bool is_reserved_trace_key(std::string_view key) noexcept {
    return std::find(reserved_trace_keys.begin(), reserved_trace_keys.end(), key) != reserved_trace_keys.end();
}

void write_memory_args(json_writer& out, const event& e, const memory_record& memory) {
    out.raw("\"Total Reserved\": ");
    out.number(memory.total_reserved);
    out.raw(", \"Total Allocated\": ");
    out.number(memory.total_allocated);
    out.raw(", \"Bytes\": ");
    out.number(memory.bytes);
    if (e.kind == event_kind::memory) {
        out.raw(", \"Addr\": ");
        out.number(memory.addr);
    }
    out.raw(", \"Device Id\": ");
    out.number(memory.device.index);
    out.raw(", \"Device Type\": ");
    out.number(static_cast<int>(memory.device.type));
}

void write_memory_summary(json_writer& out, std::uint64_t dropped, std::span<const memory_peak> peaks) {
    out.raw("{\"dropped\": ");
    out.number(dropped);
    out.raw(", \"peaks\": [");
    bool first = true;
    for (const memory_peak& peak : peaks) {
        out.raw(first ? "{\"Device Type\": " : ", {\"Device Type\": ");
        first = false;
        out.number(static_cast<int>(peak.device.type));
        out.raw(", \"Device Id\": ");
        out.number(peak.device.index);
        out.raw(", \"bytes\": ");
        out.number(peak.bytes);
        out.raw(", \"at_ns\": ");  // since the session's start, as events' times
        out.number(peak.at_ns);
        out.raw(", \"op\": ");
        out.string(peak.op);
        out.raw("}");
    }
    out.raw("]}");
}

void write_trace_keys(json_writer& out, const chrome_trace_head& head, const chrome_trace_info& info) {
    out.raw("  \"deviceProperties\": [");
    write_device_properties(out, head.device->devices);
    out.raw("],\n");
    // Keys are written as JSON strings, invalid UTF-8 as U+FFFD, so two keys can come out as one
    // ("k\xFF" and "k\xEF\xBF\xBD"); an object's keys must be unique, so of those only the last is
    // written, as a key added again takes the new value.
    std::vector<std::string> keys;
    keys.reserve(info.metadata_json.size());
    for (const auto& entry : info.metadata_json) {
        fmt::memory_buffer key;
        append_json_string(key, entry.first);
        keys.push_back(fmt::to_string(key));
    }
    for (std::size_t i = 0; i < keys.size(); ++i) {
        if (std::find(keys.begin() + static_cast<std::ptrdiff_t>(i) + 1, keys.end(), keys[i]) != keys.end()) continue;
        out.raw("  ");
        out.raw(keys[i]);
        out.raw(": ");
        out.raw(info.metadata_json[i].second);
        out.raw(",\n");
    }
    out.raw("  \"stint\": ");
    write_stint_block(out, head, info);
    out.raw(",\n");
    if (head.no_events) out.raw("  \"WARNING\": [\"No Valid Trace Events\"],\n");
}

void write_stint_block(json_writer& out, const chrome_trace_head& head, const chrome_trace_info& info) {
    out.raw("{\"version\": \"" STINT_VERSION_STRING "\", \"recorded\": ");
    out.number(head.recorded);
    out.raw(", \"dropped\": ");
    out.number(head.dropped);
    out.raw(", \"late\": ");
    out.number(head.late);
    out.raw(", \"truncated_names\": ");
    out.number(info.truncated_names);
    // Always written, "off" included, so that every trace shows what device collection lost.
    out.raw(", \"device\": ");
    write_device_report(out, *head.device);
    // Always written, so that every trace shows the memory events the budget dropped.
    out.raw(", \"memory\": ");
    write_memory_summary(out, head.memory_dropped, head.memory_peaks);
    // Always written, so that every trace shows the flows and async spans it cannot draw whole.
    out.raw(", \"unmatched\": {\"flow_begins\": ");
    out.number(head.unmatched.flow_begins);
    out.raw(", \"flow_ends\": ");
    out.number(head.unmatched.flow_ends);
    out.raw(", \"async_open\": ");
    out.number(head.unmatched.async_open);
    out.raw(", \"async_ends\": ");
    out.number(head.unmatched.async_ends);
    out.raw("}");
    if (head.values_not_streamed) {
        out.raw(", \"values_not_streamed\": ");
        out.number(*head.values_not_streamed);
    }
    out.raw(", \"threads\": [");
    bool first = true;
    for (const thread_info& t : head.threads) {
        if (t.is_device_track()) continue;  // a device stream records nothing itself
        out.raw(first ? "\n    {\"tid\": " : ",\n    {\"tid\": ");
        first = false;
        out.number(t.os_tid);
        out.raw(", \"name\": ");
        out.string(t.name);
        out.raw(", \"recorded\": ");
        out.number(t.recorded);
        out.raw(", \"dropped\": ");
        out.number(t.dropped);
        out.raw("}");
    }
    out.raw(first ? "]}" : "\n  ]}");
}

void write_process_metadata(json_writer& out, const chrome_trace_info& info, bool first) {
    out.raw(first ? "\n    {\"name\": \"process_name\", \"ph\": \"M\", \"ts\": 0, \"pid\": "
                  : ",\n    {\"name\": \"process_name\", \"ph\": \"M\", \"ts\": 0, \"pid\": ");
    out.number(info.pid);
    out.raw(", \"tid\": 0, \"args\": {\"name\": ");
    out.string(info.process_name);
    out.raw("}}");
    // Kineto's sort metadata: the process by its pid, as Kineto does; threads in the order of the
    // trace's thread list (the order they first recorded), so viewers show them in that order.
    out.raw(",\n    {\"name\": \"process_sort_index\", \"ph\": \"M\", \"ts\": 0, \"pid\": ");
    out.number(info.pid);
    out.raw(", \"tid\": 0, \"args\": {\"sort_index\": ");
    if (info.sort_index) {
        out.number(*info.sort_index);
    } else {
        out.number(info.pid);
    }
    out.raw("}}");
}

void write_trace_events_opening(json_writer& out, const chrome_trace_info& info) {
    out.raw("  \"traceEvents\": [");
    write_process_metadata(out, info, true);
}

void write_thread_metadata(json_writer& out, std::span<const thread_info> threads, const chrome_trace_info& info) {
    std::size_t sort_index = 0;
    for (const thread_info& t : threads) {
        if (t.is_device_track()) continue;  // device_trace writes those
        out.raw(",\n    {\"name\": \"thread_name\", \"ph\": \"M\", \"ts\": 0, \"pid\": ");
        out.number(info.pid);
        out.raw(", \"tid\": ");
        out.number(t.os_tid);
        out.raw(", \"args\": {\"name\": ");
        if (t.name.empty()) {
            out.string("thread " + std::to_string(t.os_tid));
        } else {
            out.string(t.name);
        }
        out.raw("}},\n    {\"name\": \"thread_sort_index\", \"ph\": \"M\", \"ts\": 0, \"pid\": ");
        out.number(info.pid);
        out.raw(", \"tid\": ");
        out.number(t.os_tid);
        out.raw(", \"args\": {\"sort_index\": ");
        out.number(sort_index++);
        out.raw("}}");
    }
}

void write_trace_head(json_writer& out, const chrome_trace_head& head, const chrome_trace_info& info) {
    out.raw("{\n  \"schemaVersion\": 1,\n");
    write_trace_keys(out, head, info);
    write_trace_events_opening(out, info);
    write_thread_metadata(out, head.threads, info);
}

void write_trace_closing_keys(json_writer& out, std::int64_t base_time_ns) {
    out.raw("  \"traceName\": \"stint\",\n  \"displayTimeUnit\": \"ms\",\n  \"baseTimeNanoseconds\": ");
    out.number(base_time_ns);
    out.raw("\n}\n");
    out.flush();
}

void write_trace_end(json_writer& out, std::int64_t base_time_ns) {
    out.raw("\n  ],\n");
    write_trace_closing_keys(out, base_time_ns);
}

void write_point(json_writer& out, event_kind kind, std::string_view name, std::uint64_t id, std::string_view where,
                 std::int64_t ts_ns) {
    const std::string_view phase = kind == event_kind::flow_begin  ? "s"
                                   : kind == event_kind::flow_end  ? "f"
                                   : kind == event_kind::async_begin ? "b"
                                                                     : "e";
    char* o = out.reserve(128 + json_string_bound(name.size()) + where.size());
    o = write_literal(o, ",\n    {\"ph\": \"");
    o = std::copy(phase.begin(), phase.end(), o);
    o = write_literal(o, "\", \"cat\": \"");
    const std::string_view category = category_name(kind);
    o = std::copy(category.begin(), category.end(), o);
    o = write_literal(o, "\", \"name\": ");
    o = write_json_string(o, name);
    o = write_literal(o, ", \"id\": ");
    o = id < (std::uint64_t{1} << 53) ? fmt::format_to(o, FMT_COMPILE("{}"), id)
                                      : fmt::format_to(o, FMT_COMPILE("\"{:#x}\""), id);
    o = std::copy(where.begin(), where.end(), o);
    o = write_microseconds(o, ts_ns);
    o = kind == event_kind::flow_end ? write_literal(o, ", \"bp\": \"e\"}") : write_literal(o, "}");
    out.commit(o);
}

void write_counter_sample(json_writer& out, std::string_view name, const counter_value& value, std::string_view where,
                          std::int64_t ts_ns, std::uint64_t& not_finite) {
    if (value.is_real && !std::isfinite(value.real)) {
        ++not_finite;
        if (std::isnan(value.real)) return;
    }
    char* o = out.reserve(64 + 2 * json_string_bound(name.size()) + where.size());
    o = write_literal(o, ",\n    {\"ph\": \"C\", \"name\": ");
    o = write_json_string(o, name);
    o = std::copy(where.begin(), where.end(), o);
    o = write_microseconds(o, ts_ns);
    o = write_literal(o, ", \"args\": {");
    o = write_json_string(o, name);
    o = write_literal(o, ": ");
    out.commit(o);
    if (value.is_real) {
        out.number(std::isfinite(value.real) ? value.real
                                             : std::copysign(std::numeric_limits<double>::max(), value.real));
    } else {
        out.number(value.integer);
    }
    out.raw("}}");
}

void write_global_note(json_writer& out, std::uint64_t count, std::string_view what, std::uint64_t pid,
                       std::int64_t ts_ns) {
    out.raw(",\n    {\"ph\": \"i\", \"s\": \"g\", \"name\": \"stint: ");
    out.number(count);
    out.raw(" ");
    out.raw(what);
    out.raw("\", \"pid\": ");
    out.number(pid);
    out.raw(", \"tid\": 0, \"ts\": ");
    out.microseconds(ts_ns);
    out.raw("}");
}

void write_not_finite_note(json_writer& out, std::uint64_t count, std::uint64_t pid, std::int64_t ts_ns) {
    if (count == 0) return;
    write_global_note(out, count, "counter samples not finite: NaN left out, infinity written as the largest finite value",
                      pid, ts_ns);
}

void write_trace_events(json_writer& out, const event_list& events, const chrome_trace_info& info,
                        bool first) {
    write_process_metadata(out, info, first);
    write_thread_metadata(out, events.threads(), info);
    device_trace device(events, info.pid, info.device_pid_base, info.flow_id_base);
    device.write_metadata(out, info.process_name);
    trace_timeline timeline(events);
    counter_samples counters;
    std::uint64_t not_finite = 0;
    const auto write_samples = [&](const event& e, const std::string& where) {
        counters.of(events, e, [&](std::string_view name, const counter_value& value, bool) {
            write_counter_sample(out, name, value, where, e.start_ns, not_finite);
        });
    };
    for (const event& e : events) {
        // One capacity check per event: the fixed text, the name, the thread, five numbers.
        const std::string& thread = device.where(e);
        if (is_point_kind(e.kind)) {
            write_point(out, e.kind, e.name, info.flow_id_base + events.point_id(e), thread, e.start_ns);
            continue;
        }
        if (e.kind == event_kind::counter) {
            write_samples(e, thread);
            continue;
        }
        char* o = out.reserve(160 + json_string_bound(e.name.size()) + thread.size());
        const bool instant = e.kind == event_kind::instant || is_memory_kind(e.kind);
        o = instant ? write_literal(o, ",\n    {\"ph\": \"i\", \"s\": \"t\", \"cat\": \"")
                    : write_literal(o, ",\n    {\"ph\": \"X\", \"cat\": \"");
        const std::string_view category = category_name(e.kind);
        o = std::copy(category.begin(), category.end(), o);
        o = write_literal(o, "\", \"name\": ");
        o = write_json_string(o, e.name);
        o = std::copy(thread.begin(), thread.end(), o);
        o = write_microseconds(o, e.start_ns);
        if (!instant) {
            o = write_literal(o, ", \"dur\": ");
            o = write_trace_duration(o, timeline.duration(events.index_of(e)), e.duration_ns());
        }
        o = write_literal(o, ", \"args\": {");
        if (const memory_record* memory = events.memory_of(e)) {
            out.commit(o);
            write_memory_args(out, e, *memory);
            out.raw("}}");
            write_samples(e, thread);  // the device's totals, as counter tracks under the ops
            continue;
        }
        if (e.device_info != no_index) {
            // A device event or a CUDA API call: its launcher's External id and CUPTI's details.
            out.commit(o);
            device.write_args(out, e);
            out.raw("}}");
            if (e.on_device()) device.write_flows(out, e);
            continue;
        }
        // Kineto writes no "External id" of 0 (it would link unrelated events).
        if (e.id != 0) {
            o = write_literal(o, "\"External id\": ");
            o = fmt::format_to(o, FMT_COMPILE("{}"), e.id);
            o = write_literal(o, ", ");
        }
        o = write_literal(o, "\"Record function id\": ");
        o = fmt::format_to(o, FMT_COMPILE("{}"), e.id);
        out.commit(o);
        if (const event_args* args = events.args(e)) write_event_args(out, *args);
        if (const call_stack stack = events.stack(e); !stack.empty()) {
            // Kineto's "Call stack": the frames innermost first, each followed by ';'. Written frame
            // by frame: a text per stack would cost the square of the depth for nested scopes.
            out.raw(", \"Call stack\": \"");
            for (const std::string& frame : stack) {
                out.string_part(frame);
                out.raw(";");
            }
            out.raw("\"");
        }
        out.raw("}}");
    }
    write_not_finite_note(out, not_finite, info.pid, 0);  // at the session's start, as from the records
    if (const std::uint64_t lost = events.device().loss.lost(); lost != 0) {
        std::int64_t first_ns = events.empty() ? 0 : events[0].start_ns;
        for (const event& e : events) first_ns = std::min(first_ns, e.start_ns);
        write_global_note(out, lost, "device records lost", info.pid, first_ns);
    }
}

chrome_trace_head chrome_trace_head::of(const event_list& events) noexcept {
    return {events.recorded(),       events.dropped(),      events.late(),    &events.device(),
            events.memory_dropped(), events.memory_peaks(), events.threads(), events.empty(),
            std::nullopt,            events.unmatched()};
}

void write_chrome_trace_to(json_writer& out, const event_list& events, const chrome_trace_info& info) {
    out.raw("{\n  \"schemaVersion\": 1,\n");
    write_trace_keys(out, chrome_trace_head::of(events), info);
    out.raw("  \"traceEvents\": [");
    write_trace_events(out, events, info, true);
    write_trace_end(out, events.base_time_ns());
}

void write_chrome_trace_file(const std::string& path, const event_list& events, const chrome_trace_info& info) {
    output_file file(path);
    write_chrome_trace(file, events, info);
    file.commit();
}

}  // namespace stint::detail
