#pragma once
// A schema check for execution traces (ET): the rules torch's ExecutionTraceObserver follows when it
// writes one (torch/csrc/profiler/standalone/execution_trace_observer.cpp: initExecutionTraceStart,
// writeJsonNode, recordOperatorStart, convertIValue, getScalarValue, finalizeExecutionTraceOutput),
// checked on the parsed file, independently of stint's writer. execution_trace_problems lists every
// violation as one line that names the node and the rule; check_execution_trace_file reads a file
// (gzip when the name ends in .gz) and fails the running doctest case with each line.

#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include <nlohmann/json.hpp>

#include "test_util.hpp"

namespace stint_test {

inline constexpr std::string_view et_schema_version = "1.1.1-chakra.0.0.4";
inline constexpr std::string_view et_process_node = "[pytorch|profiler|execution_trace|process]";
inline constexpr std::string_view et_thread_node = "[pytorch|profiler|execution_trace|thread]";
// convertIValue appends element j and only then stops when j >= kMaxNumElements (4096): a longer list
// keeps 4097 elements. Tuples are not capped.
inline constexpr std::size_t et_max_list_elements = 4097;
// at::RecordScope (ATen/record_function.h): USER_SCOPE is the root's and the thread nodes' scope;
// NUM_SCOPES bounds every scope.
inline constexpr std::uint64_t et_user_scope = 7;
inline constexpr std::uint64_t et_scope_count = 10;

namespace et_detail {

using json = nlohmann::json;

struct attr_spec {
    std::string_view name;
    std::string_view type;
};

// writeJsonNode writes these first, in this order; comms attrs (and, in newer torch, tensor_range)
// may follow.
inline constexpr std::array<attr_spec, 9> node_attrs{{{"rf_id", "uint64"},
                                                      {"fw_parent", "uint64"},
                                                      {"seq_id", "int64"},
                                                      {"scope", "uint64"},
                                                      {"tid", "uint64"},
                                                      {"fw_tid", "uint64"},
                                                      {"op_schema", "string"},
                                                      {"kernel_backend", "string"},
                                                      {"kernel_file", "string"}}};
inline constexpr std::string_view attr_order =
    "rf_id, fw_parent, seq_id, scope, tid, fw_tid, op_schema, kernel_backend, kernel_file";

inline std::string show(const json& value) {
    std::string text = value.dump();
    if (text.size() > 80) text = text.substr(0, 77) + "...";
    return text;
}

inline std::string in_quotes(std::string_view text) { return "'" + std::string(text) + "'"; }

// Hand-built json stores 5 as a signed integer, parsed json as an unsigned one: accept both.
inline bool is_uint(const json& v) {
    return v.is_number_unsigned() || (v.is_number_integer() && v.get<std::int64_t>() >= 0);
}

inline bool is_int64(const json& v) {
    return v.is_number_integer() &&
           (!v.is_number_unsigned() ||
            v.get<std::uint64_t>() <= static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()));
}

inline bool matches_type(std::string_view type, const json& v) {
    if (type == "uint64") return is_uint(v);
    if (type == "int64") return is_int64(v);
    if (type == "string") return v.is_string();
    return false;
}

// "%Y-%m-%d %X" in the C locale: 2025-11-25 08:59:03.
inline bool is_time_text(const std::string& text) {
    constexpr std::string_view form = "dddd-dd-dd dd:dd:dd";
    if (text.size() != form.size()) return false;
    for (std::size_t i = 0; i < form.size(); ++i) {
        const bool digit = std::isdigit(static_cast<unsigned char>(text[i])) != 0;
        if (form[i] == 'd' ? !digit : text[i] != form[i]) return false;
    }
    return true;
}

// c10::Device::str(): a lower-case type name, then ":<index>" when it has one ("cpu", "cuda:0").
inline bool is_device_name(const std::string& text) {
    const std::size_t colon = text.find(':');
    const std::string type = text.substr(0, colon);
    if (type.empty()) return false;
    for (char c : type) {
        if (!(std::islower(static_cast<unsigned char>(c)) != 0 || c == '_')) return false;
    }
    if (colon == std::string::npos) return true;
    const std::string index = text.substr(colon + 1);
    return !index.empty() && std::all_of(index.begin(), index.end(), [](char c) {
        return std::isdigit(static_cast<unsigned char>(c)) != 0;
    });
}

// The element types inside "GenericList[...]" or "Tuple[...]": split at the commas outside brackets and
// parentheses (elements may be lists, tuples or tensors themselves). Empty text names no element.
inline std::optional<std::vector<std::string>> split_types(std::string_view inner) {
    std::vector<std::string> parts;
    if (inner.empty()) return parts;
    int depth = 0;
    std::size_t start = 0;
    for (std::size_t i = 0; i < inner.size(); ++i) {
        const char c = inner[i];
        if (c == '[' || c == '(') {
            ++depth;
        } else if (c == ']' || c == ')') {
            if (--depth < 0) return std::nullopt;
        } else if (c == ',' && depth == 0) {
            parts.emplace_back(inner.substr(start, i - start));
            start = i + 1;
        }
    }
    if (depth != 0) return std::nullopt;
    parts.emplace_back(inner.substr(start));
    return parts;
}

enum class node_kind { invalid, root, thread, op };

struct node_record {
    std::string where;  // "node 5 (aten::add)", or "nodes[3]" while the id is unreadable
    node_kind kind = node_kind::invalid;
    std::optional<std::uint64_t> id;
    std::optional<std::uint64_t> ctrl_deps;
    std::map<std::string, json, std::less<>> attrs;  // the well-typed attrs, by name

