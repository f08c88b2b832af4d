// The execution trace (ET): torch's test_execution_trace.py cases in C++ (reference-formats §15), the
// rf_id join with the Chrome trace, data dependencies through tensor ids, outputs, and bad input.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <limits>
#include <map>
#include <memory>
#include <set>
#include <stdexcept>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include <stint/stint.hpp>

#include "execution_trace_schema.hpp"
#include "test_util.hpp"

namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using shapes = stint::config<stint::record_shapes>;

constexpr std::string_view process_node = "[pytorch|profiler|execution_trace|process]";
constexpr std::string_view thread_node = "[pytorch|profiler|execution_trace|thread]";

// A tensor as a framework has one: shared storage, sizes, strides, a data pointer; no stint code.
struct tensor {
    std::shared_ptr<std::vector<float>> storage;
    std::vector<std::int64_t> dims;

    const std::vector<std::int64_t>& sizes() const { return dims; }
    std::vector<std::int64_t> strides() const {
        std::vector<std::int64_t> s(dims.size(), 1);
        for (std::size_t i = dims.size(); i-- > 1;) s[i - 1] = s[i] * dims[i];
        return s;
    }
    std::string_view dtype() const { return "float"; }
    const float* data() const { return storage->data(); }
    std::size_t numel() const { return storage->size(); }
};

tensor randn(std::vector<std::int64_t> dims) {
    std::int64_t n = 1;
    for (std::int64_t d : dims) n *= d;
    return {std::make_shared<std::vector<float>>(static_cast<std::size_t>(n), 0.5f), std::move(dims)};
}

tensor add(const tensor& a, const tensor& b) {
    STINT_OP(shapes, "aten::add", a, b);
    tensor c = randn(a.dims);
    for (std::size_t i = 0; i < c.numel(); ++i) (*c.storage)[i] = (*a.storage)[i] + (*b.storage)[i];
    STINT_OUTPUTS(c);
    return c;
}

tensor mul(const tensor& a, const tensor& b) {
    STINT_OP(shapes, "aten::mul", a, b);
    tensor c = randn(a.dims);
    for (std::size_t i = 0; i < c.numel(); ++i) (*c.storage)[i] = (*a.storage)[i] * (*b.storage)[i];
    stint::record_outputs(c);
    return c;
}

tensor gelu(const tensor& a) {
    STINT_OP(shapes, "aten::gelu", a, std::string_view("none"));
    tensor c = randn(a.dims);
    stint::record_outputs(c);
    return c;
}

// torch's payload(): a record_function with an args string around an annotation with ten inputs of
// every kind (the list and the pair of u at 3 and 4), then a few ops.
void payload() {
    const tensor u = randn({3, 4, 5});
    const stint::record_function test1("## TEST 1 ##", "1, 2, 3");
    const double inf = std::numeric_limits<double>::infinity();
    STINT_OP(shapes, "## TEST 2 ##", 1, false, 2.5, std::vector<tensor>{u, u}, std::array<tensor, 2>{u, u}, "hello", u,
             inf, -inf, std::numeric_limits<double>::quiet_NaN());
    const tensor x = randn({10, 10});
    const tensor y = randn({10, 10});
    const tensor z = add(add(add(x, y), mul(x, y)), mul(x, y));
    const tensor m = randn({2});
    (void)gelu(m);
    (void)z;
}

void loop(int idx) {
    const stint::record_function rf("## LOOP " + std::to_string(idx) + " ##");
    payload();
}

// Reads an ET back, after checking it against the schema torch's observer writes.
json read_et(const std::string& path) {
    stint_test::check_execution_trace_file(path);
    json et = stint_test::read_json(path);
    REQUIRE(et.contains("nodes"));
    return et;
}

const json* attr(const json& node, std::string_view name) {
    for (const json& a : node["attrs"]) {
        if (a["name"] == name) return &a["value"];
    }
    return nullptr;
}

bool is_op_node(const json& n) { return n["name"] != process_node && n["name"] != thread_node; }

int loop_count(const json& et) {
    int count = 0;
    for (const json& n : et["nodes"]) count += n["name"].get<std::string>().starts_with("## LOOP ") ? 1 : 0;
    return count;
}

