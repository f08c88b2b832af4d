#include <doctest/doctest.h>

#include <sstream>
#include <stdexcept>
#include <string>

#include <fmt/format.h>

#include "stint/stint.hpp"

namespace {
void mm() { STINT_OP(stint::config<>, "aten::mm"); }
}  // namespace

TEST_CASE("a profiler streams its key-averages table, as str(prof) does in torch") {
    stint::profiler<> prof;
    prof.start();
    for (int i = 0; i < 3; ++i) mm();
    prof.stop();
    std::ostringstream out;
    out << prof;
    CHECK(out.str().find("aten::mm") != std::string::npos);
    CHECK(out.str() == prof.key_averages().table());
    CHECK(fmt::format("{}", prof) == out.str());
    const auto averaged = prof.key_averages();
    REQUIRE(averaged.size() == 1);
    CHECK(averaged[0].key == "aten::mm");
    CHECK(averaged[0].count == 3);
    CHECK(averaged[0].cpu_time_total == doctest::Approx(prof.self_cpu_time_total()));
    // The seed's check: every row's average appears in a table forced to seconds.
    const std::string in_seconds = averaged.table({.time_unit = "s"});
    CHECK(in_seconds.find(fmt::format("{:.3f}s", averaged[0].cpu_time / 1e6)) != std::string::npos);
}

TEST_CASE("analysis of a profiler that is still recording is a clear error") {
    stint::profiler<> prof;
    prof.start();
    CHECK_THROWS_WITH_AS((void)prof.key_averages(),
                         "stint: key_averages(): the profiler didn't finish running; call stop() first",
                         std::logic_error);
    CHECK_THROWS_WITH_AS((void)prof.self_cpu_time_total(),
                         "stint: self_cpu_time_total(): the profiler didn't finish running; call stop() first",
                         std::logic_error);
    prof.stop();
    CHECK(prof.key_averages().empty());
    CHECK(prof.key_averages().table().empty());  // an empty profile prints "", as torch does
}