    [[nodiscard]] const json* attr(std::string_view name) const {
        const auto it = attrs.find(name);
        return it == attrs.end() ? nullptr : &it->second;
    }
};

struct object_id_use {
    std::string where;
    std::string_view field;  // "tensor_id" or "storage_id"
    std::uint64_t id = 0;
};

class checker {
public:
    std::vector<std::string> problems;

    void run(const json& et) {
        if (!et.is_object()) {
            add("top level", "is " + show(et) + ", expected a JSON object");
            return;
        }
        top_level(et);
        const auto nodes_it = et.find("nodes");
        if (nodes_it == et.end() || !nodes_it->is_array()) return;
        for (std::size_t i = 0; i < nodes_it->size(); ++i) node(i, (*nodes_it)[i]);
        graph();
        object_ids();
    }

private:
    std::vector<node_record> nodes_;
    std::map<std::uint64_t, std::size_t> by_id_;  // the first node with each id
    std::vector<object_id_use> object_ids_;

    void add(const std::string& where, const std::string& what) { problems.push_back(where + ": " + what); }

    void exact_keys(const std::string& where, const std::string& prefix, const json& object,
                    const std::vector<std::string_view>& keys, std::string_view allowed) {
        for (std::string_view key : keys) {
            if (!object.contains(key)) add(where, prefix + "missing key " + in_quotes(key));
        }
        for (const auto& item : object.items()) {
            if (std::find(keys.begin(), keys.end(), item.key()) == keys.end()) {
                add(where, prefix + "unexpected key " + in_quotes(item.key()) + " (" + std::string(allowed) + ")");
            }
        }
    }

    void top_level(const json& et) {
        const std::string where = "top level";
        for (std::string_view key : {"schema", "pid", "time", "start_ts", "nodes", "finish_ts"}) {
            if (!et.contains(key)) add(where, "missing key " + in_quotes(key));
        }
        for (const auto& item : et.items()) {
            static const std::set<std::string, std::less<>> known{"schema", "pid",   "time", "start_ts",
                                                                  "nodes",  "finish_ts", "stint"};
            if (!known.contains(item.key())) {
                add(where, "unexpected key " + in_quotes(item.key()) +
                               " (torch writes schema, pid, time, start_ts, nodes, finish_ts; stint adds only stint)");
            }
        }
        if (const auto it = et.find("schema"); it != et.end() && *it != json(std::string(et_schema_version))) {
            add(where, "schema is " + show(*it) + ", expected \"" + std::string(et_schema_version) + "\"");
        }
        if (const auto it = et.find("pid"); it != et.end() && !it->is_number_integer()) {
            add(where, "pid is " + show(*it) + ", expected an integer");
        }
        if (const auto it = et.find("time"); it != et.end() && !(it->is_string() && is_time_text(*it))) {
            add(where, "time is " + show(*it) + ", expected a string \"YYYY-MM-DD HH:MM:SS\"");
        }
        std::optional<std::int64_t> start, finish;
        for (std::string_view key : {"start_ts", "finish_ts"}) {
            const auto it = et.find(key);
            if (it == et.end()) continue;
            if (!is_int64(*it)) {
                add(where, std::string(key) + " is " + show(*it) + ", expected an integer (milliseconds)");
                continue;
            }
            (key == "start_ts" ? start : finish) = it->get<std::int64_t>();
        }
        if (start && finish && *finish < *start) {
            add(where, "finish_ts " + std::to_string(*finish) + " is before start_ts " + std::to_string(*start));
        }
        if (const auto it = et.find("stint"); it != et.end() && !it->is_object()) {
            add(where, "stint is " + show(*it) + ", expected an object");
        }
        if (const auto it = et.find("nodes"); it != et.end() && !it->is_array()) {
            add(where, "nodes is " + show(*it) + ", expected an array");
        }
    }

