// The execution-trace schema checker (execution_trace_schema.hpp) on hand-written traces: one laid out
// as torch's ExecutionTraceObserver writes it passes, and each rule reports a copy that breaks it.
#include <doctest/doctest.h>

#include <zlib.h>

#include <cstdint>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "execution_trace_schema.hpp"
#include "test_util.hpp"

namespace {

using json = nlohmann::json;
using stint_test::execution_trace_problems;

// The seed's payload, cut down, as torch writes it: nodes in the order they end, the root last; node
// ids and the tensor and storage ids (5..10, 12, 13, 15, 17, 18, 21, 22) from one counter; thread 2
// (tid 1) runs "## LOOP 0 ##" around aten::add and "## TEST 2 ##" (with the seed's arguments) around
// aten::view and aten::sum; thread 19 (tid 2) runs an autograd aten::mul whose forward parent is the
// loop. Doubles are std::to_string's, non-finite ones quoted.
const char* const torch_like_trace = R"JSON({
  "schema": "1.1.1-chakra.0.0.4", "pid": 4242, "time": "2025-11-25 08:59:03", "start_ts": 2188364098,
  "nodes": [
    {
      "id": 2, "name": "[pytorch|profiler|execution_trace|thread]", "ctrl_deps": 1,
      "inputs": {"values": [], "shapes": [], "types": [], "strides": []},
      "outputs": {"values": [], "shapes": [], "types": [], "strides": []},
      "attrs": [{"name": "rf_id", "type": "uint64", "value": 0},{"name": "fw_parent", "type": "uint64", "value": 0},
        {"name": "seq_id", "type": "int64", "value": -1},{"name": "scope", "type": "uint64", "value": 7},
        {"name": "tid", "type": "uint64", "value": 1},{"name": "fw_tid", "type": "uint64", "value": 0},
        {"name": "op_schema", "type": "string", "value": ""},{"name": "kernel_backend", "type": "string", "value": ""},
        {"name": "kernel_file", "type": "string", "value": ""}]
    },
    {
      "id": 4, "name": "aten::add", "ctrl_deps": 3,
      "inputs": {"values": [[5,6,0,100,4,"cpu"],[7,8,0,100,4,"cpu"],1], "shapes": [[10,10],[10,10],[]],
        "types": ["Tensor(float)","Tensor(float)","Int"], "strides": [[10,1],[10,1],[]]},
      "outputs": {"values": [[9,10,0,100,4,"cpu"]], "shapes": [[10,10]], "types": ["Tensor(float)"],
        "strides": [[10,1]]},
      "attrs": [{"name": "rf_id", "type": "uint64", "value": 2},{"name": "fw_parent", "type": "uint64", "value": 0},
        {"name": "seq_id", "type": "int64", "value": 7},{"name": "scope", "type": "uint64", "value": 0},
        {"name": "tid", "type": "uint64", "value": 1},{"name": "fw_tid", "type": "uint64", "value": 0},
        {"name": "op_schema", "type": "string",
         "value": "aten::add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor"},
        {"name": "kernel_backend", "type": "string", "value": ""},
        {"name": "kernel_file", "type": "string", "value": ""}]
    },
    {
      "id": 14, "name": "aten::view", "ctrl_deps": 11,
      "inputs": {"values": [[12,13,0,60,4,"cpu"],[60]], "shapes": [[3,4,5],[[]]],
        "types": ["Tensor(float)","GenericList[Int]"], "strides": [[20,5,1],[[]]]},
      "outputs": {"values": [[15,13,0,60,4,"cpu"]], "shapes": [[60]], "types": ["Tensor(float)"], "strides": [[1]]},
      "attrs": [{"name": "rf_id", "type": "uint64", "value": 4},{"name": "fw_parent", "type": "uint64", "value": 0},
        {"name": "seq_id", "type": "int64", "value": -1},{"name": "scope", "type": "uint64", "value": 0},
        {"name": "tid", "type": "uint64", "value": 1},{"name": "fw_tid", "type": "uint64", "value": 0},
        {"name": "op_schema", "type": "string", "value": "aten::view(Tensor(a) self, SymInt[] size) -> Tensor(a)"},
        {"name": "kernel_backend", "type": "string", "value": ""},
        {"name": "kernel_file", "type": "string", "value": ""}]
    },
    {
      "id": 16, "name": "aten::sum", "ctrl_deps": 11,
      "inputs": {"values": [[12,13,0,60,4,"cpu"],"<None>"], "shapes": [[3,4,5],[]],
        "types": ["Tensor(float)","None"], "strides": [[20,5,1],[]]},
      "outputs": {"values": [[17,18,0,1,4,"cpu"]], "shapes": [[]], "types": ["Tensor(float)"], "strides": [[]]},
      "attrs": [{"name": "rf_id", "type": "uint64", "value": 5},{"name": "fw_parent", "type": "uint64", "value": 0},
        {"name": "seq_id", "type": "int64", "value": -1},{"name": "scope", "type": "uint64", "value": 0},
        {"name": "tid", "type": "uint64", "value": 1},{"name": "fw_tid", "type": "uint64", "value": 0},
        {"name": "op_schema", "type": "string", "value": "aten::sum(Tensor self, *, ScalarType? dtype=None) -> Tensor"},
        {"name": "kernel_backend", "type": "string", "value": ""},
        {"name": "kernel_file", "type": "string", "value": ""}]
    },
    {
      "id": 11, "name": "## TEST 2 ##", "ctrl_deps": 3,
      "inputs": {"values": [1,false,2.500000,[[12,13,0,60,4,"cpu"],[12,13,0,60,4,"cpu"]],
          [[12,13,0,60,4,"cpu"],[12,13,0,60,4,"cpu"]],"hello",[12,13,0,60,4,"cpu"],"inf","-inf","nan"],
        "shapes": [[],[],[],[[3,4,5],[3,4,5]],[[3,4,5],[3,4,5]],[],[3,4,5],[],[],[]],
        "types": ["Int","Bool","Double","GenericList[Tensor(float),Tensor(float)]","Tuple[Tensor(float),Tensor(float)]",
          "String","Tensor(float)","Double","Double","Double"],
        "strides": [[],[],[],[[20,5,1],[20,5,1]],[[20,5,1],[20,5,1]],[],[20,5,1],[],[],[]]},
      "outputs": {"values": [], "shapes": [], "types": [], "strides": []},
      "attrs": [{"name": "rf_id", "type": "uint64", "value": 3},{"name": "fw_parent", "type": "uint64", "value": 0},
        {"name": "seq_id", "type": "int64", "value": -1},{"name": "scope", "type": "uint64", "value": 7},
        {"name": "tid", "type": "uint64", "value": 1},{"name": "fw_tid", "type": "uint64", "value": 0},
        {"name": "op_schema", "type": "string", "value": ""},{"name": "kernel_backend", "type": "string", "value": ""},
        {"name": "kernel_file", "type": "string", "value": ""}]
    },
    {
      "id": 19, "name": "[pytorch|profiler|execution_trace|thread]", "ctrl_deps": 1,
      "inputs": {"values": [], "shapes": [], "types": [], "strides": []},
      "outputs": {"values": [], "shapes": [], "types": [], "strides": []},
      "attrs": [{"name": "rf_id", "type": "uint64", "value": 0},{"name": "fw_parent", "type": "uint64", "value": 0},
        {"name": "seq_id", "type": "int64", "value": -1},{"name": "scope", "type": "uint64", "value": 7},
        {"name": "tid", "type": "uint64", "value": 2},{"name": "fw_tid", "type": "uint64", "value": 0},
        {"name": "op_schema", "type": "string", "value": ""},{"name": "kernel_backend", "type": "string", "value": ""},
        {"name": "kernel_file", "type": "string", "value": ""}]
    },
    {
      "id": 20, "name": "aten::mul", "ctrl_deps": 19,
      "inputs": {"values": [[9,10,0,100,4,"cpu"],2.000000], "shapes": [[10,10],[]],
        "types": ["Tensor(float)","Double"], "strides": [[10,1],[]]},
      "outputs": {"values": [[21,22,0,100,4,"cpu"]], "shapes": [[10,10]], "types": ["Tensor(float)"],
        "strides": [[10,1]]},
      "attrs": [{"name": "rf_id", "type": "uint64", "value": 6},{"name": "fw_parent", "type": "uint64", "value": 3},
        {"name": "seq_id", "type": "int64", "value": 7},{"name": "scope", "type": "uint64", "value": 0},
        {"name": "tid", "type": "uint64", "value": 2},{"name": "fw_tid", "type": "uint64", "value": 1},
        {"name": "op_schema", "type": "string", "value": "aten::mul.Scalar(Tensor self, Scalar other) -> Tensor"},
        {"name": "kernel_backend", "type": "string", "value": ""},
        {"name": "kernel_file", "type": "string", "value": ""}]
    },
    {
      "id": 3, "name": "## LOOP 0 ##", "ctrl_deps": 2,
      "inputs": {"values": [], "shapes": [], "types": [], "strides": []},
      "outputs": {"values": [], "shapes": [], "types": [], "strides": []},
      "attrs": [{"name": "rf_id", "type": "uint64", "value": 1},{"name": "fw_parent", "type": "uint64", "value": 0},
        {"name": "seq_id", "type": "int64", "value": -1},{"name": "scope", "type": "uint64", "value": 7},
        {"name": "tid", "type": "uint64", "value": 1},{"name": "fw_tid", "type": "uint64", "value": 0},
        {"name": "op_schema", "type": "string", "value": ""},{"name": "kernel_backend", "type": "string", "value": ""},
        {"name": "kernel_file", "type": "string", "value": ""}]
    },
    {
      "id": 1, "name": "[pytorch|profiler|execution_trace|process]", "ctrl_deps": 1,
      "inputs": {"values": [], "shapes": [], "types": [], "strides": []},
      "outputs": {"values": [], "shapes": [], "types": [], "strides": []},
      "attrs": [{"name": "rf_id", "type": "uint64", "value": 0},{"name": "fw_parent", "type": "uint64", "value": 0},
        {"name": "seq_id", "type": "int64", "value": -1},{"name": "scope", "type": "uint64", "value": 7},
        {"name": "tid", "type": "uint64", "value": 0},{"name": "fw_tid", "type": "uint64", "value": 0},
        {"name": "op_schema", "type": "string", "value": ""},{"name": "kernel_backend", "type": "string", "value": ""},
        {"name": "kernel_file", "type": "string", "value": ""}]
    }
  ],
  "finish_ts": 2188364105
})JSON";

