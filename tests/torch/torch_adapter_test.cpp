// stint::torch_observer against the real thing: libtorch 1.13 (Debian's libtorch-dev), its own legacy
// profiler recording the same steps at the same time (issue 32).
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include <nlohmann/json.hpp>
#include <torch/csrc/autograd/profiler_legacy.h>
#include <torch/torch.h>

#include <stint/stint.hpp>
#include <stint/adapters/torch.hpp>

#include "../test_util.hpp"

// glog (through libtorch) defines its own CHECK over doctest's: this file says DOCTEST_CHECK.

namespace {

using shapes_and_flops = stint::config<stint::record_shapes, stint::with_flops>;
namespace legacy = torch::autograd::profiler;

// A small conv net, trained as a user would.
struct small_net : torch::nn::Module {
    torch::nn::Conv2d conv{nullptr};
    torch::nn::Linear fc{nullptr};
    small_net() {
        conv = register_module("conv", torch::nn::Conv2d(torch::nn::Conv2dOptions(1, 4, 3)));
        fc = register_module("fc", torch::nn::Linear(4 * 6 * 6, 10));
    }
    torch::Tensor forward(torch::Tensor x) { return fc->forward(torch::relu(conv->forward(x)).flatten(1)); }
};

struct training {
    small_net net;
    torch::optim::SGD optimizer{net.parameters(), 0.01};
    torch::Tensor x = torch::randn({8, 1, 8, 8});
    torch::Tensor y = torch::randint(0, 10, {8});

    void step() {
        RECORD_USER_SCOPE("train_step");
        optimizer.zero_grad();
        torch::Tensor loss = torch::nn::functional::cross_entropy(net.forward(x), y);
        loss.backward();
        optimizer.step();
    }
};

// One op as both profilers saw it: name, input shapes, sequence number, forward thread.
using op_key = std::tuple<std::string, std::vector<std::vector<std::int64_t>>, std::int64_t, std::uint64_t>;

// The legacy profiler's ops, with what libtorch's Kineto API adds when it collects them (torch 1.13,
// profiler/collection.cpp): an "autograd::engine::evaluate_function: X" scope takes the sequence number
// and forward thread of the autograd node that begins right after it on its thread.
std::multiset<op_key> legacy_ops(const legacy::thread_event_lists& lists) {
    std::multiset<op_key> ops;
    const auto function = static_cast<std::uint8_t>(at::RecordScope::FUNCTION);
    const auto backward_function = static_cast<std::uint8_t>(at::RecordScope::BACKWARD_FUNCTION);
    for (const auto& list : lists) {
        const legacy::LegacyEvent* previous = nullptr;
        for (const legacy::LegacyEvent& e : list) {
            if (e.kindStr() != "push") continue;
            if (previous != nullptr) {
                std::int64_t sequence = previous->sequenceNr();
                std::uint64_t forward_thread = sequence >= 0 ? previous->fwdThreadId() : 0;
                if (previous->scope() == function && e.scope() == backward_function && e.sequenceNr() >= 0 &&
                    std::string(previous->name()).rfind("autograd::engine::evaluate_function: ", 0) == 0) {
                    sequence = e.sequenceNr();
                    forward_thread = e.fwdThreadId();
                }
                ops.insert({previous->name(), previous->shapes(), sequence, forward_thread});
            }
            previous = &e;
        }
        if (previous != nullptr) {
            ops.insert({previous->name(), previous->shapes(), previous->sequenceNr(),
                        previous->sequenceNr() >= 0 ? previous->fwdThreadId() : 0});
        }
    }
    return ops;
}

std::multiset<op_key> stint_ops(const stint::event_list& events) {
    std::multiset<op_key> ops;
    for (const stint::event& e : events) {
        if (e.kind != stint::event_kind::cpu_op && e.kind != stint::event_kind::user_annotation) continue;
        const stint::event_args* args = events.args(e);
        std::vector<std::vector<std::int64_t>> dims;
        std::int64_t sequence = -1;
        std::uint64_t forward_thread = 0;
        if (args != nullptr) {
            dims = args->input_dims;
            if (const stint::named_arg* a = args->find_arg("Sequence number")) sequence = a->integer;
            if (const stint::named_arg* a = args->find_arg("Fwd thread id")) forward_thread = static_cast<std::uint64_t>(a->integer);
        }
        ops.insert({std::string(e.name), dims, sequence, forward_thread});
    }
    return ops;
}

// What one side has that the other has not, as text (the first few of each).
std::string difference(const std::multiset<op_key>& ours, const std::multiset<op_key>& theirs) {
    std::string text;
    const auto list = [&](const std::multiset<op_key>& a, const std::multiset<op_key>& b, const char* side) {
        std::vector<op_key> only;
        std::set_difference(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(only));
        for (std::size_t i = 0; i < std::min<std::size_t>(only.size(), 10); ++i) {
            text += std::string(side) + ": " + std::get<0>(only[i]) + " seq " + std::to_string(std::get<2>(only[i])) +
                    " fwd thread " + std::to_string(std::get<3>(only[i])) + " inputs " +
                    std::to_string(std::get<1>(only[i]).size()) + "\n";
        }
    };
    list(ours, theirs, "only stint");
    list(theirs, ours, "only libtorch");
    return text;
}

const stint::event* first_named(const std::vector<stint::event>& events, std::string_view name) {
    const auto found = std::find_if(events.begin(), events.end(), [&](const stint::event& e) { return e.name == name; });
    return found == events.end() ? nullptr : &*found;
}

}  // namespace

