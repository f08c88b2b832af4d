#include <doctest/doctest.h>

#include <filesystem>
#include <string>
#include <system_error>

#include "stint/stint.hpp"
#include "test_util.hpp"

namespace {

void workload() {
    STINT_SCOPE("step");
    {
        STINT_OP(stint::config<>, "aten::mm", 1);
    }
    STINT_INSTANT("checkpoint");
}

}  // namespace

TEST_CASE("the chrome trace has Kineto's shape") {
    stint_test::temp_dir dir;
    stint::profiler<> prof;
    prof.start();
    workload();
    prof.stop();
    const std::string path = dir.file("t.pt.trace.json");
    prof.export_chrome_trace(path);
    const auto trace = stint_test::read_json(path);
    CHECK(trace["schemaVersion"] == 1);
    CHECK(trace["displayTimeUnit"] == "ms");
    CHECK(trace["baseTimeNanoseconds"].get<std::int64_t>() == prof.events().base_time_ns());
    CHECK(trace["baseTimeNanoseconds"].get<std::int64_t>() > 1'600'000'000'000'000'000);
    CHECK(trace["stint"]["version"] == STINT_VERSION_STRING);
    CHECK(trace["stint"]["recorded"] == 3);
    CHECK(trace["stint"]["dropped"] == 0);
    CHECK_FALSE(trace.contains("WARNING"));
    const auto events = stint_test::timed_events(trace);
    REQUIRE(events.size() == 3);
    const std::uint64_t tid = prof.events().threads()[0].os_tid;
    for (const auto& e : events) {
        CHECK(e["pid"].get<std::uint64_t>() == stint::detail::current_pid());
        CHECK(e["tid"].get<std::uint64_t>() == tid);
        CHECK(e["args"]["Record function id"].get<std::int64_t>() >= 0);
        CHECK(e["ts"].is_number());
    }
    CHECK(events[0]["name"] == "step");
    CHECK(events[0]["cat"] == "user_annotation");
    CHECK(events[0]["ph"] == "X");
    CHECK(events[1]["name"] == "aten::mm");
    CHECK(events[1]["cat"] == "cpu_op");
    CHECK(events[2]["name"] == "checkpoint");
    CHECK(events[2]["ph"] == "i");
    CHECK_FALSE(events[2].contains("dur"));
    // ts and dur are microseconds with nanosecond decimals.
    const auto& step = prof.events()[0];
    CHECK(events[0]["ts"].get<double>() == doctest::Approx(static_cast<double>(step.start_ns) / 1e3).epsilon(1e-12));
    CHECK(events[0]["dur"].get<double>() ==
          doctest::Approx(static_cast<double>(step.duration_ns()) / 1e3).epsilon(1e-12));
    bool thread_named = false;
    for (const auto& e : trace["traceEvents"]) {
        if (e["ph"] == "M" && e["name"] == "thread_name" && e["tid"].get<std::uint64_t>() == tid) thread_named = true;
    }
    CHECK(thread_named);
}

TEST_CASE("an empty session writes a valid trace with Kineto's warning") {
    stint_test::temp_dir dir;
    stint::profiler<> prof;
    prof.start();
    prof.stop();
    prof.export_chrome_trace(dir.file("empty.json"));
    const auto trace = stint_test::read_json(dir.file("empty.json"));
    REQUIRE(trace.contains("WARNING"));
    bool found = false;
    for (const auto& w : trace["WARNING"]) found = found || w.get<std::string>().find("No Valid Trace Events") != std::string::npos;
    CHECK(found);
    CHECK(stint_test::timed_events(trace).empty());
}

TEST_CASE("names with quotes, control characters, NUL bytes and invalid UTF-8 round-trip to valid JSON") {
    stint_test::temp_dir dir;
    const std::string names[] = {
        "quote \" and backslash \\",
        "new\nline\ttab\rreturn",
        std::string("nul\0inside", 10),
        "bad utf8 \xff\xfe end",
        "truncated \xe4\xb8",
        "ok utf8 \xc3\xa9 \xe4\xb8\xad \xf0\x9f\x98\x80",
    };
    stint::profiler<> prof;
    prof.start();
    for (const auto& n : names) {
        stint::record_function rf(n);
    }
    prof.stop();
    prof.export_chrome_trace(dir.file("names.json"));
    const auto trace = stint_test::read_json(dir.file("names.json"));
    const auto events = stint_test::timed_events(trace);
    REQUIRE(events.size() == std::size(names));
    CHECK(events[0]["name"] == names[0]);
    CHECK(events[1]["name"] == names[1]);
    CHECK(events[2]["name"] == names[2]);
    CHECK(events[2]["name"].get<std::string>().size() == 10);
    CHECK(events[3]["name"] == "bad utf8 \xef\xbf\xbd\xef\xbf\xbd end");
    CHECK(events[4]["name"] == "truncated \xef\xbf\xbd");
    CHECK(events[5]["name"] == names[5]);
}

TEST_CASE("a .gz path writes gzip that decompresses to the same trace") {
    stint_test::temp_dir dir;
    stint::profiler<> prof;
    prof.start();
    for (int i = 0; i < 1000; ++i) workload();
    prof.stop();
    prof.export_chrome_trace(dir.file("plain.json"));
    prof.export_chrome_trace(dir.file("packed.json.gz"));
    const std::string plain = stint_test::read_file(dir.file("plain.json"));
    const std::string packed = stint_test::read_file(dir.file("packed.json.gz"));
    REQUIRE(packed.size() > 2);
    CHECK(static_cast<unsigned char>(packed[0]) == 0x1f);
    CHECK(static_cast<unsigned char>(packed[1]) == 0x8b);
    CHECK(packed.size() < plain.size() / 4);
    CHECK(stint_test::read_gzip(dir.file("packed.json.gz")) == plain);
}

TEST_CASE("an unwritable path is an error naming the path and leaves no file") {
    stint_test::temp_dir dir;
    stint::profiler<> prof;
    prof.start();
    workload();
    prof.stop();
    SUBCASE("missing directory") {
        const std::string path = dir.file("no/such/dir/t.json");
        CHECK_THROWS_WITH_AS(prof.export_chrome_trace(path),
                             ("stint: cannot write trace '" + path + "': No such file or directory").c_str(),
                             std::system_error);
        CHECK_FALSE(std::filesystem::exists(path));
    }
    SUBCASE("a parent that is a regular file") {
        const std::string blocker = dir.file("file");
        prof.export_chrome_trace(blocker);
        const std::string path = blocker + "/t.json";
        CHECK_THROWS_WITH_AS(prof.export_chrome_trace(path),
                             ("stint: cannot write trace '" + path + "': Not a directory").c_str(), std::system_error);
    }
    // Nothing but the blocker file may remain in the directory: no temporaries.
    std::size_t entries = 0;
    for (const auto& entry : std::filesystem::recursive_directory_iterator(dir.path())) {
        CHECK(entry.path().filename() == "file");
        ++entries;
    }
    CHECK(entries <= 1);
}