json torch_like() { return json::parse(torch_like_trace); }

json& node(json& et, std::uint64_t id) {
    for (json& n : et["nodes"]) {
        if (n["id"] == id) return n;
    }
    throw std::logic_error("no node " + std::to_string(id));
}

json& attribute(json& n, const std::string& name) {
    for (json& a : n["attrs"]) {
        if (a["name"] == name) return a;
    }
    throw std::logic_error("no attr " + name);
}

// The problems, one per line, so that a failed CHECK prints them all.
std::string problems(const json& et) {
    std::string text;
    for (const std::string& line : execution_trace_problems(et)) text += (text.empty() ? "" : "\n") + line;
    return text;
}

// An input of node 11 ("## TEST 2 ##") replaced: its type, value, shape and strides.
json with_test2_input(std::size_t i, const json& type, const json& value, const json& shape, const json& strides) {
    json et = torch_like();
    json& inputs = node(et, 11)["inputs"];
    inputs["types"][i] = type;
    inputs["values"][i] = value;
    inputs["shapes"][i] = shape;
    inputs["strides"][i] = strides;
    return et;
}

void write_gzip(const std::string& path, const std::string& text) {
    gzFile file = gzopen(path.c_str(), "wb");
    REQUIRE(file != nullptr);
    REQUIRE(gzwrite(file, text.data(), static_cast<unsigned>(text.size())) == static_cast<int>(text.size()));
    REQUIRE(gzclose(file) == Z_OK);
}