TEST_CASE("a training loop: every op with libtorch's own name, shapes, sequence number and forward thread, as its legacy profiler saw them") {
    torch::manual_seed(0);
    training loop;
    loop.step();  // warm up: the first step allocates what later steps reuse
    stint::torch_observer<shapes_and_flops> observe;
    stint::profiler<shapes_and_flops> prof;
    legacy::enableProfilerLegacy(torch::profiler::impl::ProfilerConfig(torch::profiler::impl::ProfilerState::CPU, true));
    prof.start();
    for (int i = 0; i < 3; ++i) loop.step();
    prof.stop();
    const legacy::thread_event_lists lists = legacy::disableProfilerLegacy();

    const std::multiset<op_key> theirs = legacy_ops(lists);
    const std::multiset<op_key> ours = stint_ops(prof.events());
    REQUIRE(theirs.size() > 100);
    DOCTEST_CHECK(ours.size() == theirs.size());
    const bool same = ours == theirs;
    DOCTEST_CHECK_MESSAGE(same, difference(ours, theirs));
    std::set<std::string> names;
    for (const op_key& op : ours) names.insert(std::get<0>(op));
    DOCTEST_CHECK(names.size() > 40);
    DOCTEST_CHECK(prof.stats().dropped == 0);

    std::vector<stint::event> events;
    for (const stint::event& e : prof.events()) events.push_back(e);
    // aten ops and autograd nodes are cpu_op; libtorch's user scopes are user_annotation.
    const stint::event* addmm = first_named(events, "aten::addmm");
    const stint::event* backward = first_named(events, "AddmmBackward0");
    const stint::event* scope = first_named(events, "train_step");
    REQUIRE(addmm != nullptr);
    REQUIRE(backward != nullptr);
    REQUIRE(scope != nullptr);
    DOCTEST_CHECK(addmm->kind == stint::event_kind::cpu_op);
    DOCTEST_CHECK(backward->kind == stint::event_kind::cpu_op);
    DOCTEST_CHECK(scope->kind == stint::event_kind::user_annotation);
    // Inside the step's scope.
    stint::event_index up = addmm->parent;
    while (up != stint::no_index && prof.events()[up].name != "train_step") up = prof.events()[up].parent;
    DOCTEST_CHECK(up != stint::no_index);
    // Input Dims are the tensors' sizes: bias [10], input [8, 144], weight transposed [144, 10], beta, alpha.
    const stint::event_args* args = prof.events().args(*addmm);
    REQUIRE(args != nullptr);
    DOCTEST_CHECK(args->input_dims == std::vector<std::vector<std::int64_t>>{{10}, {8, 144}, {144, 10}, {}, {}});
    DOCTEST_CHECK(args->input_types == std::vector<std::string>{"float", "float", "float", "Scalar", "Scalar"});
    DOCTEST_CHECK(args->input_strides.at(2) == std::vector<std::int64_t>{1, 144});
    // Flops from the op's own name: addmm 2·M·K·N; conv2d too.
    DOCTEST_CHECK(addmm->flops == 2 * 8 * 144 * 10);
    const stint::event* conv = first_named(events, "aten::conv2d");
    REQUIRE(conv != nullptr);
    DOCTEST_CHECK(conv->flops > 0);
    // Forward and backward share a sequence number; the backward names its forward thread.
    const std::int64_t sequence = args->find_arg("Sequence number")->integer;
    const stint::named_arg* backward_sequence = prof.events().args(*backward)->find_arg("Sequence number");
    REQUIRE(backward_sequence != nullptr);
    DOCTEST_CHECK(backward_sequence->integer == sequence);
    // The engine's scope around the node carries the node's sequence number and forward thread, as
    // libtorch's Kineto API puts them on it (so tools that link backward to forward find it).
    const stint::event_list& list = prof.events();
    std::size_t evaluates = 0;
    for (const stint::event& e : list) {
        if (e.name != "autograd::engine::evaluate_function: AddmmBackward0") continue;
        ++evaluates;
        std::optional<stint::event> node;  // the list makes its events as it is read: kept by value
        for (const stint::event& child : list) {
            if (child.parent == e.index && child.name == "AddmmBackward0") node = child;
        }
        REQUIRE(node.has_value());
        const stint::named_arg* own = list.args(e) != nullptr ? list.args(e)->find_arg("Sequence number") : nullptr;
        REQUIRE(own != nullptr);
        DOCTEST_CHECK(own->integer == list.args(*node)->find_arg("Sequence number")->integer);
        DOCTEST_CHECK(list.args(e)->find_arg("Fwd thread id")->integer ==
                      list.args(*node)->find_arg("Fwd thread id")->integer);
    }
    DOCTEST_CHECK(evaluates == 3);

    // The Chrome trace as torch's: cat cpu_op, Input Dims, Sequence number, Fwd thread id.
    const stint_test::temp_dir dir;
    prof.export_chrome_trace(dir.file("t.json"));
    const nlohmann::json trace = stint_test::read_json(dir.file("t.json"));
    bool seen = false;
    for (const nlohmann::json& e : trace["traceEvents"]) {
        if (e.value("name", "") != "AddmmBackward0" || e["args"]["Record function id"] != backward->id) continue;
        seen = true;
        DOCTEST_CHECK(e["cat"] == "cpu_op");
        DOCTEST_CHECK(e["args"]["Sequence number"] == backward_sequence->integer);
        DOCTEST_CHECK(e["args"].contains("Fwd thread id"));
        DOCTEST_CHECK(e["args"]["Input Dims"] == nlohmann::json::array({nlohmann::json::array({8, 10})}));
    }
    DOCTEST_CHECK(seen);
}

