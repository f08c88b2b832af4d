// stint::add_args: named arguments on the innermost open event, in the event list, the Chrome trace and
// the execution trace (issue 32; the Perfetto trace's are checked in perfetto_trace_test.cpp).
#include <doctest/doctest.h>

#include <cstdint>
#include <limits>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>
#include <stint/stint.hpp>

#include "execution_trace_schema.hpp"
#include "test_util.hpp"

using nlohmann::json;

namespace {

const stint::event_args& named_args_of(const stint::event_list& events, std::string_view name) {
    const std::optional<stint::event> e = stint_test::find(events, name);
    REQUIRE(e.has_value());
    const stint::event_args* args = events.args(*e);
    REQUIRE(args != nullptr);
    return *args;
}

const json& trace_event_named(const json& trace, std::string_view name) {
    for (const json& e : trace["traceEvents"]) {
        if (e.value("name", "") == name) return e;
    }
    FAIL("no event named " << name);
    static const json none;
    return none;
}

}  // namespace

TEST_CASE("add_args: every type, in the order given, on the event open around the call") {
    stint::profiler<> prof;
    prof.start();
    {
        STINT_SCOPE("step");
        stint::event_token op = stint::begin_event(stint::event_kind::cpu_op, "aten::mm");
        stint::add_args({{"Sequence number", 41},
                         {"Fwd thread id", std::uint64_t{std::numeric_limits<std::uint64_t>::max()}},
                         {"alpha", 0.5f},
                         {"transposed", false},
                         {"schema", std::string("aten::mm(Tensor self, Tensor mat2) -> Tensor")}});
        { STINT_SCOPE("inner"); }
    }
    prof.stop();
    const stint::event_list& events = prof.events();
    CHECK(prof.stats().dropped == 0);
    CHECK(stint_test::program_event_count(events) == 3);  // the args record made no event
    const stint::event_args& args = named_args_of(events, "aten::mm");
    REQUIRE(args.named_args.size() == 5);
    CHECK(args.named_args[0] == stint::named_arg{.name = "Sequence number", .type = stint::arg_type::integer, .integer = 41, .real = 0, .text = ""});
    CHECK(args.named_args[1].type == stint::arg_type::unsigned_integer);
    CHECK(static_cast<std::uint64_t>(args.named_args[1].integer) == std::numeric_limits<std::uint64_t>::max());
    CHECK(args.named_args[2].type == stint::arg_type::real);
    CHECK(args.named_args[2].real == 0.5);
    CHECK(args.named_args[3].type == stint::arg_type::boolean);
    CHECK(args.named_args[3].integer == 0);
    CHECK(args.named_args[4].text == "aten::mm(Tensor self, Tensor mat2) -> Tensor");
    CHECK_FALSE(args.named_args_cut);
    CHECK(args.find_arg("alpha") == &args.named_args[2]);
    CHECK(args.find_arg("beta") == nullptr);
    // Neither the scope around the op nor the one inside it has them.
    CHECK(events.args(*stint_test::find(events, "step")) == nullptr);
    CHECK(events.args(*stint_test::find(events, "inner")) == nullptr);
}

TEST_CASE("add_args goes to the innermost event open at the call, whatever its kind, at any depth") {
    stint::profiler<> prof;
    prof.start();
    {
        STINT_SCOPE("outer");
        stint::add_args({{"where", "outer, before"}});
        {
            STINT_SCOPE("child");
            stint::add_args({{"where", "child"}});
        }
        stint::add_args({{"after", 2}});  // the child has ended: the outer scope again
        stint::record_function annotation("annotation");
        stint::add_args({{"where", "annotation"}});
        annotation.end();
    }
    stint::add_args({{"nowhere", 1}});  // outside every event: nothing, and nothing counted as dropped
    prof.stop();
    const stint::event_list& events = prof.events();
    const stint::event_args& outer = named_args_of(events, "outer");
    REQUIRE(outer.named_args.size() == 2);
    CHECK(outer.named_args[0].text == "outer, before");
    CHECK(outer.named_args[1].name == "after");
    CHECK(named_args_of(events, "child").named_args.at(0).text == "child");
    CHECK(named_args_of(events, "annotation").named_args.at(0).text == "annotation");
    CHECK(prof.stats().dropped == 0);
    CHECK(stint_test::program_event_count(events) == 3);
}

TEST_CASE("add_args: a name given again keeps its place and takes the later value; without a session nothing") {
    stint::add_args({{"ignored", 1}});  // no session: one relaxed load, nothing else
    {
        STINT_SCOPE("before");
        stint::add_args({{"ignored", 2}});
    }
    stint::profiler<> prof;
    prof.start();
    {
        STINT_SCOPE("op");
        stint::add_args({{"n", 1}, {"m", 2}});
        stint::add_args({{"n", "three"}});
    }
    prof.stop();
    const stint::event_args& args = named_args_of(prof.events(), "op");
    REQUIRE(args.named_args.size() == 2);
    CHECK(args.named_args[0].name == "n");
    CHECK(args.named_args[0].type == stint::arg_type::string);
    CHECK(args.named_args[0].text == "three");
    CHECK(args.named_args[1].integer == 2);
}