void write_text(const std::string& path, const std::string& text) {
    std::ofstream out(path, std::ios::binary);
    out << text;
    REQUIRE(out.good());
}

}  // namespace

TEST_CASE("execution trace schema: a trace laid out as torch writes it has no problems") {
    CHECK(problems(torch_like()) == "");

    SUBCASE("as a file, plain or gzip") {
        const stint_test::temp_dir dir;
        write_text(dir.file("t.et.json"), torch_like_trace);
        write_gzip(dir.file("t.et.json.gz"), torch_like_trace);
        stint_test::check_execution_trace_file(dir.file("t.et.json"));
        stint_test::check_execution_trace_file(dir.file("t.et.json.gz"));
        CHECK(stint_test::execution_trace_file_problems(dir.file("t.et.json.gz")).empty());
    }
    SUBCASE("a trace that captured nothing holds the root alone") {
        json et = torch_like();
        et["nodes"] = json::array({et["nodes"].back()});
        CHECK(problems(et) == "");
    }
    SUBCASE("stint's own counts ride in a top-level object") {
        json et = torch_like();
        et["stint"] = {{"dropped_records", 0}};
        CHECK(problems(et) == "");
    }
    SUBCASE("newer torch and collectives append attrs after the nine") {
        json et = torch_like();
        node(et, 4)["attrs"].push_back({{"name", "tensor_range"}, {"type", "string"}, {"value", ""}});
        node(et, 4)["attrs"].push_back({{"name", "pg_size"}, {"type", "uint64"}, {"value", 8}});
        CHECK(problems(et) == "");
    }
}