bool has_root(const json& et) {
    for (const json& n : et["nodes"]) {
        if (n["name"] == process_node) return n["id"] == 1;
    }
    return false;
}

// torch's get_execution_trace_rf_ids: the sorted rf_ids of every node but the root and thread nodes.
std::vector<std::uint64_t> et_rf_ids(const json& et) {
    std::vector<std::uint64_t> ids;
    for (const json& n : et["nodes"]) {
        if (is_op_node(n)) ids.push_back((*attr(n, "rf_id")).get<std::uint64_t>());
    }
    std::sort(ids.begin(), ids.end());
    return ids;
}

// torch's get_kineto_rf_ids: the sorted "Record function id" of every cpu_op and user_annotation event.
std::vector<std::uint64_t> kineto_rf_ids(const json& trace) {
    std::vector<std::uint64_t> ids;
    for (const json& e : trace["traceEvents"]) {
        const std::string cat = e.value("cat", "");
        if (cat == "cpu_op" || cat == "user_annotation") {
            ids.push_back(e["args"]["Record function id"].get<std::uint64_t>());
        }
    }
    std::sort(ids.begin(), ids.end());
    return ids;
}

}  // namespace

TEST_CASE("execution trace alone: five loops, the root, and torch's 6-field tensor values") {
    const stint_test::temp_dir dir;
    const std::string path = dir.file("alone.et.json");
    stint::execution_trace_observer et;
    CHECK(&et.register_callback(path) == &et);
    et.start();
    CHECK(et.is_running());
    for (int idx = 0; idx < 5; ++idx) loop(idx);
    et.stop();
    CHECK_FALSE(et.is_running());
    CHECK(et.get_output_file_path() == path);
    CHECK_FALSE(fs::exists(path));  // streamed to a temporary, renamed into place when finished
    et.unregister_callback();
    CHECK_FALSE(et.is_registered());

    const json doc = read_et(path);
    CHECK(has_root(doc));
    CHECK(loop_count(doc) == 5);
    int test2 = 0;
    for (const json& n : doc["nodes"]) {
        if (n["name"] != "## TEST 2 ##") continue;
        ++test2;
        const json& values = n["inputs"]["values"];
        REQUIRE(values.size() == 10);
        CHECK(values[3][0].size() == 6);  // tensor_tuple_size
        CHECK(values[4][0].size() == 6);
        CHECK(values[3][0] == values[6]);  // the same u, the same ids
        CHECK(values[0] == 1);
        CHECK(values[1] == false);
        CHECK(values[2] == 2.5);
        CHECK(values[5] == "hello");
        CHECK(values[7] == "inf");
        CHECK(values[8] == "-inf");
        CHECK(values[9] == "nan");
        CHECK(n["inputs"]["types"] == json::array({"Int", "Bool", "Double", "GenericList[Tensor(float),Tensor(float)]",
                                                   "GenericList[Tensor(float),Tensor(float)]", "String",
                                                   "Tensor(float)", "Double", "Double", "Double"}));
        CHECK(n["inputs"]["shapes"][6] == json::array({3, 4, 5}));
        CHECK(n["inputs"]["strides"][6] == json::array({20, 5, 1}));
        CHECK(n["inputs"]["shapes"][3] == json::array({json::array({3, 4, 5}), json::array({3, 4, 5})}));
        const json& u = values[6];
        CHECK(u[2] == 0);      // offset
        CHECK(u[3] == 60);     // element count
        CHECK(u[4] == 4);      // item size
        CHECK(u[5] == "cpu");
    }
    CHECK(test2 == 5);
    // record_function's args string is its one input, as torch records it.
    for (const json& n : doc["nodes"]) {
        if (n["name"] != "## TEST 1 ##") continue;
        CHECK(n["inputs"]["values"] == json::array({"1, 2, 3"}));
        CHECK(n["inputs"]["types"] == json::array({"String"}));
    }
}

