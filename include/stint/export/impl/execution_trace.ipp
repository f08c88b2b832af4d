#pragma once
// execution_trace_writer's bodies: the ET header, each span's op nodes, the root node and the end.
#include "stint/export/execution_trace.hpp"

#include <algorithm>  // std::reverse, std::min
#include <chrono>     // std::chrono::steady_clock
#include <cstddef>    // std::ptrdiff_t
#include <ctime>      // std::time, std::tm, std::strftime, localtime_r
#include <utility>    // std::pair

#include "stint/detail/export_macros.hpp"
#include "stint/detail/platform.hpp"

namespace stint::detail {

execution_trace_writer::execution_trace_writer(const std::string& path)
    : file_(path), out_(file_) {
    out_.raw("{\n  \"schema\": \"");
    out_.raw(et_schema);
    out_.raw("\", \"pid\": ");
    out_.number(current_pid());
    out_.raw(", \"time\": ");
    out_.string(local_time_text());
    out_.raw(", \"start_ts\": ");
    out_.number(steady_milliseconds());
    out_.raw(",\n  \"nodes\": [");
    guarded([&] { out_.flush(); });
}

void execution_trace_writer::append(const event_list& events) {
    if (failed_) return;  // an earlier write failed and threw; the file is already lost
    guarded([&] {
        ++spans_;
        recorded_ += events.recorded();
        dropped_ += events.dropped();
        late_ += events.late();
        // (event, its parent's node id; 0: the thread's node, made when its first op is written)
        std::vector<std::pair<event_index, std::uint64_t>> stack;
        for (const event& top : events) {
            if (!top.is_top_level() || events.threads()[top.thread].is_device_track()) continue;
            const std::uint64_t tid = events.threads()[top.thread].os_tid;
            stack.emplace_back(events.index_of(top), 0);
            while (!stack.empty()) {
                auto [i, parent] = stack.back();
                stack.pop_back();
                const event& e = events[i];
                std::uint64_t id = parent;  // a non-node (an instant, an API call) passes its parent on
                if (is_execution_trace_node(e.kind)) {
                    if (parent == 0) parent = thread_node(tid);
                    id = next_id_++;
                    write_op_node(e, id, parent, tid, events.args(e));
                }
                // Children in reverse onto the stack, so that they are written in order.
                const std::size_t first = stack.size();
                for (event_index c = e.first_child; c != no_index; c = events[c].next_sibling) {
                    stack.emplace_back(c, id);
                }
                std::reverse(stack.begin() + static_cast<std::ptrdiff_t>(first), stack.end());
            }
        }
        out_.flush();
        file_.idle();  // no compressing thread waits between spans
    });
}

void execution_trace_writer::finish() {
    if (failed_) return;
    guarded([&] {
        write_bare_node(et_process_node, et_root_id, et_root_id, 0);
        out_.raw("}\n  ],\n  \"stint\": {\"version\": \"" STINT_VERSION_STRING "\", \"spans\": ");
        out_.number(spans_);
        out_.raw(", \"nodes\": ");
        out_.number(nodes_);
        out_.raw(", \"recorded\": ");
        out_.number(recorded_);
        out_.raw(", \"dropped\": ");
        out_.number(dropped_);
        out_.raw(", \"late\": ");
        out_.number(late_);
        out_.raw("},\n  \"finish_ts\": ");
        out_.number(steady_milliseconds());
        out_.raw("\n}\n");
        out_.flush();
        file_.commit();
    });
}

std::int64_t execution_trace_writer::steady_milliseconds() {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

std::string execution_trace_writer::local_time_text() {
    const std::time_t now = std::time(nullptr);
    std::tm local{};
    if (localtime_r(&now, &local) == nullptr) return {};
    char text[64];
    const std::size_t n = std::strftime(text, sizeof(text), "%Y-%m-%d %H:%M:%S", &local);
    return {text, n};
}

std::uint64_t execution_trace_writer::thread_node(std::uint64_t tid) {
    auto [it, added] = thread_nodes_.try_emplace(tid, 0);
    if (!added) return it->second;
    it->second = next_id_++;
    write_bare_node(et_thread_node, it->second, et_root_id, tid);
    out_.raw("},");
    return it->second;
}

void execution_trace_writer::write_bare_node(std::string_view name, std::uint64_t id, std::uint64_t parent, std::uint64_t tid) {
    write_node_start(name, id, parent);
    out_.raw(R"(, "inputs": {"values": [], "shapes": [], "types": [], "strides": []})");
    out_.raw(R"(, "outputs": {"values": [], "shapes": [], "types": [], "strides": []})");
    write_attrs(0, -1, et_scope_user, tid);
}

void execution_trace_writer::write_node_start(std::string_view name, std::uint64_t id, std::uint64_t parent) {
    ++nodes_;
    out_.raw("\n    {\"id\": ");
    out_.number(id);
    out_.raw(", \"name\": ");
    out_.string(name);
    out_.raw(", \"ctrl_deps\": ");
    out_.number(parent);
}

void execution_trace_writer::write_attrs(std::uint64_t rf_id,
                                         std::int64_t seq_id,
                                         std::uint64_t scope,
                                         std::uint64_t tid,
                                         std::uint64_t fw_tid) {
    out_.raw(R"(, "attrs": [{"name": "rf_id", "type": "uint64", "value": )");
    out_.number(rf_id);
    out_.raw(R"(}, {"name": "fw_parent", "type": "uint64", "value": 0}, {"name": "seq_id", "type": "int64", )"
             R"("value": )");
    out_.number(seq_id);
    out_.raw(R"(}, {"name": "scope", "type": "uint64", "value": )");
    out_.number(scope);
    out_.raw(R"(}, {"name": "tid", "type": "uint64", "value": )");
    out_.number(tid);
    out_.raw(R"(}, {"name": "fw_tid", "type": "uint64", "value": )");
    out_.number(fw_tid);
    out_.raw(R"(}, )"
             R"({"name": "op_schema", "type": "string", "value": ""}, )"
             R"({"name": "kernel_backend", "type": "string", "value": ""}, )"
             R"({"name": "kernel_file", "type": "string", "value": ""}])");
}

std::optional<std::int64_t> execution_trace_writer::integer_arg(const event_args* args, std::string_view name) {
    const named_arg* a = args != nullptr ? args->find_arg(name) : nullptr;
    if (a == nullptr || (a->type != arg_type::integer && a->type != arg_type::unsigned_integer)) return std::nullopt;
    return a->integer;
}

void execution_trace_writer::write_op_node(const event& e,
                                           std::uint64_t id,
                                           std::uint64_t parent,
                                           std::uint64_t tid,
                                           const event_args* args) {
    write_node_start(e.name, id, parent);
    static const std::vector<op_input> none;
    out_.raw(", \"inputs\": ");
    write_values(args != nullptr ? args->inputs : none);
    out_.raw(", \"outputs\": ");
    write_values(args != nullptr ? args->outputs : none);
    write_attrs(e.id, integer_arg(args, "Sequence number").value_or(-1),
                e.kind == event_kind::cpu_op ? et_scope_function : et_scope_user, tid,
                static_cast<std::uint64_t>(integer_arg(args, "Fwd thread id").value_or(0)));
    out_.raw("},");
}

void execution_trace_writer::write_values(const std::vector<op_input>& values) {
    const std::size_t n = std::min(values.size(), et_max_list);
    out_.raw("{\"values\": [");
    for (std::size_t i = 0; i < n; ++i) {
        if (i != 0) out_.raw(", ");
        write_value(values[i]);
    }
    out_.raw("], \"shapes\": [");
    for (std::size_t i = 0; i < n; ++i) {
        if (i != 0) out_.raw(", ");
        write_shape(values[i], false);
    }
    out_.raw("], \"types\": [");
    for (std::size_t i = 0; i < n; ++i) {
        if (i != 0) out_.raw(", ");
        out_.raw("\"");
        write_type(values[i]);
        out_.raw("\"");
    }
    out_.raw("], \"strides\": [");
    for (std::size_t i = 0; i < n; ++i) {
        if (i != 0) out_.raw(", ");
        write_shape(values[i], true);
    }
    out_.raw("]}");
}

std::size_t execution_trace_writer::list_size(const op_input& v) noexcept {
    std::size_t n = 0;
    if (v.kind == input_kind::tensor_list) n = v.tensors.size();
    if (v.kind == input_kind::scalar_list) {
        n = v.values_type == scalar_type::real ? v.reals.size() : v.integers.size();
    }
    return std::min(n, et_max_list);
}

void execution_trace_writer::write_int_list(const std::vector<std::int64_t>& values) {
    out_.raw("[");
    for (std::size_t i = 0; i < values.size(); ++i) {
        if (i != 0) out_.raw(",");
        out_.number(values[i]);
    }
    out_.raw("]");
}

void execution_trace_writer::write_shape(const op_input& v, bool strides) {
    if (v.kind == input_kind::tensor) return write_int_list(strides ? v.strides : v.dims);
    if (v.kind != input_kind::tensor_list && v.kind != input_kind::scalar_list) return out_.raw("[]");
    out_.raw("[");
    const std::size_t n = list_size(v);
    for (std::size_t i = 0; i < n; ++i) {
        if (i != 0) out_.raw(",");
        if (v.kind == input_kind::tensor_list) {
            write_shape(v.tensors[i], strides);
        } else {
            out_.raw("[]");
        }
    }
    out_.raw("]");
}

void execution_trace_writer::write_type(const op_input& v) {
    switch (v.kind) {
        case input_kind::tensor:
            out_.raw("Tensor(");
            out_.string_part(v.dtype);
            out_.raw(")");
            return;
        case input_kind::tensor_list:
        case input_kind::scalar_list: {
            out_.raw("GenericList[");
            const std::size_t n = list_size(v);
            for (std::size_t i = 0; i < n; ++i) {
                if (i != 0) out_.raw(",");
                if (v.kind == input_kind::tensor_list) {
                    write_type(v.tensors[i]);
                } else {
                    out_.raw(scalar_type_name(v.values_type));
                }
            }
            out_.raw("]");
            return;
        }
        case input_kind::scalar: out_.raw(scalar_type_name(v.values_type)); return;
        case input_kind::string: out_.raw("String"); return;
        case input_kind::none: out_.raw("None"); return;
        case input_kind::other: out_.raw("Object"); return;
    }
}

std::string_view execution_trace_writer::scalar_type_name(scalar_type type) noexcept {
    switch (type) {
        case scalar_type::integer:
        case scalar_type::unsigned_integer: return "Int";
        case scalar_type::real: return "Double";
        case scalar_type::boolean: return "Bool";
    }
    return "Int";
}

void execution_trace_writer::write_scalar(const op_input& v, std::size_t i) {
    switch (v.values_type) {
        case scalar_type::integer: out_.number(v.integers[i]); return;
        case scalar_type::unsigned_integer: out_.number(static_cast<std::uint64_t>(v.integers[i])); return;
        case scalar_type::boolean: out_.boolean(v.integers[i] != 0); return;
        case scalar_type::real: out_.number(v.reals[i]); return;  // inf and nan as strings, as torch
    }
}

void execution_trace_writer::write_value(const op_input& v) {
    switch (v.kind) {
        case input_kind::tensor: return write_tensor(v);
        case input_kind::tensor_list:
        case input_kind::scalar_list: {
            out_.raw("[");
            const std::size_t n = list_size(v);
            for (std::size_t i = 0; i < n; ++i) {
                if (i != 0) out_.raw(",");
                if (v.kind == input_kind::tensor_list) {
                    write_value(v.tensors[i]);
                } else {
                    write_scalar(v, i);
                }
            }
            out_.raw("]");
            return;
        }
        case input_kind::scalar:
            if (v.integers.empty() && v.reals.empty()) return out_.raw("0");
            return write_scalar(v, 0);
        case input_kind::string: return out_.string(v.text);
        case input_kind::none: return out_.raw("\"<None>\"");
        case input_kind::other: return out_.raw("\"<Object>\"");
    }
}

void execution_trace_writer::write_tensor(const op_input& v) {
    std::int64_t numel = 1;
    for (std::int64_t d : v.dims) numel *= d;
    out_.raw("[");
    if (v.identity && v.identity->itemsize != 0) {
        const tensor_identity& id = *v.identity;
        out_.number(id_of(tensor_ids_, id.key));
        out_.raw(",");
        out_.number(id_of(storage_ids_, id.storage));
        out_.raw(",");
        out_.number(id.offset);
        out_.raw(",");
        out_.number(numel);
        out_.raw(",");
        out_.number(id.itemsize);
        out_.raw(",\"");
        out_.raw(device_type_name(id.device.type));
        if (id.device.type != device_type::cpu) {
            out_.raw(":");
            out_.number(id.device.index);
        }
        out_.raw("\"]");
        return;
    }
    // No address captured (its traits gave none): a tensor of its own, no storage, as torch writes a
    // tensor without storage. An address without an item size keeps its tensor id, and no storage.
    out_.number(v.identity ? id_of(tensor_ids_, v.identity->key) : next_id_++);
    out_.raw(",0,0,");
    out_.number(numel);
    out_.raw(",0,\"\"]");
}

std::uint64_t execution_trace_writer::id_of(std::unordered_map<std::uint64_t, std::uint64_t>& ids, std::uint64_t key) {
    auto [it, added] = ids.try_emplace(key, 0);
    if (added) it->second = next_id_++;
    return it->second;
}


}  // namespace stint::detail