TEST_CASE("execution trace schema: top-level keys, their types and the time format") {
    json et = torch_like();
    SUBCASE("schema") {
        et["schema"] = "1.0.1";
        CHECK(problems(et) == R"(top level: schema is "1.0.1", expected "1.1.1-chakra.0.0.4")");
    }
    SUBCASE("a missing key") {
        et.erase("finish_ts");
        CHECK(problems(et) == "top level: missing key 'finish_ts'");
    }
    SUBCASE("an unknown key") {
        et["version"] = 2;
        CHECK(problems(et) == "top level: unexpected key 'version' (torch writes schema, pid, time, start_ts, nodes, "
                              "finish_ts; stint adds only stint)");
    }
    SUBCASE("stint is an object") {
        et["stint"] = 3;
        CHECK(problems(et) == "top level: stint is 3, expected an object");
    }
    SUBCASE("pid") {
        et["pid"] = "4242";
        CHECK(problems(et) == R"(top level: pid is "4242", expected an integer)");
    }
    SUBCASE("time") {
        et["time"] = "2025-11-25T08:59:03";
        CHECK(problems(et) == R"(top level: time is "2025-11-25T08:59:03", expected a string "YYYY-MM-DD HH:MM:SS")");
    }
    SUBCASE("timestamps") {
        et["start_ts"] = 2.5;
        et["finish_ts"] = 1;
        CHECK(problems(et) == "top level: start_ts is 2.5, expected an integer (milliseconds)");
        et["start_ts"] = 2;
        CHECK(problems(et) == "top level: finish_ts 1 is before start_ts 2");
    }
    SUBCASE("nodes") {
        et["nodes"] = json::object();
        CHECK(problems(et) == "top level: nodes is {}, expected an array");
    }
    SUBCASE("not an object") {
        CHECK(problems(json::array()) == "top level: is [], expected a JSON object");
    }
}

TEST_CASE("execution trace schema: a node has exactly id, name, ctrl_deps, inputs, outputs, attrs") {
    json et = torch_like();
    SUBCASE("missing") {
        node(et, 16).erase("ctrl_deps");
        CHECK(problems(et) == "node 16 (aten::sum): missing key 'ctrl_deps'");
    }
    SUBCASE("unexpected") {
        node(et, 16)["parent"] = 11;
        CHECK(problems(et) == "node 16 (aten::sum): unexpected key 'parent' (a node has exactly id, name, ctrl_deps, "
                              "inputs, outputs, attrs)");
    }
    SUBCASE("typed") {
        node(et, 16)["ctrl_deps"] = -11;
        node(et, 16)["name"] = 5;
        CHECK(problems(et) == "node 16: name is 5, expected a string\n"
                              "node 16: ctrl_deps is -11, expected an unsigned integer");
        et["nodes"][3]["id"] = "16";
        CHECK(problems(et) == "nodes[3]: id is \"16\", expected an unsigned integer\n"
                              "nodes[3]: name is 5, expected a string\n"
                              "nodes[3]: ctrl_deps is -11, expected an unsigned integer");
    }
}

TEST_CASE("execution trace schema: inputs and outputs hold values, shapes, types, strides of one length") {
    json et = torch_like();
    json& inputs = node(et, 4)["inputs"];
    SUBCASE("lengths") {
        inputs["strides"].erase(2);
        CHECK(problems(et) == "node 4 (aten::add): inputs: values, shapes, types and strides have 3, 3, 3 and 2 "
                              "entries, expected one count");
    }
    SUBCASE("keys") {
        inputs.erase("types");
        inputs["dtypes"] = json::array();
        CHECK(problems(et) == "node 4 (aten::add): inputs: missing key 'types'\n"
                              "node 4 (aten::add): inputs: unexpected key 'dtypes' (expected exactly values, shapes, "
                              "types, strides)");
    }
    SUBCASE("types are strings") {
        node(et, 4)["outputs"]["types"][0] = 3;
        node(et, 4)["outputs"]["shapes"] = 3;
        CHECK(problems(et) == "node 4 (aten::add): outputs.shapes is 3, expected an array");
        node(et, 4)["outputs"]["shapes"] = json::array({json::array({10, 10})});
        CHECK(problems(et) == "node 4 (aten::add): outputs.types[0] is 3, expected a string");
    }
}

TEST_CASE("execution trace schema: attrs are torch's nine in order, each typed, extras well formed") {
    json et = torch_like();
    json& attrs = node(et, 16)["attrs"];
    SUBCASE("order") {
        std::swap(attrs[2], attrs[3]);
        CHECK(problems(et) ==
              "node 16 (aten::sum): attrs[2] is 'scope', expected 'seq_id' (torch writes rf_id, fw_parent, seq_id, "
              "scope, tid, fw_tid, op_schema, kernel_backend, kernel_file first, in this order)\n"
              "node 16 (aten::sum): attrs[3] is 'seq_id', expected 'scope' (torch writes rf_id, fw_parent, seq_id, "
              "scope, tid, fw_tid, op_schema, kernel_backend, kernel_file first, in this order)");
    }
    SUBCASE("missing") {
        attrs.erase(8);
        CHECK(problems(et) == "node 16 (aten::sum): attrs lack 'kernel_file'");
    }
    SUBCASE("declared type") {
        attribute(node(et, 16), "seq_id")["type"] = "uint64";
        CHECK(problems(et) == "node 16 (aten::sum): attr seq_id has type 'uint64', expected 'int64'");
    }
    SUBCASE("value of the declared type") {
        attribute(node(et, 16), "fw_tid")["value"] = -1;
        attribute(node(et, 16), "op_schema")["value"] = 0;
        CHECK(problems(et) == "node 16 (aten::sum): attr fw_tid is -1, not a uint64\n"
                              "node 16 (aten::sum): attr op_schema is 0, not a string");
    }
    SUBCASE("shape of an attr") {
        attrs[0].erase("type");
        attrs[1]["unit"] = "ms";
        CHECK(problems(et) == "node 16 (aten::sum): attrs[0]: missing key 'type'\n"
                              "node 16 (aten::sum): attrs[1]: unexpected key 'unit' (expected exactly name, type, "
                              "value)\n"
                              "node 16 (aten::sum): attrs lack 'rf_id'");
    }
    SUBCASE("extras") {
        attrs.push_back({{"name", "pg_size"}, {"type", "float"}, {"value", 8.0}});
        attrs.push_back({{"name", "rf_id"}, {"type", "uint64"}, {"value", 9}});
        CHECK(problems(et) == "node 16 (aten::sum): attr pg_size has type 'float', expected uint64, int64 or string\n"
                              "node 16 (aten::sum): attr 'rf_id' appears twice (attrs[0] and attrs[10])");
    }
}

