// with_modules: test_module_hierarchy's model built in C++ with STINT_MODULE scopes, and the five
// "Module Hierarchy" strings it expects, in events and in the Chrome trace.
#include <doctest/doctest.h>

#include <stint/stint.hpp>

#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "test_util.hpp"

namespace {

using modules = stint::config<stint::with_modules>;
using shapes_and_modules = stint::config<stint::record_shapes, stint::with_modules>;

// class A(nn.Module): forward -> sub, forward_impl_ -> my_new_method (mul), add
struct module_a {
    void my_new_method() {
        STINT_MODULE_SELF("my_new_method");
        STINT_OP(modules, "aten::mul");
    }
    void forward_impl_() {
        STINT_MODULE_SELF("forward_impl_");
        my_new_method();
        STINT_OP(modules, "aten::add");
    }
    void forward() {
        STINT_MODULE("A0", "A");
        {
            STINT_OP(modules, "aten::sub");
        }
        forward_impl_();
    }
};

// class B(nn.Module): forward -> add
struct module_b {
    void forward() {
        STINT_MODULE("B0", "B");
        STINT_OP(modules, "aten::add");
    }
};

// class C(nn.Module): forward -> A0.forward, call_b -> B0.forward, add
struct module_c {
    module_a a0;
    module_b b0;
    void call_b() {
        STINT_MODULE_SELF("call_b");
        b0.forward();
    }
    void forward() {
        STINT_MODULE("model", "C");  // the outermost module shows as TOP, whatever its attribute
        a0.forward();
        call_b();
        STINT_OP(modules, "aten::add");
    }
};

std::map<std::string, std::set<std::string>> hierarchies_by_op(const stint::event_list& events) {
    std::map<std::string, std::set<std::string>> out;
    for (const stint::event& e : events) {
        if (e.kind != stint::event_kind::cpu_op) continue;
        const stint::event_args* args = events.args(e);
        out[std::string(e.name)].insert(args == nullptr ? "" : args->module_hierarchy);
    }
    return out;
}

}  // namespace

TEST_CASE("test_module_hierarchy: every op's Module Hierarchy, as torch writes it") {
    stint_test::temp_dir dir;
    stint::profiler<modules> prof;
    prof.start();
    module_c model;
    model.forward();
    prof.stop();

    const auto by_op = hierarchies_by_op(prof.events());
    CHECK(by_op.at("aten::sub") == std::set<std::string>{"TOP(C)::forward.A0(A)::forward."});
    CHECK(by_op.at("aten::mul") ==
          std::set<std::string>{"TOP(C)::forward.A0(A)::forward.SELF(A)::forward_impl_.SELF(A)::my_new_method."});
    CHECK(by_op.at("aten::add") == std::set<std::string>{
                                       "TOP(C)::forward.A0(A)::forward.SELF(A)::forward_impl_.",
                                       "TOP(C)::forward.SELF(C)::call_b.B0(B)::forward.",
                                       "TOP(C)::forward.",
                                   });

    // The seed's check, on the trace read back: every op with a "Module Hierarchy" has an expected one.
    const std::map<std::string, std::set<std::string>> expected{
        {"aten::sub", {"TOP(C)::forward.A0(A)::forward."}},
        {"aten::mul", {"TOP(C)::forward.A0(A)::forward.SELF(A)::forward_impl_.SELF(A)::my_new_method."}},
        {"aten::add",
         {"TOP(C)::forward.A0(A)::forward.SELF(A)::forward_impl_.", "TOP(C)::forward.SELF(C)::call_b.B0(B)::forward.",
          "TOP(C)::forward."}},
    };
    prof.export_chrome_trace(dir.file("modules.json"));
    int checked = 0;
    for (const auto& e : stint_test::timed_events(stint_test::read_json(dir.file("modules.json")))) {
        const std::string name = e.at("name");
        if (!e.contains("args") || !e.at("args").contains("Module Hierarchy")) continue;
        REQUIRE(expected.contains(name));
        CHECK(expected.at(name).contains(e.at("args").at("Module Hierarchy").get<std::string>()));
        CHECK_FALSE(e.at("args").contains("Input Dims"));  // no record_shapes: hierarchy only
        ++checked;
    }
    CHECK(checked == 5);

    // The module calls are events too, named attribute(Type)::method.
    std::multiset<std::string> module_events;
    for (const stint::event& e : prof.events()) {
        if (e.kind == stint::event_kind::module) module_events.insert(std::string(e.name));
    }
    CHECK(module_events == std::multiset<std::string>{"model(C)::forward", "A0(A)::forward", "SELF::forward_impl_",
                                                      "SELF::my_new_method", "SELF::call_b", "B0(B)::forward"});
}

TEST_CASE("without with_modules no op gets a hierarchy; ops outside modules get none") {
    stint::profiler<> prof;
    prof.start();
    module_c model;
    model.forward();
    prof.stop();
    for (const stint::event& e : prof.events()) CHECK(prof.events().args(e) == nullptr);

    stint::profiler<modules> with;
    with.start();
    {
        STINT_OP(modules, "outside");
    }
    with.stop();
    REQUIRE(with.events().size() == 1);
    CHECK(with.events().args(with.events()[0]) == nullptr);
}

TEST_CASE("Module Hierarchy sits beside captured inputs; module_scope names modules at run time") {
    stint_test::temp_dir dir;
    stint::profiler<shapes_and_modules> prof;
    prof.start();
    {
        const std::string attribute = "layers.0";
        stint::module_scope top(attribute, "Sequential");
        {
            stint::module_scope layer("0", "Linear");
            {
                stint::module_scope self("SELF", "", "reset");  // SELF takes the enclosing module's type
                const std::vector<std::int64_t> dims{4, 8};
                STINT_OP(shapes_and_modules, "aten::linear", dims);
            }
        }
    }
    prof.stop();
    prof.export_chrome_trace(dir.file("t.json"));
    int seen = 0;
    for (const auto& e : stint_test::timed_events(stint_test::read_json(dir.file("t.json")))) {
        if (e.at("name") != "aten::linear") continue;
        CHECK(e.at("args").at("Module Hierarchy") ==
              "TOP(Sequential)::forward.0(Linear)::forward.SELF(Linear)::reset.");
        CHECK(e.at("args").at("Input type") == nlohmann::json({"ScalarList"}));
        ++seen;
    }
    CHECK(seen == 1);
}

TEST_CASE("module hierarchies are per thread") {
    stint::profiler<modules> prof;
    prof.start();
    std::thread other([] {
        module_b b;
        b.forward();
    });
    module_c model;
    model.forward();
    other.join();
    prof.stop();
    std::set<std::string> adds;
    for (const stint::event& e : prof.events()) {
        if (e.name == "aten::add") adds.insert(prof.events().args(e)->module_hierarchy);
    }
    // On its own thread B0 is the outermost module: TOP(B).
    CHECK(adds.contains("TOP(B)::forward."));
    CHECK(adds.size() == 4);
}