TEST_CASE("execution trace with the profiler: the active window only, rf_ids equal the Chrome trace's") {
    const stint_test::temp_dir dir;
    const std::string et_path = dir.file("kineto.et.json");
    const std::string trace_path = dir.file("kineto.kineto.json");
    int trace_called = 0;
    stint::execution_trace_observer observer;
    {
        stint::profiler<shapes> p({
            .schedule = stint::schedule({.skip_first = 3, .wait = 1, .warmup = 1, .active = 2, .repeat = 1}),
            .on_trace_ready = [&](stint::profiler<shapes>&) { ++trace_called; },
            .execution_trace_observer = &observer.register_callback(et_path),
        });
        for (int idx = 0; idx < 10; ++idx) {
            loop(idx);
            CHECK(observer.is_running() == (idx == 5 || idx == 6));
            p.step();
        }
        CHECK(observer.get_output_file_path() == et_path);
        p.export_chrome_trace(trace_path);
    }
    CHECK(trace_called == 1);
    CHECK_FALSE(observer.is_registered());  // the profiler's end finished the file
    const json doc = read_et(et_path);
    CHECK(has_root(doc));
    CHECK(loop_count(doc) == 2);
    const json trace = stint_test::read_json(trace_path);
    const std::vector<std::uint64_t> from_et = et_rf_ids(doc);
    const std::vector<std::uint64_t> from_trace = kineto_rf_ids(trace);
    CHECK(!from_et.empty());
    CHECK(from_et == from_trace);

    // Each node's rf_id is exactly one cpu_op / user_annotation event of the same name; ProfilerStep
    // annotations included.
    std::map<std::uint64_t, std::vector<std::string>> by_id;
    for (const json& e : trace["traceEvents"]) {
        const std::string cat = e.value("cat", "");
        if (cat == "cpu_op" || cat == "user_annotation") {
            by_id[e["args"]["Record function id"].get<std::uint64_t>()].push_back(e["name"].get<std::string>());
        }
    }
    int steps = 0;
    for (const json& n : doc["nodes"]) {
        if (!is_op_node(n)) continue;
        const auto names = by_id.find((*attr(n, "rf_id")).get<std::uint64_t>());
        REQUIRE(names != by_id.end());
        CHECK(names->second == std::vector<std::string>{n["name"].get<std::string>()});
        steps += n["name"].get<std::string>().starts_with("ProfilerStep#") ? 1 : 0;
    }
    CHECK(steps == 2);
}

TEST_CASE("execution trace start and stop: three loops recorded out of ten, one file") {
    const stint_test::temp_dir dir;
    const std::string path = dir.file("start_stop.et.json");
    stint::execution_trace_observer et;
    et.register_callback(path);
    int expected = 0;
    for (int idx = 0; idx < 10; ++idx) {
        if (idx == 3 || idx == 8) et.start();
        if (idx == 5 || idx == 9) et.stop();
        if (et.is_running()) ++expected;
        loop(idx);
    }
    CHECK(expected == 3);
    et.unregister_callback();
    const json doc = read_et(path);
    CHECK(has_root(doc));
    CHECK(loop_count(doc) == expected);
    CHECK(doc["stint"]["spans"] == 2);
    // The thread keeps one node across spans, and rf_ids stay unique.
    int threads = 0;
    for (const json& n : doc["nodes"]) threads += n["name"] == thread_node ? 1 : 0;
    CHECK(threads == 1);
    const std::vector<std::uint64_t> ids = et_rf_ids(doc);
    CHECK(std::adjacent_find(ids.begin(), ids.end()) == ids.end());
}

TEST_CASE("execution trace repeat in loop: a new observer per iteration, each file with root id 1") {
    const std::set<int> iterations{3, 4, 6, 8};
    const stint_test::temp_dir dir;
    std::vector<std::string> paths;
    for (int idx = 0; idx < 10; ++idx) {
        std::optional<stint::execution_trace_observer> et;
        if (iterations.contains(idx)) {
            paths.push_back(dir.file("repeat_" + std::to_string(idx) + ".et.json"));
            et.emplace().register_callback(paths.back()).start();
        }
        loop(idx);
        if (et) {
            et->stop();
            et->unregister_callback();
        }
    }
    int events = 0;
    for (const std::string& path : paths) {
        const json doc = read_et(path);
        CHECK(has_root(doc));
        events += loop_count(doc);
    }
    CHECK(events == 4);
}