TEST_CASE("the callback is in libtorch's list only while a stint session records; one observer at a time") {
    CHECK_FALSE(at::hasGlobalCallbacks());
    const torch::Tensor a = torch::ones({4, 4});
    {
        stint::torch_observer<> observe;
        CHECK_FALSE(observe.installed());
        CHECK_FALSE(at::hasGlobalCallbacks());
        CHECK_THROWS_AS(stint::torch_observer<>(), std::logic_error);  // two would record every op twice
        stint::profiler<> prof;
        prof.start();
        DOCTEST_CHECK(observe.installed());
        DOCTEST_CHECK(at::hasGlobalCallbacks());
        (void)torch::mm(a, a);
        prof.stop();
        CHECK_FALSE(observe.installed());
        CHECK_FALSE(at::hasGlobalCallbacks());
        DOCTEST_CHECK(stint_test::count_named(prof.events(), "aten::mm") == 1);
    }
    // Made while a session records: installed at once; destroyed while it records: removed at once.
    stint::profiler<> prof;
    prof.start();
    {
        stint::torch_observer<> observe;
        DOCTEST_CHECK(observe.installed());
        (void)torch::mm(a, a);
    }
    CHECK_FALSE(at::hasGlobalCallbacks());
    (void)torch::mm(a, a);  // no observer: not recorded
    prof.stop();
    DOCTEST_CHECK(stint_test::count_named(prof.events(), "aten::mm") == 1);
}

TEST_CASE("ops on threads libtorch's thread-local profilers do not see are recorded on their own threads") {
    stint::torch_observer<stint::config<stint::record_shapes>> observe;
    stint::profiler<stint::config<stint::record_shapes>> prof;
    prof.start();
    const torch::Tensor a = torch::ones({3, 5});
    const torch::Tensor b = torch::ones({5, 2});
    std::thread worker([&] { (void)torch::mm(a, b); });
    worker.join();
    (void)torch::mm(b.t(), a.t());
    prof.stop();
    std::vector<stint::event> mms;
    for (const stint::event& e : prof.events()) {
        if (e.name == "aten::mm") mms.push_back(e);
    }
    REQUIRE(mms.size() == 2);
    DOCTEST_CHECK(mms[0].thread != mms[1].thread);
    std::set<std::vector<std::vector<std::int64_t>>> dims;
    for (const stint::event& e : mms) dims.insert(prof.events().args(e)->input_dims);
    DOCTEST_CHECK(dims == std::set<std::vector<std::vector<std::int64_t>>>{{{3, 5}, {5, 2}}, {{2, 5}, {5, 3}}});
}