TEST_CASE("execution trace schema: node ids are unique") {
    json et = torch_like();
    node(et, 16)["id"] = 14;
    CHECK(problems(et) == "node 14 (aten::sum): id 14 is not unique (also nodes[2])");
}

TEST_CASE("execution trace schema: one root node, id 1, its own parent, written last") {
    json et = torch_like();
    json& root = et["nodes"].back();
    SUBCASE("missing") {
        et["nodes"].erase(et["nodes"].size() - 1);
        CHECK(problems(et) == "top level: no root node \"[pytorch|profiler|execution_trace|process]\" (torch writes "
                              "it last, id 1)");
    }
    SUBCASE("id and ctrl_deps") {
        root["id"] = 99;
        root["ctrl_deps"] = 0;
        CHECK(problems(et) == "node 99 ([pytorch|profiler|execution_trace|process]): the root's id is 99, expected 1\n"
                              "node 99 ([pytorch|profiler|execution_trace|process]): the root's ctrl_deps is 0, "
                              "expected 1 (itself)");
    }
    SUBCASE("attrs") {
        attribute(root, "rf_id")["value"] = 7;
        attribute(root, "seq_id")["value"] = 0;
        attribute(root, "tid")["value"] = 1;
        attribute(root, "scope")["value"] = 0;
        CHECK(problems(et) == "node 1 ([pytorch|profiler|execution_trace|process]): the root's rf_id is 7, expected 0\n"
                              "node 1 ([pytorch|profiler|execution_trace|process]): the root's seq_id is 0, expected "
                              "-1\n"
                              "node 1 ([pytorch|profiler|execution_trace|process]): the root's scope is 0, expected 7\n"
                              "node 1 ([pytorch|profiler|execution_trace|process]): the root's tid is 1, expected 0");
    }
    SUBCASE("last") {
        json moved = root;
        et["nodes"].erase(et["nodes"].size() - 1);
        et["nodes"].insert(et["nodes"].begin(), moved);
        CHECK(problems(et) == "node 1 ([pytorch|profiler|execution_trace|process]): the root is nodes[0] of 9, "
                              "expected the last node (torch writes it when the trace ends)");
    }
    SUBCASE("one") {
        json second = root;
        second["id"] = 30;
        et["nodes"].push_back(second);
        CHECK(problems(et) == "node 30 ([pytorch|profiler|execution_trace|process]): a second root node (the first "
                              "is nodes[8])\n"
                              "node 1 ([pytorch|profiler|execution_trace|process]): the root is nodes[8] of 10, "
                              "expected the last node (torch writes it when the trace ends)");
    }
}

TEST_CASE("execution trace schema: ids other than the root's start at 2") {
    json et = torch_like();
    node(et, 19)["id"] = 0;
    node(et, 20)["ctrl_deps"] = 0;
    CHECK(problems(et) == "node 0 ([pytorch|profiler|execution_trace|thread]): id 0 is below 2 (0 means "
                          "uninitialised, 1 is the root's; other ids start at 2)");
}

TEST_CASE("execution trace schema: thread nodes hang off the root, one per tid") {
    json et = torch_like();
    SUBCASE("one per tid") {
        attribute(node(et, 19), "tid")["value"] = 1;
        attribute(node(et, 20), "tid")["value"] = 1;
        CHECK(problems(et) == "node 19 ([pytorch|profiler|execution_trace|thread]): a second thread node for tid 1 "
                              "(the first is node 2 ([pytorch|profiler|execution_trace|thread]))");
    }
    SUBCASE("parent and attrs") {
        node(et, 19)["ctrl_deps"] = 3;
        attribute(node(et, 19), "rf_id")["value"] = 8;
        attribute(node(et, 19), "seq_id")["value"] = 2;
        CHECK(problems(et) == "node 19 ([pytorch|profiler|execution_trace|thread]): a thread node's ctrl_deps is 3, "
                              "expected 1 (the root)\n"
                              "node 19 ([pytorch|profiler|execution_trace|thread]): a thread node's rf_id is 8, "
                              "expected 0\n"
                              "node 19 ([pytorch|profiler|execution_trace|thread]): a thread node's seq_id is 2, "
                              "expected -1");
    }
}