    void node(std::size_t index, const json& n) {
        node_record rec;
        rec.where = "nodes[" + std::to_string(index) + "]";
        if (!n.is_object()) {
            add(rec.where, "is " + show(n) + ", expected an object");
            nodes_.push_back(std::move(rec));
            return;
        }
        const auto id = n.find("id");
        const auto name = n.find("name");
        if (id != n.end() && is_uint(*id)) {
            rec.id = id->get<std::uint64_t>();
            rec.where = "node " + std::to_string(*rec.id);
            if (name != n.end() && name->is_string()) rec.where += " (" + name->get<std::string>() + ")";
        }
        exact_keys(rec.where, "", n, {"id", "name", "ctrl_deps", "inputs", "outputs", "attrs"},
                   "a node has exactly id, name, ctrl_deps, inputs, outputs, attrs");
        if (id != n.end() && !rec.id) add(rec.where, "id is " + show(*id) + ", expected an unsigned integer");
        if (name != n.end() && !name->is_string()) add(rec.where, "name is " + show(*name) + ", expected a string");
        if (const auto ctrl = n.find("ctrl_deps"); ctrl != n.end()) {
            if (is_uint(*ctrl)) {
                rec.ctrl_deps = ctrl->get<std::uint64_t>();
            } else {
                add(rec.where, "ctrl_deps is " + show(*ctrl) + ", expected an unsigned integer");
            }
        }
        for (std::string_view key : {"inputs", "outputs"}) {
            if (const auto it = n.find(key); it != n.end()) io(rec.where, std::string(key), *it);
        }
        if (const auto it = n.find("attrs"); it != n.end()) attrs(rec, *it);
        if (rec.id) {
            const std::string text = name != n.end() && name->is_string() ? name->get<std::string>() : "";
            rec.kind = text == et_process_node ? node_kind::root
                       : text == et_thread_node ? node_kind::thread
                                                : node_kind::op;
        }
        nodes_.push_back(std::move(rec));
    }

    void io(const std::string& where, const std::string& key, const json& io) {
        if (!io.is_object()) {
            add(where, key + " is " + show(io) + ", expected an object {values, shapes, types, strides}");
            return;
        }
        exact_keys(where, key + ": ", io, {"values", "shapes", "types", "strides"},
                   "expected exactly values, shapes, types, strides");
        bool arrays = true;
        for (std::string_view part : {"values", "shapes", "types", "strides"}) {
            const auto it = io.find(part);
            if (it == io.end()) {
                arrays = false;
            } else if (!it->is_array()) {
                add(where, key + "." + std::string(part) + " is " + show(*it) + ", expected an array");
                arrays = false;
            }
        }
        if (!arrays) return;
        const json& values = io["values"];
        const json& shapes = io["shapes"];
        const json& types = io["types"];
        const json& strides = io["strides"];
        if (values.size() != shapes.size() || values.size() != types.size() || values.size() != strides.size()) {
            add(where, key + ": values, shapes, types and strides have " + std::to_string(values.size()) + ", " +
                           std::to_string(shapes.size()) + ", " + std::to_string(types.size()) + " and " +
                           std::to_string(strides.size()) + " entries, expected one count");
            return;
        }
        for (std::size_t i = 0; i < values.size(); ++i) {
            const std::string at = where + ": " + key + "[" + std::to_string(i) + "]";
            if (!types[i].is_string()) {
                add(where, key + ".types[" + std::to_string(i) + "] is " + show(types[i]) + ", expected a string");
                continue;
            }
            value(at, types[i].get<std::string>(), values[i], shapes[i], strides[i]);
        }
    }