TEST_CASE("execution trace no capture: register then unregister writes a valid file with the root") {
    const stint_test::temp_dir dir;
    const std::string path = dir.file("no_capture.et.json");
    stint::execution_trace_observer et;
    CHECK(et.get_output_file_path().empty());
    et.register_callback(path);
    CHECK(et.get_output_file_path() == path);
    et.unregister_callback();
    const json doc = read_et(path);
    CHECK(has_root(doc));
    CHECK(doc["nodes"].size() == 1);
    CHECK(doc["schema"] == "1.1.1-chakra.0.0.4");
    et.unregister_callback();  // twice: nothing
    // Registered again, it writes a new file.
    et.register_callback(path);
    et.start();
    loop(0);
    et.stop();
    et.unregister_callback();
    CHECK(loop_count(read_et(path)) == 1);
}

TEST_CASE("execution trace dynamic shapes: each call's node carries that call's shapes") {
    const stint_test::temp_dir dir;
    const std::string path = dir.file("dynamic.et.json");
    stint::execution_trace_observer et;
    et.register_callback(path).start();
    for (std::int64_t n = 2; n <= 5; ++n) {
        const tensor x = randn({n, 4});
        (void)add(x, x);
    }
    et.stop();
    et.unregister_callback();
    const json doc = read_et(path);
    std::vector<std::vector<std::int64_t>> seen;
    for (const json& node : doc["nodes"]) {
        if (node["name"] == "aten::add") seen.push_back(node["inputs"]["shapes"][0].get<std::vector<std::int64_t>>());
    }
    CHECK(seen == std::vector<std::vector<std::int64_t>>{{2, 4}, {3, 4}, {4, 4}, {5, 4}});
}

TEST_CASE("execution trace data dependency: d = c + a names the tensor c = a * b produced") {
    const stint_test::temp_dir dir;
    const std::string path = dir.file("dependency.et.json");
    stint::execution_trace_observer et;
    et.register_callback(path).start();
    const tensor a = randn({4, 4});
    const tensor b = randn({4, 4});
    const tensor c = mul(a, b);
    const tensor d = add(c, a);
    (void)d;
    et.stop();
    et.unregister_callback();

    // A reader's rebuild: the op that produced each tensor id, then each consumer's producers.
    const json doc = read_et(path);
    std::map<std::uint64_t, std::string> producer;
    const json* add_node = nullptr;
    const json* mul_node = nullptr;
    for (const json& n : doc["nodes"]) {
        for (const json& v : n["outputs"]["values"]) producer[v[0].get<std::uint64_t>()] = n["name"];
        if (n["name"] == "aten::add") add_node = &n;
        if (n["name"] == "aten::mul") mul_node = &n;
    }
    REQUIRE(add_node != nullptr);
    REQUIRE(mul_node != nullptr);
    const json& c_in = (*add_node)["inputs"]["values"][0];
    const json& c_out = (*mul_node)["outputs"]["values"][0];
    CHECK(c_in == c_out);
    CHECK(producer[c_in[0].get<std::uint64_t>()] == "aten::mul");
    // a is an input of both, with one id; a, b, c have different ids and storages.
    CHECK((*add_node)["inputs"]["values"][1] == (*mul_node)["inputs"]["values"][0]);
    const std::set<std::uint64_t> tensors{(*mul_node)["inputs"]["values"][0][0].get<std::uint64_t>(),
                                          (*mul_node)["inputs"]["values"][1][0].get<std::uint64_t>(),
                                          c_out[0].get<std::uint64_t>()};
    CHECK(tensors.size() == 3);
    CHECK(producer.count((*mul_node)["inputs"]["values"][0][0].get<std::uint64_t>()) == 0);  // a: from outside
}

namespace {

// A view into another tensor's storage: its traits give the base, so the ET shows one storage id and
// the view's offset.
struct view {
    const tensor* base;
    std::int64_t first;
    std::int64_t count;
};

}  // namespace