TEST_CASE("execution trace schema: an op's ctrl_deps names its thread node or the op around it") {
    json et = torch_like();
    SUBCASE("dangling") {
        node(et, 16)["ctrl_deps"] = 99;
        CHECK(problems(et) == "node 16 (aten::sum): ctrl_deps 99 names no node");
    }
    SUBCASE("the root") {
        node(et, 4)["ctrl_deps"] = 1;
        CHECK(problems(et) == "node 4 (aten::add): ctrl_deps 1 names the root (an op's parent is its thread node or "
                              "the op around it)");
    }
    SUBCASE("itself") {
        node(et, 16)["ctrl_deps"] = 16;
        CHECK(problems(et) == "node 16 (aten::sum): ctrl_deps 16 names the node itself");
    }
    SUBCASE("fw_parent names a node too") {
        attribute(node(et, 20), "fw_parent")["value"] = 98;
        CHECK(problems(et) == "node 20 (aten::mul): fw_parent 98 names no node");
    }
}

TEST_CASE("execution trace schema: ctrl_deps never form a cycle") {
    json et = torch_like();
    node(et, 3)["ctrl_deps"] = 4;  // the loop under aten::add, which is under the loop
    CHECK(problems(et) == "node 3 (## LOOP 0 ##): ctrl_deps 4 is above the node's id (torch numbers a parent "
                          "before its children)\n"
                          "node 3 (## LOOP 0 ##): ctrl_deps form a cycle 3 -> 4 -> 3 that never reaches a thread "
                          "node");
}

TEST_CASE("execution trace schema: a parent's id is below its child's") {
    json et = torch_like();
    node(et, 4)["ctrl_deps"] = 11;
    CHECK(problems(et) == "node 4 (aten::add): ctrl_deps 11 is above the node's id (torch numbers a parent before "
                          "its children)");
}

TEST_CASE("execution trace schema: an op's tid is its thread node's") {
    json et = torch_like();
    attribute(node(et, 14), "tid")["value"] = 2;
    CHECK(problems(et) == "node 14 (aten::view): tid 2 differs from tid 1 of its thread node 2 "
                          "([pytorch|profiler|execution_trace|thread])");
}

TEST_CASE("execution trace schema: op rf_ids are non-zero and unique") {
    json et = torch_like();
    attribute(node(et, 16), "rf_id")["value"] = 4;
    attribute(node(et, 20), "rf_id")["value"] = 0;
    CHECK(problems(et) == "node 16 (aten::sum): rf_id 4 is not unique (also node 14 (aten::view))\n"
                          "node 20 (aten::mul): rf_id is 0 (an op carries its RecordFunction's handle, never 0)");
}

TEST_CASE("execution trace schema: scope is an at::RecordScope") {
    json et = torch_like();
    attribute(node(et, 4), "scope")["value"] = 10;
    CHECK(problems(et) == "node 4 (aten::add): scope 10 is not an at::RecordScope (0 to 9)");
}