    // One input or output (or a list's element) by its type, as convertIValue writes it.
    void value(const std::string& where, const std::string& type, const json& v, const json& shape,
               const json& stride) {
        const std::string at = where + " (" + type + ")";
        if (type.empty()) {
            add(where, "type is empty");
            return;
        }
        if (type == "Tensor" || type.starts_with("Tensor(")) {
            tensor(at, type, v, shape, stride);
            return;
        }
        if (type.starts_with("GenericList[") || type.starts_with("Tuple[")) {
            sequence(where, at, type, v, shape, stride);
            return;
        }
        if (shape != json::array()) add(at, "shape " + show(shape) + " is not [] (only tensors have shapes)");
        if (stride != json::array()) add(at, "strides " + show(stride) + " are not [] (only tensors have strides)");
        if (type == "Int") {
            if (!v.is_number_integer()) add(at, "value " + show(v) + " is not an integer");
        } else if (type == "Double") {
            static const std::set<std::string, std::less<>> non_finite{"inf", "-inf", "nan", "-nan"};
            if (!(v.is_number() || (v.is_string() && non_finite.contains(v.get<std::string>())))) {
                add(at, "value " + show(v) + " is neither a number nor one of \"inf\", \"-inf\", \"nan\", \"-nan\"");
            }
        } else if (type == "Bool") {
            if (!v.is_boolean()) add(at, "value " + show(v) + " is not true or false");
        } else if (type == "String") {
            if (!v.is_string()) add(at, "value " + show(v) + " is not a string");
        } else if (type == "Device") {
            if (!(v.is_string() && is_device_name(v.get<std::string>()))) {
                add(at, "value " + show(v) + " is not a device name like \"cpu\" or \"cuda:0\"");
            }
        } else if (!(v.is_string() && v.get<std::string>() == "<" + type + ">")) {
            // getScalarValue writes any other IValue (None included) as its tag in angle brackets.
            add(at, "value " + show(v) + " is not \"<" + type + ">\"");
        }
    }

    void tensor(const std::string& at, const std::string& type, const json& v, const json& shape,
                const json& stride) {
        if (type.size() <= std::string_view("Tensor()").size() || !type.ends_with(")")) {
            add(at, "the type names no dtype, expected Tensor(<dtype>)");
        }
        check_tensor_value(at, v);
        const bool shape_ok = shape.is_array() && std::all_of(shape.begin(), shape.end(), [](const json& d) {
            return is_uint(d);
        });
        const bool stride_ok = stride.is_array() && std::all_of(stride.begin(), stride.end(), [](const json& d) {
            return d.is_number_integer();
        });
        if (!shape_ok) add(at, "shape " + show(shape) + " is not an array of non-negative integers");
        if (!stride_ok) add(at, "strides " + show(stride) + " are not an array of integers");
        if (shape_ok && stride_ok && !stride.empty() && stride.size() != shape.size()) {
            add(at, "strides " + show(stride) + " have " + std::to_string(stride.size()) + " entries, shape " +
                        show(shape) + " has " + std::to_string(shape.size()));
        }
        // numel must be the shape's product once the tensor has storage and a shape (a 0-dim tensor has none).
        if (!shape_ok || shape.empty() || !v.is_array() || v.size() != 6 || !is_uint(v[1]) || !is_uint(v[3])) return;
        if (v[1].get<std::uint64_t>() == 0) return;
        std::uint64_t product = 1;
        bool overflow = false;
        for (const json& d : shape) {
            const auto extent = d.get<std::uint64_t>();
            if (extent != 0 && product > std::numeric_limits<std::uint64_t>::max() / extent) overflow = true;
            product *= extent;
        }
        const auto numel = v[3].get<std::uint64_t>();
        if (overflow || product != numel) {
            add(at, "numel " + std::to_string(numel) + " differs from the product of shape " + show(shape) +
                        (overflow ? " (which overflows)" : " (" + std::to_string(product) + ")"));
        }
    }