template <>
struct stint::input_traits<view> {
    static void capture(stint::input_writer& w, const view& v) {
        w.tensor("float", std::array<std::int64_t, 1>{v.count}, std::array<std::int64_t, 1>{1},
                 stint::tensor_address{.data = v.base->data() + v.first,
                                       .itemsize = sizeof(float),
                                       .device = {stint::device_type::cuda, 1},
                                       .storage = v.base->data()});
    }
};

TEST_CASE("execution trace tensor identity from traits: views share the storage id, with their offset") {
    const stint_test::temp_dir dir;
    const std::string path = dir.file("views.et.json.gz");
    stint::execution_trace_observer et;
    et.register_callback(path).start();
    const tensor base = randn({100});
    {
        STINT_OP(shapes, "my::two_views", view{&base, 10, 5}, view{&base, 30, 5});
    }
    et.stop();
    et.unregister_callback();
    const json doc = read_et(path);  // .gz: written compressed
    const json* node = nullptr;
    for (const json& n : doc["nodes"]) {
        if (n["name"] == "my::two_views") node = &n;
    }
    REQUIRE(node != nullptr);
    const json& first = (*node)["inputs"]["values"][0];
    const json& second = (*node)["inputs"]["values"][1];
    CHECK(first[0] != second[0]);      // two tensors
    CHECK(first[1] == second[1]);      // one storage
    CHECK(first[2] == 10);
    CHECK(second[2] == 30);
    CHECK(first[3] == 5);
    CHECK(first[4] == 4);
    CHECK(first[5] == "cuda:1");
}

TEST_CASE("execution trace outputs: innermost op, the Chrome trace's Output args, nothing when not kept") {
    const stint_test::temp_dir dir;
    const std::string path = dir.file("outputs.et.json");
    const std::string trace_path = dir.file("outputs.pt.trace.json");
    const tensor a = randn({2, 3});
    const auto workload = [&] {
        stint::record_outputs(a);  // outside every scope: nothing to attach to
        STINT_SCOPE("outer");
        {
            STINT_OP(shapes, "my::op", a);
            {
                STINT_SCOPE("inner scope");
                stint::record_outputs(a, 7);  // the op around the scope takes them
            }
        }
        stint::record_outputs(std::string("scope's"));  // no op open: the scope takes it
    };
    {
        stint::profiler<shapes> prof;
        prof.start();
        workload();
        prof.stop();
        prof.export_chrome_trace(trace_path);
        std::optional<stint::event> op;
        std::optional<stint::event> outer;
        std::optional<stint::event> inner;
        for (const stint::event& e : prof.events()) {
            if (e.name == "my::op") op = e;
            if (e.name == "outer") outer = e;
            if (e.name == "inner scope") inner = e;
        }
        REQUIRE(op != std::nullopt);
        REQUIRE(outer != std::nullopt);
        REQUIRE(inner != std::nullopt);
        REQUIRE(prof.events().args(*op) != nullptr);
        const std::vector<stint::op_input>& outputs = prof.events().args(*op)->outputs;
        REQUIRE(outputs.size() == 2);
        CHECK(outputs[0].kind == stint::input_kind::tensor);
        CHECK(outputs[0].dims == std::vector<std::int64_t>{2, 3});
        CHECK_FALSE(outputs[0].identity.has_value());  // no execution trace: no identities
        CHECK(outputs[1].int_value() == 7);
        REQUIRE(prof.events().args(*outer) != nullptr);
        CHECK(prof.events().args(*outer)->outputs.size() == 1);
        CHECK(prof.events().args(*inner) == nullptr);
        CHECK(prof.events().args(*op)->inputs.empty());  // kept whole only for an execution trace
    }
    const json trace = stint_test::read_json(trace_path);
    bool found = false;
    for (const json& e : trace["traceEvents"]) {
        if (e.value("name", "") != "my::op") continue;
        found = true;
        CHECK(e["args"]["Output Dims"] == json::array({json::array({2, 3}), json::array()}));
        CHECK(e["args"]["Output type"] == json::array({"float", "Scalar"}));
        CHECK(e["args"]["Concrete Outputs"] == json::array({"", "7"}));
        CHECK(e["args"]["Input Dims"] == json::array({json::array({2, 3})}));
    }
    CHECK(found);

    // A timing-only profiler keeps no outputs: record_outputs costs its two loads and records nothing.
    {
        stint::profiler<> prof;
        prof.start();
        workload();
        prof.stop();
        for (const stint::event& e : prof.events()) {
            const stint::event_args* args = prof.events().args(e);
            CHECK((args == nullptr || args->outputs.empty()));
        }
    }
}

