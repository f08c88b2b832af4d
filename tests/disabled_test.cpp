// Built with -DSTINT_DISABLE: every STINT_* macro compiles out and evaluates nothing.
#include <doctest/doctest.h>

#include "stint/stint.hpp"

#ifndef STINT_DISABLE
#error "this test must be built with STINT_DISABLE"
#endif

namespace {
using shapes = stint::config<stint::with_flops>;
int evaluations = 0;
[[maybe_unused]] int side_effect() { return ++evaluations; }
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
    }
    prof.stop();
    CHECK(evaluations == 0);
    CHECK(prof.events().empty());
    CHECK(prof.stats().recorded == 0);
}

TEST_CASE("STINT_DISABLE leaves the runtime API usable (record_function still records)") {
    stint::profiler<> prof;
    prof.start();
    {
        stint::record_function rf("framework");
    }
    prof.stop();
    REQUIRE(prof.events().size() == 1);
    CHECK(prof.events()[0].name == "framework");
}
