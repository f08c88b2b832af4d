#pragma once
// Chrome / Perfetto trace JSON in Kineto's shape (design §4), streamed: the document is never built
// in memory, and it lands under its final name only when complete.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "stint/analysis/event_list.hpp"
#include "stint/detail/export_macros.hpp"
#include "stint/detail/platform.hpp"
#include "stint/export/json_writer.hpp"
#include "stint/export/output_file.hpp"

namespace stint::detail {

/// What a trace carries besides the events.
struct chrome_trace_info {
    std::uint64_t pid = 0;
    std::uint64_t truncated_names = 0;
    /// Top-level keys in insertion order; values are JSON text already validated.
    std::vector<std::pair<std::string, std::string>> metadata_json;
};

/// An op's captured inputs as Kineto writes them: "Input Dims" (a TensorList nests one list per
/// tensor), "Input Strides", "Input type", "Concrete Inputs" (when captured); stint adds
/// "Inputs truncated": true when the capture hit a bound.
template <class Writer>
void write_input_args(Writer& out, const event_args& args) {
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
    out.raw(", \"Input Dims\": ");
    shapes(args.input_dims, args.tensor_list_dims);
    out.raw(", \"Input Strides\": ");
    shapes(args.input_strides, args.tensor_list_strides);
    out.raw(", \"Input type\": ");
    strings(args.input_types);
    if (!args.concrete_inputs.empty()) {
        out.raw(", \"Concrete Inputs\": ");
        strings(args.concrete_inputs);
    }
    if (args.truncated) out.raw(", \"Inputs truncated\": true");
}

/// Writes the trace to any sink with `write(std::string_view)`.
template <class Sink>
void write_chrome_trace(Sink& sink, const event_list& events, const chrome_trace_info& info) {
    json_writer out(sink);
    out.raw("{\n  \"schemaVersion\": 1,\n  \"deviceProperties\": [],\n");
    for (const auto& [key, json] : info.metadata_json) {
        out.raw("  ");
        out.string(key);
        out.raw(": ");
        out.raw(json);
        out.raw(",\n");
    }
    out.raw("  \"stint\": {\"version\": \"" STINT_VERSION_STRING "\", \"recorded\": ");
    out.number(events.recorded());
    out.raw(", \"dropped\": ");
    out.number(events.dropped());
    out.raw(", \"truncated_names\": ");
    out.number(info.truncated_names);
    out.raw(", \"threads\": [");
    bool first = true;
    for (const thread_info& t : events.threads()) {
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
    out.raw(first ? "]},\n" : "\n  ]},\n");
    if (events.empty()) out.raw("  \"WARNING\": [\"No Valid Trace Events\"],\n");

    out.raw("  \"traceEvents\": [\n    {\"name\": \"process_name\", \"ph\": \"M\", \"ts\": 0, \"pid\": ");
    out.number(info.pid);
    out.raw(", \"tid\": 0, \"args\": {\"name\": \"stint\"}}");
    for (const thread_info& t : events.threads()) {
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
        out.raw("}}");
    }
    for (const event& e : events) {
        const bool instant = e.kind == event_kind::instant;
        out.raw(instant ? ",\n    {\"ph\": \"i\", \"s\": \"t\", \"cat\": \"" : ",\n    {\"ph\": \"X\", \"cat\": \"");
        out.raw(category_name(e.kind));
        out.raw("\", \"name\": ");
        out.string(e.name);
        out.raw(", \"pid\": ");
        out.number(info.pid);
        out.raw(", \"tid\": ");
        out.number(events.thread_of(e).os_tid);
        out.raw(", \"ts\": ");
        out.microseconds(e.start_ns);
        if (!instant) {
            out.raw(", \"dur\": ");
            out.microseconds(e.duration_ns());
        }
        out.raw(", \"args\": {\"External id\": ");
        out.number(e.id);
        out.raw(", \"Record function id\": ");
        out.number(e.id);
        if (const event_args* args = events.args(e)) write_input_args(out, *args);
        out.raw("}}");
    }
    out.raw("\n  ],\n  \"traceName\": \"stint\",\n  \"displayTimeUnit\": \"ms\",\n  \"baseTimeNanoseconds\": ");
    out.number(events.base_time_ns());
    out.raw("\n}\n");
    out.flush();
}

/// Writes the trace to `path` (gzip when it ends in ".gz") through a temporary file renamed into
/// place; throws std::system_error naming the path and the OS reason.
inline void write_chrome_trace_file(const std::string& path, const event_list& events, const chrome_trace_info& info) {
    output_file file(path);
    write_chrome_trace(file, events, info);
    file.commit();
}

}  // namespace stint::detail
