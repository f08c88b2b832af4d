#include <doctest/doctest.h>

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

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

TEST_CASE("a stream writes one thread for an OS thread that records from two buffers, its events nested") {
    // lib_b (hidden visibility) has a thread buffer of its own: the main thread records into two.
    stint_test::temp_dir dir;
    const std::string path = dir.file("stream.json");
    const std::uint64_t tid = stint::detail::current_os_tid();
    constexpr int iterations = 3;
    {
        stint::profiler<> prof({.stream_to = path});
        prof.start();
        for (int i = 0; i < iterations; ++i) {
            STINT_SCOPE("exe::main");
            embed_a_work();
            embed_b_work();
        }
        prof.stop();
    }
    const nlohmann::json trace = stint_test::read_json(path);
    std::map<std::string, int> metadata;  // per metadata name, for this thread
    for (const auto& e : trace["traceEvents"]) {
        if (e["ph"] == "M" && e.value("tid", std::uint64_t{0}) == tid) ++metadata[e["name"].get<std::string>()];
    }
    CHECK(metadata["thread_name"] == 1);
    CHECK(metadata["thread_sort_index"] == 1);
    int listed = 0;
    for (const auto& t : trace["stint"]["threads"]) {
        if (t["tid"] != tid) continue;
        ++listed;
        CHECK(t["recorded"] == 3 * iterations);  // both buffers' records
    }
    CHECK(listed == 1);
    // Each library scope lies inside its exe::main as a viewer reads the times (ts, ts + dur).
    std::vector<std::pair<double, double>> mains;
    std::vector<std::pair<double, double>> inner;
    for (const auto& e : stint_test::timed_events(trace)) {
        REQUIRE(e["tid"] == tid);
        const double ts = e["ts"].get<double>();
        const double end = ts + e["dur"].get<double>();
        (e["name"] == "exe::main" ? mains : inner).emplace_back(ts, end);
    }
    CHECK(mains.size() == iterations);
    CHECK(inner.size() == 2 * iterations);
    for (const auto& [ts, end] : inner) {
        int around = 0;
        for (const auto& [main_ts, main_end] : mains) around += main_ts <= ts && end <= main_end ? 1 : 0;
        CHECK(around == 1);
    }
}