    // [tensor_id, storage_id, offset, numel, itemsize, device]
    void check_tensor_value(const std::string& at, const json& v) {
        static constexpr std::array<std::string_view, 5> fields{"tensor_id", "storage_id", "offset", "numel",
                                                                "itemsize"};
        if (!v.is_array() || v.size() != 6) {
            const std::string found =
                v.is_array() ? " has " + std::to_string(v.size()) + " fields" : " is not an array";
            add(at, "value " + show(v) + found +
                        ", expected 6 fields [tensor_id, storage_id, offset, numel, itemsize, device]");
            return;
        }
        bool ok = true;
        for (std::size_t i = 0; i < fields.size(); ++i) {
            if (!is_uint(v[i])) {
                add(at, std::string(fields[i]) + " is " + show(v[i]) + ", expected an unsigned integer");
                ok = false;
            }
        }
        if (!v[5].is_string()) {
            add(at, "device is " + show(v[5]) + ", expected a string");
            ok = false;
        }
        if (!ok) return;
        const auto tensor_id = v[0].get<std::uint64_t>();
        const auto storage_id = v[1].get<std::uint64_t>();
        const auto device = v[5].get<std::string>();
        // getObjectID hands every tensor an id from the counter that starts at 2.
        if (tensor_id < 2) add(at, "tensor_id " + std::to_string(tensor_id) + " is below 2 (ids start at 2)");
        object_ids_.push_back({at, "tensor_id", tensor_id});
        if (storage_id == 0) {
            if (v[2] != 0 || v[3] != 0 || v[4] != 0 || !device.empty()) {
                add(at, "storage_id is 0 but offset, numel, itemsize, device are " + show(v[2]) + ", " +
                            show(v[3]) + ", " + show(v[4]) + ", " + show(v[5]) +
                            " (torch fills them only for a tensor with storage: 0, 0, 0, \"\")");
            }
            return;
        }
        if (storage_id < 2) add(at, "storage_id " + std::to_string(storage_id) + " is below 2 (ids start at 2)");
        object_ids_.push_back({at, "storage_id", storage_id});
        if (device.empty()) {
            add(at, "device is \"\" but storage_id is " + std::to_string(storage_id) +
                        " (a tensor with storage names its device: \"cpu\", \"cuda:0\")");
        } else if (!is_device_name(device)) {
            add(at, "device " + show(v[5]) + " is not a device name like \"cpu\" or \"cuda:0\"");
        }
        if (v[4] == 0) add(at, "itemsize is 0 but storage_id is " + std::to_string(storage_id));
    }

    void sequence(const std::string& where, const std::string& at, const std::string& type, const json& v,
                  const json& shape, const json& stride) {
        const bool list = type.starts_with("GenericList[");
        const std::size_t open = type.find('[');
        const auto elements = type.ends_with("]")
                                  ? split_types(std::string_view(type).substr(open + 1, type.size() - open - 2))
                                  : std::nullopt;
        if (!elements) {
            add(at, "the type's brackets do not balance");
            return;
        }
        const std::size_t count = elements->size();
        if (list && count > et_max_list_elements) {
            add(at, "the list has " + std::to_string(count) + " elements, more than torch writes (" +
                        std::to_string(et_max_list_elements) + ")");
        }
        bool ok = true;
        const std::array<std::pair<std::string_view, const json*>, 3> parts{
            {{"value", &v}, {"shape", &shape}, {"strides", &stride}}};
        for (const auto& [part, j] : parts) {
            if (!j->is_array()) {
                add(at, std::string(part) + " " + show(*j) + " is not an array");
                ok = false;
            } else if (j->size() != count) {
                add(at, std::string(part) + " has " + std::to_string(j->size()) + " elements, the type names " +
                            std::to_string(count));
                ok = false;
            }
        }
        if (!ok) return;
        for (std::size_t i = 0; i < count; ++i) {
            value(where + "[" + std::to_string(i) + "]", (*elements)[i], v[i], shape[i], stride[i]);
        }
    }

