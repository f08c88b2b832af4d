#include <doctest/doctest.h>

#include <set>
#include <string>
#include <thread>

#include "stint/stint.hpp"
#include "../test_util.hpp"

extern "C" void embed_a_work();
extern "C" void embed_b_work();
extern "C" bool embed_b_is_recording();

TEST_CASE("two shared libraries and the executable record into one session and one trace") {
    stint_test::temp_dir dir;
    stint::profiler<> prof;
    CHECK_FALSE(embed_b_is_recording());
    prof.start();
    CHECK(embed_b_is_recording());
    {
        STINT_SCOPE("exe::main");
        embed_a_work();
        embed_b_work();
    }
    std::thread([] {
        embed_a_work();
        embed_b_work();
    }).join();
    prof.stop();
    CHECK_FALSE(embed_b_is_recording());
    std::multiset<std::string> names;
    for (const auto& e : prof.events()) {
        if (e.kind != stint::event_kind::overhead) names.insert(std::string(e.name));
    }
    CHECK(names == std::multiset<std::string>{"exe::main", "lib_a::work", "lib_a::work", "lib_b::op", "lib_b::op"});
    // The library scopes nest under the executable's scope on the same thread.
    for (const auto& e : prof.events()) {
        if (e.name != "exe::main") continue;
        std::size_t library_scopes = 0;
        for (const stint::event& child : prof.events().children(e)) {
            library_scopes += child.kind != stint::event_kind::overhead ? 1 : 0;
        }
        CHECK(library_scopes == 2);
    }
    CHECK(prof.events().threads().size() == 2);
    prof.export_chrome_trace(dir.file("embed.json"));
    CHECK(stint_test::timed_events(stint_test::read_json(dir.file("embed.json"))).size() == 5);
}
