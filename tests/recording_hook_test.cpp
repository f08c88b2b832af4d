// stint::recording_hook: a framework's observer installed only while a session records (issue 32).
#include <doctest/doctest.h>

#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <stint/stint.hpp>

namespace {

std::vector<std::string> calls;  // what the hooks were told, in order

void note(bool recording, void* context) {
    calls.push_back(std::string(static_cast<const char*>(context)) + (recording ? " on" : " off"));
}

}  // namespace

TEST_CASE("a recording hook is told when a session starts and stops, and never after it is destroyed") {
    calls.clear();
    {
        stint::recording_hook hook{&note, const_cast<char*>("a")};
        CHECK(calls.empty());  // nothing records yet
        stint::profiler<> prof;
        prof.start();
        CHECK(calls == std::vector<std::string>{"a on"});
        STINT_SCOPE("work");
        prof.stop();
        CHECK(calls == std::vector<std::string>{"a on", "a off"});
        prof.stop();  // a second stop tells nobody anything
        CHECK(calls.size() == 2);
    }
    stint::profiler<> prof;
    prof.start();
    prof.stop();
    CHECK(calls.size() == 2);
}

TEST_CASE("a hook made while a session records is told at once; a schedule's windows each start and stop") {
    calls.clear();
    stint::profiler<> prof({.schedule = stint::schedule({.wait = 1, .warmup = 1, .active = 2, .repeat = 2})});
    prof.start();
    stint::recording_hook hook{&note, const_cast<char*>("s")};
    for (int step = 0; step < 8; ++step) {
        if (stint::is_recording()) {
            CHECK(!calls.empty());
            CHECK(calls.back() == "s on");
        } else {
            CHECK((calls.empty() || calls.back() == "s off"));
        }
        prof.step();
    }
    prof.stop();
    // Two windows of two active steps: each opened and closed once (warmup does not record).
    CHECK(calls == std::vector<std::string>{"s on", "s off", "s on", "s off"});

    // Hooks run in the order they were made (while none was destroyed in between: a freed slot is reused).
    calls.clear();
    stint::profiler<> live;
    live.start();
    stint::recording_hook late{&note, const_cast<char*>("late")};
    CHECK(calls == std::vector<std::string>{"s on", "late on"});
    live.stop();
    CHECK(calls == std::vector<std::string>{"s on", "late on", "s off", "late off"});
}

TEST_CASE("bad hooks: a null function, more than the table holds, a hook that throws") {
    CHECK_THROWS_AS(stint::recording_hook(nullptr), std::invalid_argument);
    std::vector<std::unique_ptr<stint::recording_hook>> many;
    const auto fill = [&] {
        for (;;) many.push_back(std::make_unique<stint::recording_hook>(&note, const_cast<char*>("m")));
    };
    CHECK_THROWS_WITH_AS(fill(), doctest::Contains("32 hooks are registered already"), std::length_error);
    CHECK(many.size() == 32);
    many.clear();
    // A hook that throws does not stop the session, nor the other hooks.
    calls.clear();
    stint::recording_hook thrower{[](bool, void*) { throw std::runtime_error("framework failed"); }};
    stint::recording_hook after{&note, const_cast<char*>("b")};
    stint::profiler<> prof;
    prof.start();
    CHECK(stint::is_recording());
    prof.stop();
    CHECK(calls == std::vector<std::string>{"b on", "b off"});
}