    void attrs(node_record& rec, const json& a) {
        if (!a.is_array()) {
            add(rec.where, "attrs is " + show(a) + ", expected an array");
            return;
        }
        std::map<std::string, std::size_t, std::less<>> seen;
        for (std::size_t i = 0; i < a.size(); ++i) {
            const json& attr = a[i];
            const std::string at = "attrs[" + std::to_string(i) + "]";
            if (!attr.is_object()) {
                add(rec.where, at + " is " + show(attr) + ", expected an object {name, type, value}");
                continue;
            }
            exact_keys(rec.where, at + ": ", attr, {"name", "type", "value"}, "expected exactly name, type, value");
            if (!attr.contains("name") || !attr.contains("type") || !attr.contains("value")) continue;
            if (!attr["name"].is_string() || !attr["type"].is_string()) {
                add(rec.where, at + ": name " + show(attr["name"]) + " and type " + show(attr["type"]) +
                                   " must be strings");
                continue;
            }
            const auto name = attr["name"].get<std::string>();
            const auto type = attr["type"].get<std::string>();
            if (i < node_attrs.size() && name != node_attrs[i].name) {
                add(rec.where, at + " is " + in_quotes(name) + ", expected " + in_quotes(node_attrs[i].name) +
                                   " (torch writes " + std::string(attr_order) + " first, in this order)");
            }
            if (const auto it = seen.find(name); it != seen.end()) {
                add(rec.where, "attr " + in_quotes(name) + " appears twice (attrs[" + std::to_string(it->second) +
                                   "] and " + at + ")");
                continue;
            }
            seen.emplace(name, i);
            const auto known = std::find_if(node_attrs.begin(), node_attrs.end(),
                                            [&](const attr_spec& spec) { return spec.name == name; });
            if (known != node_attrs.end() && type != known->type) {
                add(rec.where, "attr " + name + " has type " + in_quotes(type) + ", expected " + in_quotes(known->type));
                continue;
            }
            if (known == node_attrs.end() && type != "uint64" && type != "int64" && type != "string") {
                add(rec.where, "attr " + name + " has type " + in_quotes(type) + ", expected uint64, int64 or string");
                continue;
            }
            if (!matches_type(type, attr["value"])) {
                add(rec.where, "attr " + name + " is " + show(attr["value"]) + ", not a " + type);
                continue;
            }
            rec.attrs.emplace(name, attr["value"]);
        }
        for (const attr_spec& spec : node_attrs) {
            if (!seen.contains(spec.name)) add(rec.where, "attrs lack " + in_quotes(spec.name));
        }
    }

    // An attr the node's kind fixes (the root's rf_id is 0); a missing or mistyped one is reported already.
    void expect_attr(const node_record& rec, std::string_view role, std::string_view name, std::int64_t expected) {
        const json* value = rec.attr(name);
        if (value != nullptr && *value != expected) {
            add(rec.where, std::string(role) + "'s " + std::string(name) + " is " + show(*value) + ", expected " +
                               std::to_string(expected));
        }
    }

    void graph() {
        for (std::size_t i = 0; i < nodes_.size(); ++i) {
            const node_record& rec = nodes_[i];
            if (!rec.id) continue;
            const auto [it, inserted] = by_id_.emplace(*rec.id, i);
            if (!inserted) {
                add(rec.where, "id " + std::to_string(*rec.id) + " is not unique (also nodes[" +
                                   std::to_string(it->second) + "])");
            }
        }
        root();
        std::map<std::uint64_t, std::size_t> thread_of_tid;
        std::map<std::uint64_t, std::size_t> op_of_rf_id;
        for (std::size_t i = 0; i < nodes_.size(); ++i) {
            const node_record& rec = nodes_[i];
            if (rec.kind == node_kind::invalid || rec.kind == node_kind::root) continue;
            if (*rec.id < 2) {
                add(rec.where, "id " + std::to_string(*rec.id) +
                                   " is below 2 (0 means uninitialised, 1 is the root's; other ids start at 2)");
            }
            const json* scope = rec.attr("scope");
            if (scope != nullptr && scope->get<std::uint64_t>() >= et_scope_count) {
                add(rec.where, "scope " + show(*scope) + " is not an at::RecordScope (0 to 9)");
            }
            if (rec.kind == node_kind::thread) {
                thread(i, thread_of_tid);
            } else {
                op(i, op_of_rf_id);
            }
        }
    }

    void root() {
        std::optional<std::size_t> first;
        for (std::size_t i = 0; i < nodes_.size(); ++i) {
            if (nodes_[i].kind != node_kind::root) continue;
            if (first) {
                add(nodes_[i].where, "a second root node (the first is nodes[" + std::to_string(*first) + "])");
            } else {
                first = i;
            }
        }
        if (!first) {
            add("top level", "no root node \"" + std::string(et_process_node) + "\" (torch writes it last, id 1)");
            return;
        }
        const node_record& rec = nodes_[*first];
        if (*rec.id != 1) add(rec.where, "the root's id is " + std::to_string(*rec.id) + ", expected 1");
        if (rec.ctrl_deps && *rec.ctrl_deps != 1) {
            add(rec.where, "the root's ctrl_deps is " + std::to_string(*rec.ctrl_deps) + ", expected 1 (itself)");
        }
        if (*first + 1 != nodes_.size()) {
            add(rec.where, "the root is nodes[" + std::to_string(*first) + "] of " + std::to_string(nodes_.size()) +
                               ", expected the last node (torch writes it when the trace ends)");
        }
        expect_attr(rec, "the root", "rf_id", 0);
        expect_attr(rec, "the root", "fw_parent", 0);
        expect_attr(rec, "the root", "seq_id", -1);
        expect_attr(rec, "the root", "scope", static_cast<std::int64_t>(et_user_scope));
        expect_attr(rec, "the root", "tid", 0);
        expect_attr(rec, "the root", "fw_tid", 0);
    }