TEST_CASE("execution trace JSON stays valid under strange names and many threads") {
    const stint_test::temp_dir dir;
    const std::string path = dir.file("threads.et.json");
    const std::vector<std::string> names{"quote \" and \\ backslash", "new\nline\ttab", "ctl \x01\x1f",
                                         "bad utf8 \xff\xfe", "emoji \xf0\x9f\x94\xa5", ""};
    constexpr int threads = 8;
    constexpr int rounds = 50;
    stint::execution_trace_observer et;
    et.register_callback(path).start();
    std::vector<std::thread> workers;
    for (int t = 0; t < threads; ++t) {
        workers.emplace_back([&, t] {
            for (int r = 0; r < rounds; ++r) {
                const stint::record_function rf(names[static_cast<std::size_t>(r) % names.size()]);
                const tensor x = randn({static_cast<std::int64_t>(t) + 1, 2});
                STINT_OP(shapes, "my::strange \"op\"", x, names[static_cast<std::size_t>(r + t) % names.size()]);
                stint::record_outputs(x);
            }
        });
    }
    for (std::thread& w : workers) w.join();
    et.stop();
    et.unregister_callback();

    const json doc = read_et(path);  // parses, and follows the schema
    std::map<std::uint64_t, std::uint64_t> thread_of_node;  // thread node id -> tid
    std::map<std::uint64_t, const json*> by_id;
    for (const json& n : doc["nodes"]) {
        by_id[n["id"].get<std::uint64_t>()] = &n;
        if (n["name"] == thread_node) {
            thread_of_node[n["id"].get<std::uint64_t>()] = (*attr(n, "tid")).get<std::uint64_t>();
        }
    }
    CHECK(thread_of_node.size() == threads);
    std::map<std::uint64_t, int> ops_per_tid;
    std::set<std::string> seen_names;
    for (const json& n : doc["nodes"]) {
        if (n["name"] != "my::strange \"op\"") {
            if (is_op_node(n)) seen_names.insert(n["name"].get<std::string>());
            continue;
        }
        // Its parent is the record_function around it, whose parent is its thread's node, same tid.
        const json& parent = *by_id.at(n["ctrl_deps"].get<std::uint64_t>());
        const std::uint64_t thread = parent["ctrl_deps"].get<std::uint64_t>();
        REQUIRE(thread_of_node.contains(thread));
        CHECK(thread_of_node[thread] == (*attr(n, "tid")).get<std::uint64_t>());
        ++ops_per_tid[thread_of_node[thread]];
        CHECK(n["outputs"]["values"].size() == 1);
    }
    CHECK(ops_per_tid.size() == threads);
    for (const auto& [tid, count] : ops_per_tid) CHECK(count == rounds);
    CHECK(seen_names.contains("quote \" and \\ backslash"));
    CHECK(seen_names.contains("new\nline\ttab"));
    CHECK(seen_names.contains("bad utf8 \xef\xbf\xbd\xef\xbf\xbd"));  // U+FFFD, never invalid UTF-8
    CHECK(doc["stint"]["dropped"] == 0);
}