TEST_CASE("add_args beyond its record's room: what fits is kept, and the event says the rest was cut") {
    const std::string long_text(700, 'x');
    const std::string long_name(300, 'n');
    stint::profiler<> prof;
    prof.start();
    {
        STINT_SCOPE("op");
        stint::add_args({{"first", long_text}, {long_name, 1}, {"second", long_text}, {"third", 3}});
    }
    prof.stop();
    const stint::event_args& args = named_args_of(prof.events(), "op");
    CHECK(args.named_args_cut);
    REQUIRE(args.named_args.size() == 3);  // "third" found no room
    CHECK(args.named_args[0].text == long_text);
    CHECK(args.named_args[1].name == long_name.substr(0, 255));
    CHECK(args.named_args[2].name == "second");
    CHECK(args.named_args[2].text.size() < long_text.size());  // cut to the room left
    CHECK(args.named_args[2].text == long_text.substr(0, args.named_args[2].text.size()));

    const stint_test::temp_dir dir;
    prof.export_chrome_trace(dir.file("cut.json"));
    const json trace = stint_test::read_json(dir.file("cut.json"));
    CHECK(trace_event_named(trace, "op")["args"]["Args truncated"] == true);
}

TEST_CASE("add_args in the Chrome trace: each its own key with its JSON type; a name stint uses is marked (arg)") {
    stint::profiler<stint::config<stint::record_shapes>> prof;
    prof.start();
    {
        std::vector<std::int64_t> sizes{2, 3};
        STINT_OP(stint::config<stint::record_shapes>, "my::op", sizes);
        stint::add_args({{"Sequence number", 9},
                         {"ratio", 1.5},
                         {"flag", true},
                         {"label", "a \"quoted\"\nname"},
                         {"Input Dims", "mine"},
                         {"not finite", std::numeric_limits<double>::infinity()}});
    }
    prof.stop();
    const stint_test::temp_dir dir;
    prof.export_chrome_trace(dir.file("t.json"));
    const json trace = stint_test::read_json(dir.file("t.json"));  // parses: keys are unique
    const json& args = trace_event_named(trace, "my::op")["args"];
    CHECK(args["Sequence number"] == 9);
    CHECK(args["ratio"] == 1.5);
    CHECK(args["flag"] == true);
    CHECK(args["label"] == "a \"quoted\"\nname");
    CHECK(args["Input Dims (arg)"] == "mine");
    CHECK(args["Input Dims"].is_array());  // stint's own key is untouched
    CHECK(args.contains("not finite"));
    CHECK_FALSE(args.contains("Args truncated"));
}

TEST_CASE("the execution trace takes Sequence number as seq_id and Fwd thread id as fw_tid") {
    const stint_test::temp_dir dir;
    const std::string path = dir.file("args.et.json");
    stint::execution_trace_observer et;
    et.register_callback(path);
    et.start();
    {
        stint::event_token forward = stint::begin_event(stint::event_kind::cpu_op, "aten::mul");
        stint::add_args({{"Sequence number", 12}, {"Fwd thread id", 0}});
    }
    {
        stint::event_token backward = stint::begin_event(stint::event_kind::cpu_op, "MulBackward0");
        stint::add_args({{"Sequence number", 12}, {"Fwd thread id", 77}});
    }
    { stint::event_token plain = stint::begin_event(stint::event_kind::cpu_op, "aten::add"); }
    et.stop();
    et.unregister_callback();
    stint_test::check_execution_trace_file(path);
    const json doc = stint_test::read_json(path);
    std::map<std::string, std::pair<json, json>> seen;  // name -> (seq_id, fw_tid)
    for (const json& n : doc["nodes"]) {
        json seq;
        json fw;
        for (const json& a : n["attrs"]) {
            if (a["name"] == "seq_id") seq = a["value"];
            if (a["name"] == "fw_tid") fw = a["value"];
        }
        seen[n["name"].get<std::string>()] = {seq, fw};
    }
    CHECK(seen.at("aten::mul") == std::pair<json, json>(12, 0));
    CHECK(seen.at("MulBackward0") == std::pair<json, json>(12, 77));
    CHECK(seen.at("aten::add") == std::pair<json, json>(-1, 0));
}

TEST_CASE("event_token::add_args names its own event, also while events begun after it are open; elsewhere nothing") {
    stint::profiler<> prof;
    prof.start();
    {
        stint::event_token outer = stint::begin_event(stint::event_kind::cpu_op, "outer_op");
        stint::event_token inner = stint::begin_event(stint::event_kind::cpu_op, "inner_op");
        outer.add_args({{"for", "outer"}});  // inner is the innermost, but the token names outer
        inner.add_args({{"for", "inner"}});
        std::thread([&] { outer.add_args({{"from another thread", 1}}); }).join();  // does nothing
        inner.end();
        inner.add_args({{"after its end", 1}});  // does nothing
    }
    prof.stop();
    const stint::event_args& outer = named_args_of(prof.events(), "outer_op");
    const stint::event_args& inner = named_args_of(prof.events(), "inner_op");
    REQUIRE(outer.named_args.size() == 1);
    CHECK(outer.named_args[0].text == "outer");
    REQUIRE(inner.named_args.size() == 1);
    CHECK(inner.named_args[0].text == "inner");
    CHECK(prof.stats().dropped == 0);
}