    void thread(std::size_t i, std::map<std::uint64_t, std::size_t>& thread_of_tid) {
        const node_record& rec = nodes_[i];
        if (rec.ctrl_deps && *rec.ctrl_deps != 1) {
            add(rec.where,
                "a thread node's ctrl_deps is " + std::to_string(*rec.ctrl_deps) + ", expected 1 (the root)");
        }
        expect_attr(rec, "a thread node", "rf_id", 0);
        expect_attr(rec, "a thread node", "fw_parent", 0);
        expect_attr(rec, "a thread node", "seq_id", -1);
        expect_attr(rec, "a thread node", "scope", static_cast<std::int64_t>(et_user_scope));
        expect_attr(rec, "a thread node", "fw_tid", 0);
        // recordOperatorStart writes a thread node when the thread's stack is empty; the node stays on it.
        if (const json* tid = rec.attr("tid"); tid != nullptr) {
            const auto [it, inserted] = thread_of_tid.emplace(tid->get<std::uint64_t>(), i);
            if (!inserted) {
                add(rec.where, "a second thread node for tid " + show(*tid) + " (the first is " +
                                   nodes_[it->second].where + ")");
            }
        }
    }

    void op(std::size_t i, std::map<std::uint64_t, std::size_t>& op_of_rf_id) {
        const node_record& rec = nodes_[i];
        const std::uint64_t id = *rec.id;
        if (const json* rf_id = rec.attr("rf_id"); rf_id != nullptr) {
            const auto value = rf_id->get<std::uint64_t>();
            if (value == 0) {
                add(rec.where, "rf_id is 0 (an op carries its RecordFunction's handle, never 0)");
            } else if (const auto [it, inserted] = op_of_rf_id.emplace(value, i); !inserted) {
                add(rec.where,
                    "rf_id " + std::to_string(value) + " is not unique (also " + nodes_[it->second].where + ")");
            }
        }
        if (const json* fw_parent = rec.attr("fw_parent"); fw_parent != nullptr && *fw_parent != 0 &&
                                                            !by_id_.contains(fw_parent->get<std::uint64_t>())) {
            add(rec.where, "fw_parent " + show(*fw_parent) + " names no node");
        }
        if (!rec.ctrl_deps) return;
        const std::uint64_t parent_id = *rec.ctrl_deps;
        const auto parent = by_id_.find(parent_id);
        if (parent == by_id_.end()) {
            add(rec.where, "ctrl_deps " + std::to_string(parent_id) + " names no node");
            return;
        }
        if (parent_id == id) {
            add(rec.where, "ctrl_deps " + std::to_string(parent_id) + " names the node itself");
            return;
        }
        const node_record& parent_rec = nodes_[parent->second];
        if (parent_rec.kind == node_kind::root) {
            add(rec.where, "ctrl_deps " + std::to_string(parent_id) +
                               " names the root (an op's parent is its thread node or the op around it)");
            return;
        }
        // recordOperatorStart takes the parent from the thread's stack, where it got its id earlier.
        if (parent_id > id) {
            add(rec.where, "ctrl_deps " + std::to_string(parent_id) +
                               " is above the node's id (torch numbers a parent before its children)");
        }
        const std::optional<std::size_t> thread = thread_of(i);
        if (!thread) return;
        const json* tid = rec.attr("tid");
        const json* thread_tid = nodes_[*thread].attr("tid");
        if (tid != nullptr && thread_tid != nullptr && *tid != *thread_tid) {
            add(rec.where, "tid " + show(*tid) + " differs from tid " + show(*thread_tid) + " of its thread " +
                               nodes_[*thread].where);
        }
    }