TEST_CASE("execution trace bad use: clear errors, nothing lost") {
    SUBCASE("an unwritable path fails at register_callback, not at the end") {
        stint::execution_trace_observer et;
        CHECK_THROWS_AS(et.register_callback("/nonexistent-dir/x.et.json"), std::system_error);
        CHECK_FALSE(et.is_registered());
        CHECK_THROWS_WITH_AS(et.start(),
                             "stint: execution_trace_observer::start(): no output file; call register_callback(path) "
                             "first",
                             std::logic_error);
    }
    SUBCASE("registered twice, attached unregistered, started while attached") {
        const stint_test::temp_dir dir;
        const std::string path = dir.file("bad_use.et.json");
        stint::execution_trace_observer et;
        et.register_callback(path);
        CHECK_THROWS_AS(et.register_callback(path + "2"), std::logic_error);
        stint::execution_trace_observer unregistered;
        CHECK_THROWS_WITH_AS(stint::profiler<>({.execution_trace_observer = &unregistered}),
                             "stint: profiler_options::execution_trace_observer: the observer has no output file; "
                             "call register_callback(path) first",
                             std::invalid_argument);
        {
            stint::profiler<> prof({.execution_trace_observer = &et});
            CHECK_THROWS_AS(et.start(), std::logic_error);
            CHECK_THROWS_AS(stint::profiler<>({.execution_trace_observer = &et}), std::invalid_argument);
            prof.start();
            loop(0);
            prof.stop();
        }
        CHECK(loop_count(read_et(path)) == 1);
    }
    SUBCASE("a profiler whose construction throws lets its observer go") {
        const stint_test::temp_dir dir;
        const std::string path = dir.file("failed_profiler.et.json");
        stint::execution_trace_observer et;
        et.register_callback(path);
        const auto failing = [](std::int64_t) -> stint::profiler_action { throw std::runtime_error("no schedule"); };
        CHECK_THROWS_WITH_AS(stint::profiler<>({.schedule = failing, .execution_trace_observer = &et}), "no schedule",
                             std::runtime_error);
        {
            stint::profiler<> prof({.execution_trace_observer = &et});  // not "already attached"
            prof.start();
            loop(5);
            prof.stop();
        }
        CHECK(loop_count(read_et(path)) == 1);
    }
    SUBCASE("alone while a profiler records: refused") {
        const stint_test::temp_dir dir;
        const std::string path = dir.file("busy.et.json");
        stint::execution_trace_observer et;
        et.register_callback(path);
        stint::profiler<> prof;
        prof.start();
        CHECK_THROWS_AS(et.start(), std::logic_error);
        prof.stop();
        et.start();
        loop(1);
        et.stop();
        et.unregister_callback();
        CHECK(loop_count(read_et(path)) == 1);
    }
    SUBCASE("an observer destroyed before its profiler: the file is finished, the profiler forgets it") {
        const stint_test::temp_dir dir;
        const std::string path = dir.file("gone.et.json");
        stint::profiler<> prof({.execution_trace_observer = nullptr});
        {
            auto et = std::make_unique<stint::execution_trace_observer>();
            et->register_callback(path);
            stint::profiler<> attached({.execution_trace_observer = et.get()});
            attached.start();
            loop(2);
            attached.stop();
            et.reset();  // before `attached`
            attached.start();
            loop(3);
            attached.stop();
        }
        const json doc = read_et(path);
        CHECK(loop_count(doc) == 1);
    }
    SUBCASE("an observer destroyed while registered finishes its file") {
        const stint_test::temp_dir dir;
        const std::string path = dir.file("destroyed.et.json");
        {
            stint::execution_trace_observer et;
            et.register_callback(path).start();
            loop(4);
        }
        CHECK(loop_count(read_et(path)) == 1);
    }
}

TEST_CASE("execution trace drops: a span over its budget says what it lost, and the file stays valid") {
    const stint_test::temp_dir dir;
    const std::string path = dir.file("drops.et.json");
    stint::execution_trace_observer et({.buffer_budget_bytes = 4096});
    et.register_callback(path).start();
    for (int idx = 0; idx < 50; ++idx) loop(idx);
    et.stop();
    et.unregister_callback();
    const json doc = read_et(path);  // ops whose parents were dropped hang from their thread's node
    const std::uint64_t dropped = doc["stint"]["dropped"].get<std::uint64_t>();
    const std::uint64_t recorded = doc["stint"]["recorded"].get<std::uint64_t>();
    CHECK(dropped > 0);
    CHECK(recorded > 0);
    std::uint64_t ops = 0;
    for (const json& n : doc["nodes"]) ops += is_op_node(n) ? 1 : 0;
    CHECK(ops <= recorded);
    CHECK(ops > 0);
}