TEST_CASE("execution trace schema: a tensor is [tensor_id, storage_id, offset, numel, itemsize, device]") {
    const json u = {12, 13, 0, 60, 4, "cpu"};
    const json shape = {3, 4, 5};
    const json strides = {20, 5, 1};
    const std::string at = "node 11 (## TEST 2 ##): inputs[6] (Tensor(float)): ";
    SUBCASE("six fields") {
        CHECK(problems(with_test2_input(6, "Tensor(float)", {12, 13, 0, 60, 4}, shape, strides)) ==
              at + "value [12,13,0,60,4] has 5 fields, expected 6 fields [tensor_id, storage_id, offset, numel, "
                   "itemsize, device]");
    }
    SUBCASE("field types") {
        CHECK(problems(with_test2_input(6, "Tensor(float)", {12, -13, 0, 60, 4, 0}, shape, strides)) ==
              at + "storage_id is -13, expected an unsigned integer\n" + at + "device is 0, expected a string");
    }
    SUBCASE("a dtype") {
        CHECK(problems(with_test2_input(6, "Tensor", u, shape, strides)) ==
              "node 11 (## TEST 2 ##): inputs[6] (Tensor): the type names no dtype, expected Tensor(<dtype>)");
    }
    SUBCASE("no storage, no storage fields") {
        CHECK(problems(with_test2_input(6, "Tensor(float)", {12, 0, 0, 0, 0, ""}, json::array(), json::array())) ==
              "");
        CHECK(problems(with_test2_input(6, "Tensor(float)", {12, 0, 0, 60, 4, "cpu"}, shape, strides)) ==
              at + R"(storage_id is 0 but offset, numel, itemsize, device are 0, 60, 4, "cpu" (torch fills them )"
                   R"(only for a tensor with storage: 0, 0, 0, ""))");
    }
    SUBCASE("storage names its device") {
        CHECK(problems(with_test2_input(6, "Tensor(float)", {12, 13, 0, 60, 4, ""}, shape, strides)) ==
              at + R"(device is "" but storage_id is 13 (a tensor with storage names its device: "cpu", "cuda:0"))");
        CHECK(problems(with_test2_input(6, "Tensor(float)", {12, 13, 0, 60, 4, "CUDA 0"}, shape, strides)) ==
              at + R"(device "CUDA 0" is not a device name like "cpu" or "cuda:0")");
        CHECK(problems(with_test2_input(6, "Tensor(float)", {12, 13, 0, 60, 4, "cuda:1"}, shape, strides)) == "");
    }
    SUBCASE("numel is the shape's product") {
        CHECK(problems(with_test2_input(6, "Tensor(float)", {12, 13, 0, 59, 4, "cpu"}, shape, strides)) ==
              at + "numel 59 differs from the product of shape [3,4,5] (60)");
    }
    SUBCASE("shape and strides") {
        CHECK(problems(with_test2_input(6, "Tensor(float)", u, {3, -4, 5}, strides)) ==
              at + "shape [3,-4,5] is not an array of non-negative integers");
        CHECK(problems(with_test2_input(6, "Tensor(float)", u, shape, {5, 1})) ==
              at + "strides [5,1] have 2 entries, shape [3,4,5] has 3");
        CHECK(problems(with_test2_input(6, "Tensor(float)", u, shape, json::array())) == "");
    }
}

TEST_CASE("execution trace schema: lists and tuples have the elements their type names") {
    const json t = {12, 13, 0, 60, 4, "cpu"};
    const json shape = {3, 4, 5};
    const json strides = {20, 5, 1};
    SUBCASE("element count") {
        CHECK(problems(with_test2_input(3, "GenericList[Tensor(float)]", {t, t}, {shape, shape}, {strides, strides})) ==
              "node 11 (## TEST 2 ##): inputs[3] (GenericList[Tensor(float)]): value has 2 elements, the type names 1\n"
              "node 11 (## TEST 2 ##): inputs[3] (GenericList[Tensor(float)]): shape has 2 elements, the type names 1\n"
              "node 11 (## TEST 2 ##): inputs[3] (GenericList[Tensor(float)]): strides has 2 elements, the type "
              "names 1");
        CHECK(problems(with_test2_input(4, "Tuple[Tensor(float),Tensor(float)]", {t, t}, json::array({shape}),
                                        {strides, strides})) ==
              "node 11 (## TEST 2 ##): inputs[4] (Tuple[Tensor(float),Tensor(float)]): shape has 1 elements, the type "
              "names 2");
    }
    SUBCASE("elements are checked by their own type") {
        CHECK(problems(with_test2_input(3, "GenericList[Tensor(float),Tensor(float)]", {t, {12, 13, 0, 60, 4}},
                                        {shape, shape}, {strides, strides})) ==
              "node 11 (## TEST 2 ##): inputs[3][1] (Tensor(float)): value [12,13,0,60,4] has 5 fields, expected 6 "
              "fields [tensor_id, storage_id, offset, numel, itemsize, device]");
    }
    SUBCASE("nested and empty") {
        const json empty = json::array();
        CHECK(problems(with_test2_input(3, "GenericList[]", empty, empty, empty)) == "");
        const json values = json::array({json::array({1, "nan"}), json::array({t})});
        const json shapes = json::array({json::array({empty, empty}), json::array({shape})});
        const json strides_of = json::array({json::array({empty, empty}), json::array({strides})});
        CHECK(problems(with_test2_input(3, "GenericList[Tuple[Int,Double],GenericList[Tensor(float)]]", values,
                                        shapes, strides_of)) == "");
        const json pair_shape = json::array({json::array({empty, empty})});
        CHECK(problems(with_test2_input(3, "GenericList[Tuple[Int,Double]", json::array({json::array({1, 2.5})}),
                                        pair_shape, pair_shape)) ==
              "node 11 (## TEST 2 ##): inputs[3] (GenericList[Tuple[Int,Double]): the type's brackets do not balance");
        CHECK(problems(with_test2_input(3, "GenericList[Tuple[Int,Double]]", json::array({json::array({1, "NaN"})}),
                                        pair_shape, pair_shape)) ==
              R"(node 11 (## TEST 2 ##): inputs[3][0][1] (Double): value "NaN" is neither a number nor one of )"
              R"("inf", "-inf", "nan", "-nan")");
    }
    SUBCASE("torch writes at most 4097 list elements") {
        std::string type = "GenericList[Int";
        json values = json::array({0});
        json shapes = json::array({json::array()});
        for (int i = 1; i < 4097; ++i) {
            type += ",Int";
            values.push_back(i);
            shapes.push_back(json::array());
        }
        CHECK(problems(with_test2_input(3, type + "]", values, shapes, shapes)) == "");
        values.push_back(4097);
        shapes.push_back(json::array());
        const std::vector<std::string> found =
            execution_trace_problems(with_test2_input(3, type + ",Int]", values, shapes, shapes));
        REQUIRE(found.size() == 1);
        CHECK(found[0].ends_with("): the list has 4098 elements, more than torch writes (4097)"));
    }
}