    // Follows ctrl_deps up from op i to its thread node. A cycle is reported once, on its lowest id; a
    // chain broken elsewhere (a dangling or root parent) is reported on the node that breaks it.
    std::optional<std::size_t> thread_of(std::size_t i) {
        std::vector<std::size_t> path{i};
        std::size_t current = i;
        while (path.size() <= nodes_.size()) {
            const node_record& rec = nodes_[current];
            if (!rec.ctrl_deps) return std::nullopt;
            const auto parent = by_id_.find(*rec.ctrl_deps);
            if (parent == by_id_.end()) return std::nullopt;
            const std::size_t next = parent->second;
            if (nodes_[next].kind == node_kind::thread) return next;
            if (nodes_[next].kind != node_kind::op) return std::nullopt;
            const auto seen = std::find(path.begin(), path.end(), next);
            if (seen == path.end()) {
                path.push_back(next);
                current = next;
                continue;
            }
            const std::vector<std::size_t> cycle(seen, path.end());
            const auto lowest = std::min_element(cycle.begin(), cycle.end(), [&](std::size_t a, std::size_t b) {
                return *nodes_[a].id < *nodes_[b].id;
            });
            if (cycle.size() > 1 && *lowest == i) {
                std::string text;
                for (std::size_t k = 0; k <= cycle.size(); ++k) {
                    const std::size_t at = cycle[(static_cast<std::size_t>(lowest - cycle.begin()) + k) % cycle.size()];
                    text += (k == 0 ? "" : " -> ") + std::to_string(*nodes_[at].id);
                }
                add(nodes_[i].where, "ctrl_deps form a cycle " + text + " that never reaches a thread node");
            }
            return std::nullopt;
        }
        return std::nullopt;
    }

    // One counter (getNewID) numbers nodes, tensors and storages, so their ids never meet.
    void object_ids() {
        for (const object_id_use& use : object_ids_) {
            if (const auto it = by_id_.find(use.id); it != by_id_.end()) {
                add(use.where, std::string(use.field) + " " + std::to_string(use.id) + " is the id of " +
                                   nodes_[it->second].where + " (one counter numbers nodes, tensors and storages)");
            }
        }
    }
};

}  // namespace et_detail

/// Every way `et` breaks the execution-trace schema torch's ExecutionTraceObserver writes, one line
/// each naming the node and the rule; empty when it is a valid ET.
inline std::vector<std::string> execution_trace_problems(const nlohmann::json& et) {
    et_detail::checker check;
    check.run(et);
    return std::move(check.problems);
}

/// The problems of the ET file at `path` (gzip when it ends in .gz): the file must exist, parse as
/// JSON (nlohmann rejects NaN and Infinity literals) with no key twice in an object, and pass
/// execution_trace_problems.
inline std::vector<std::string> execution_trace_file_problems(const std::string& path) {
    std::error_code error;
    if (!std::filesystem::is_regular_file(path, error)) return {et_detail::in_quotes(path) + ": no such file"};
    const std::string text = path.ends_with(".gz") ? read_gzip(path) : read_file(path);
    // nlohmann keeps the last of two equal keys; a parser callback sees each key as it is read.
    auto keys = std::make_shared<std::vector<std::set<std::string>>>();
    auto repeated = std::make_shared<std::vector<std::string>>();
    const nlohmann::json::parser_callback_t callback = [keys, repeated](int, nlohmann::json::parse_event_t event,
                                                                        nlohmann::json& parsed) {
        using event_t = nlohmann::json::parse_event_t;
        if (event == event_t::object_start) {
            keys->emplace_back();
        } else if (event == event_t::object_end) {
            keys->pop_back();
        } else if (event == event_t::key && !keys->empty() && !keys->back().insert(parsed.get<std::string>()).second) {
            repeated->push_back("JSON: key '" + parsed.get<std::string>() + "' appears twice in one object");
        }
        return true;
    };
    nlohmann::json et;
    try {
        et = nlohmann::json::parse(text, callback);
    } catch (const nlohmann::json::parse_error& e) {
        return {et_detail::in_quotes(path) + " is not valid JSON: " + e.what()};
    }
    std::vector<std::string> problems = std::move(*repeated);
    for (std::string& problem : execution_trace_problems(et)) problems.push_back(std::move(problem));
    return problems;
}

/// Fails the running test case with each schema problem of the ET file at `path` (at most 40 lines,
/// then a count).
inline void check_execution_trace_file(const std::string& path) {
    const std::vector<std::string> problems = execution_trace_file_problems(path);
    INFO("execution trace " << path << " breaks the schema " << problems.size() << " times");
    constexpr std::size_t shown = 40;
    for (std::size_t i = 0; i < problems.size() && i < shown; ++i) FAIL_CHECK(problems[i]);
    if (problems.size() > shown) FAIL_CHECK("... and " << problems.size() - shown << " more");
    CHECK(problems.empty());
}

}  // namespace stint_test