TEST_CASE("an execution trace of libtorch's ops keeps their sequence numbers as seq_id") {
    stint::torch_observer<> observe;
    const stint_test::temp_dir dir;
    stint::execution_trace_observer et;
    et.register_callback(dir.file("et.json"));
    const torch::Tensor w = torch::ones({3, 3}, torch::requires_grad());
    et.start();
    torch::Tensor loss = torch::mm(w, w).sum();
    loss.backward();
    et.stop();
    et.unregister_callback();
    const nlohmann::json doc = stint_test::read_json(dir.file("et.json"));
    std::map<std::string, std::multiset<std::int64_t>> seq;  // by name: the forward mm, and the backward's two mms
    for (const nlohmann::json& n : doc["nodes"]) {
        for (const nlohmann::json& a : n["attrs"]) {
            if (a["name"] == "seq_id") seq[n["name"].get<std::string>()].insert(a["value"].get<std::int64_t>());
        }
    }
    REQUIRE(seq["MmBackward0"].size() == 1);
    const std::int64_t backward = *seq["MmBackward0"].begin();
    DOCTEST_CHECK(backward >= 0);
    DOCTEST_CHECK(seq["aten::mm"] == std::multiset<std::int64_t>{-1, -1, backward});  // only the forward has one
}

TEST_CASE("a trace written by libtorch 1.13's own profiler reads: each op's count and time as the file holds them") {
    // Debian's libtorch has no Kineto: its legacy profiler writes the Chrome trace (a top-level array,
    // "pid": "CPU Functions"), the form torch.autograd.profiler's export_chrome_trace gives too.
    const stint_test::temp_dir dir;
    const std::string path = dir.file("torch.trace.json");
    {
        torch::autograd::profiler::RecordProfile guard(path);
        const torch::Tensor w = torch::ones({16, 16}, torch::requires_grad());
        for (int i = 0; i < 5; ++i) {
            torch::Tensor loss = torch::mm(w, w).sum();
            loss.backward();
        }
    }
    // The reference: each name's count and total duration, read with nlohmann-json.
    std::map<std::string, std::pair<std::uint64_t, double>> expected;
    for (const nlohmann::json& e : stint_test::read_json(path)) {
        if (e.value("ph", "") != "X") continue;
        auto& [count, total_us] = expected[e["name"].get<std::string>()];
        ++count;
        total_us += e["dur"].get<double>();
    }
    DOCTEST_REQUIRE(expected.count("aten::mm") == 1);
    const stint::trace_profile profile = stint::trace_profile::from_file(path);
    std::size_t compared = 0;
    for (const stint::op_stat& op : profile.op_stats()) {
        DOCTEST_CAPTURE(op.name);
        DOCTEST_REQUIRE(expected.count(op.name) == 1);
        DOCTEST_CHECK(op.count == expected.at(op.name).first);
        DOCTEST_CHECK(static_cast<double>(op.total_ns) / 1e3 == doctest::Approx(expected.at(op.name).second).epsilon(1e-3));
        ++compared;
    }
    DOCTEST_CHECK(compared == expected.size());
    DOCTEST_CHECK(expected.at("aten::mm").first >= 5);
}

void with_single_header_observer(void (*body)());  // single_header_adapter.cpp

TEST_CASE("the adapter from single_include/ records libtorch's ops; a second observer throws, whichever header made the first") {
    static stint::profiler<stint::config<stint::record_shapes>>* prof = nullptr;
    stint::profiler<stint::config<stint::record_shapes>> profiler;
    prof = &profiler;
    with_single_header_observer([] {
        // One observer per process: the single header's and this file's share the flag.
        DOCTEST_CHECK_THROWS_WITH_AS(stint::torch_observer<>(),
                                     "stint: torch_observer: one exists already (two would record every op twice)",
                                     std::logic_error);
        const torch::Tensor a = torch::ones({2, 3});
        prof->start();
        (void)torch::mm(a, a.t());
        prof->stop();
    });
    DOCTEST_CHECK(stint_test::count_named(profiler.events(), "aten::mm") == 1);
    stint::torch_observer<> again;  // the first is gone: one may be made again
    DOCTEST_CHECK_FALSE(again.installed());
}
