// Built with -DSTINT_DISABLE: every STINT_* macro compiles out and evaluates nothing.
#include <doctest/doctest.h>

#include "stint/stint.hpp"
#include "test_util.hpp"

#ifndef STINT_DISABLE
#error "this test must be built with STINT_DISABLE"
#endif

namespace {
using shapes = stint::config<stint::with_flops>;
int evaluations = 0;
[[maybe_unused]] int side_effect() { return ++evaluations; }
struct framework_region {
    static constexpr std::string_view label = "framework";
};
struct polymorphic {
    virtual ~polymorphic() = default;
};
[[maybe_unused]] polymorphic& object_with_side_effect() {
    static polymorphic object;
    ++evaluations;
    return object;
}
}  // namespace

TEST_CASE("STINT_DISABLE compiles every macro out and records nothing") {
    stint::profiler<> prof;
    prof.start();
    {
        STINT_SCOPE("scope");
        STINT_SCOPE_NAMED(std::to_string(side_effect()));
        STINT_OP(stint::config<>, "op", side_effect());
        STINT_OP(shapes, "shapes_op", side_effect());
        STINT_OP_FLOPS(shapes, "flops_op", "aten::mm", side_effect());
        STINT_INSTANT("instant");
        if (evaluations == 0)
            STINT_INSTANT("no braces needed");
        STINT_COUNTER("counter", side_effect());
        STINT_COUNTER(side_effect(), 1);  // not even a valid name: never compiled
        if (evaluations == 0)
            STINT_COUNTER("counter", side_effect());
        STINT_REGION(framework_region, "region");
        STINT_REGION(framework_region, side_effect());  // not even a valid name: never compiled
        STINT_SCOPE_DYNAMIC("Base.method", "method", object_with_side_effect());
        if (evaluations == 0)
            STINT_SCOPE_DYNAMIC("Base.method", "method", object_with_side_effect());
    }
    prof.stop();
    CHECK(evaluations == 0);
    CHECK(prof.events().empty());
    CHECK(prof.stats().recorded == 0);
    // The macro is gone, so nothing was counted; the reading function still works.
    CHECK(stint::region_counters<framework_region>().regions.empty());
    CHECK(stint::region_counters<framework_region>().count == 0);
}

TEST_CASE("STINT_DISABLE leaves the runtime API usable (record_function still records)") {
    stint::profiler<> prof;
    prof.start();
    {
        stint::record_function rf("framework");
        stint::compiled_region region(0, 1);
        stint::counter<int> depth{"depth"};  // a class, not a macro: it records
        depth.set(7);
    }
    prof.stop();
    // Only the program's events: a thread's first record in a process adds its registration.
    REQUIRE(stint_test::program_event_count(prof.events()) == 3);
    CHECK(prof.events()[0].name == "framework");
    CHECK(prof.events()[1].name == "Torch-Compiled Region: 0/1");
    CHECK(prof.events()[2].name == "depth");
    CHECK(prof.events().counter_of(prof.events()[2])->integer == 7);
}