TEST_CASE("execution trace schema: scalars are written as getScalarValue writes them") {
    const json none = json::array();
    const std::string at = "node 11 (## TEST 2 ##): inputs[7] ";
    CHECK(problems(with_test2_input(7, "Double", "NaN", none, none)) ==
          at + R"((Double): value "NaN" is neither a number nor one of "inf", "-inf", "nan", "-nan")");
    CHECK(problems(with_test2_input(7, "Double", "-nan", none, none)) == "");
    CHECK(problems(with_test2_input(7, "Double", 3, none, none)) == "");
    CHECK(problems(with_test2_input(7, "Int", 2.5, none, none)) == at + "(Int): value 2.5 is not an integer");
    CHECK(problems(with_test2_input(7, "Bool", "false", none, none)) ==
          at + R"((Bool): value "false" is not true or false)");
    CHECK(problems(with_test2_input(7, "String", 5, none, none)) == at + "(String): value 5 is not a string");
    CHECK(problems(with_test2_input(7, "None", "None", none, none)) == at + R"((None): value "None" is not "<None>")");
    CHECK(problems(with_test2_input(7, "Device", "cuda:0", none, none)) == "");
    CHECK(problems(with_test2_input(7, "Device", "", none, none)) ==
          at + R"((Device): value "" is not a device name like "cpu" or "cuda:0")");
    CHECK(problems(with_test2_input(7, "GenericDict", "<GenericDict>", none, none)) == "");
    CHECK(problems(with_test2_input(7, "GenericDict", json::object(), none, none)) ==
          at + R"((GenericDict): value {} is not "<GenericDict>")");
    CHECK(problems(with_test2_input(7, "", 1, none, none)) == "node 11 (## TEST 2 ##): inputs[7]: type is empty");
    CHECK(problems(with_test2_input(7, "Int", 1, json::array({3}), none)) ==
          at + "(Int): shape [3] is not [] (only tensors have shapes)");
}

TEST_CASE("execution trace schema: tensor and storage ids never equal a node id") {
    json et = torch_like();
    json& values = node(et, 4)["inputs"]["values"];
    values[0][0] = 3;
    values[1][1] = 14;
    CHECK(problems(et) == "node 4 (aten::add): inputs[0] (Tensor(float)): tensor_id 3 is the id of node 3 (## LOOP 0 "
                          "##) (one counter numbers nodes, tensors and storages)\n"
                          "node 4 (aten::add): inputs[1] (Tensor(float)): storage_id 14 is the id of node 14 "
                          "(aten::view) (one counter numbers nodes, tensors and storages)");
    values[0][0] = 1;
    values[1][1] = 8;
    CHECK(problems(et) == "node 4 (aten::add): inputs[0] (Tensor(float)): tensor_id 1 is below 2 (ids start at 2)\n"
                          "node 4 (aten::add): inputs[0] (Tensor(float)): tensor_id 1 is the id of node 1 "
                          "([pytorch|profiler|execution_trace|process]) (one counter numbers nodes, tensors and "
                          "storages)");
}

TEST_CASE("execution trace schema: the file parses as JSON, no key twice in an object") {
    const stint_test::temp_dir dir;
    SUBCASE("a bare NaN") {
        std::string text = torch_like_trace;
        text.replace(text.find(R"("nan"])"), 5, "NaN");
        write_gzip(dir.file("nan.et.json.gz"), text);
        const std::vector<std::string> found = stint_test::execution_trace_file_problems(dir.file("nan.et.json.gz"));
        REQUIRE(found.size() == 1);
        CHECK(found[0].starts_with("'" + dir.file("nan.et.json.gz") + "' is not valid JSON: "));
    }
    SUBCASE("a key twice") {
        std::string text = torch_like_trace;
        text.replace(text.find(R"("id": 16,)"), 0, R"("id": 15, )");
        write_text(dir.file("twice.et.json"), text);
        CHECK(stint_test::execution_trace_file_problems(dir.file("twice.et.json")) ==
              std::vector<std::string>{"JSON: key 'id' appears twice in one object"});
    }
    SUBCASE("a missing file") {
        CHECK(stint_test::execution_trace_file_problems(dir.file("none.et.json")) ==
              std::vector<std::string>{"'" + dir.file("none.et.json") + "': no such file"});
    }
}
