// Trace metadata (add_metadata, add_metadata_json) and distributedInfo at the trace's top level.
#include <doctest/doctest.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <initializer_list>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "stint/stint.hpp"
#include "test_util.hpp"

namespace {

/// Sets (or, with nullptr, unsets) environment variables for its lifetime and restores them after.
/// Tests run one at a time, so no other thread reads the environment meanwhile.
class env_guard {
public:
    env_guard(std::initializer_list<std::pair<const char*, const char*>> vars) {
        for (const auto& [name, value] : vars) {
            const char* old = std::getenv(name);
            saved_.emplace_back(name, old == nullptr ? std::nullopt : std::optional<std::string>(old));
            if (value == nullptr) {
                ::unsetenv(name);
            } else {
                ::setenv(name, value, 1);
            }
        }
    }
    ~env_guard() {
        for (const auto& [name, value] : saved_) {
            if (value) {
                ::setenv(name.c_str(), value->c_str(), 1);
            } else {
                ::unsetenv(name.c_str());
            }
        }
    }
    env_guard(const env_guard&) = delete;
    env_guard& operator=(const env_guard&) = delete;

private:
    std::vector<std::pair<std::string, std::optional<std::string>>> saved_;
};

/// No launcher variables: a single-process run unless a test sets them.
env_guard no_launcher() {
    return env_guard{{"RANK", nullptr}, {"WORLD_SIZE", nullptr}, {"LOCAL_RANK", nullptr}, {"LOCAL_WORLD_SIZE", nullptr}};
}

using stint_test::warning_capture;

/// Exports a short session of `prof` (after `setup`) and reads it back with nlohmann-json.
template <class Setup>
nlohmann::json export_with(Setup&& setup) {
    stint_test::temp_dir dir;
    stint::profiler<> prof;
    prof.start();
    {
        STINT_SCOPE("work");
    }
    setup(prof);
    prof.stop();
    prof.export_chrome_trace(dir.file("t.json"));
    return stint_test::read_json(dir.file("t.json"));
}

}  // namespace

TEST_CASE("add_metadata and add_metadata_json land as top-level keys of the trace") {
    // test_profiler_metadata.
    const auto trace = export_with([](stint::profiler<>& prof) {
        prof.add_metadata("test_key1", "test_value1");
        prof.add_metadata_json("test_key2", "[1,2,3]");
    });
    REQUIRE(trace.contains("test_key1"));
    CHECK(trace["test_key1"] == "test_value1");
    REQUIRE(trace.contains("test_key2"));
    CHECK(trace["test_key2"] == nlohmann::json::array({1, 2, 3}));
    CHECK(stint_test::timed_events(trace).size() == 1);
}

TEST_CASE("metadata strings are escaped and JSON values kept as written") {
    const auto trace = export_with([](stint::profiler<>& prof) {
        prof.add_metadata("quoted", "say \"hi\"\n\tback\\slash");
        prof.add_metadata_json("nested", R"({"a": {"b": [true, null, 1.5e3]}, "s": "x\u00e9"})");
        prof.add_metadata("", "empty key is a key");
    });
    CHECK(trace["quoted"] == "say \"hi\"\n\tback\\slash");
    CHECK(trace["nested"]["a"]["b"] == nlohmann::json::array({true, nullptr, 1500.0}));
    CHECK(trace["nested"]["s"] == "x\xc3\xa9");
    CHECK(trace[""] == "empty key is a key");
}

TEST_CASE("add_metadata_json rejects invalid JSON at the call and never writes it") {
    stint_test::temp_dir dir;
    stint::profiler<> prof;
    CHECK_THROWS_WITH_AS(prof.add_metadata_json("bad", "[1, 2"),
                         "stint: add_metadata_json(\"bad\"): the value is not valid JSON: expected ',' or ']' at offset 5",
                         std::invalid_argument);
    CHECK_THROWS_WITH_AS(prof.add_metadata_json("two", "1 2"),
                         "stint: add_metadata_json(\"two\"): the value is not valid JSON: expected end of input at offset 2",
                         std::invalid_argument);
    CHECK_THROWS_AS(prof.add_metadata_json("empty", ""), std::invalid_argument);
    CHECK_THROWS_AS(prof.add_metadata_json("single_quotes", "{'a': 1}"), std::invalid_argument);
    prof.add_metadata_json("good", "{\"a\": 1}");
    // A rejected value does not replace an accepted one.
    CHECK_THROWS_AS(prof.add_metadata_json("good", "{a: 1}"), std::invalid_argument);
    prof.start();
    prof.stop();
    prof.export_chrome_trace(dir.file("t.json"));
    const auto trace = stint_test::read_json(dir.file("t.json"));
    CHECK_FALSE(trace.contains("bad"));
    CHECK_FALSE(trace.contains("two"));
    CHECK_FALSE(trace.contains("empty"));
    CHECK_FALSE(trace.contains("single_quotes"));
    CHECK(trace["good"]["a"] == 1);
}

TEST_CASE("metadata cannot take a key the trace format uses") {
    stint::profiler<> prof;
    for (const char* key : {"traceEvents", "schemaVersion", "stint", "WARNING", "baseTimeNanoseconds",
                            "deviceProperties", "traceName", "displayTimeUnit"}) {
        CAPTURE(key);
        CHECK_THROWS_WITH_AS(prof.add_metadata(key, "x"),
                             ("stint: add_metadata(\"" + std::string(key) + "\"): the trace format uses this key; choose another").c_str(),
                             std::invalid_argument);
        CHECK_THROWS_WITH_AS(prof.add_metadata_json(key, "1"),
                             ("stint: add_metadata_json(\"" + std::string(key) + "\"): the trace format uses this key; choose another").c_str(),
                             std::invalid_argument);
    }
}

TEST_CASE("a metadata key added again takes the new value and appears once") {
    stint_test::temp_dir dir;
    stint::profiler<> prof;
    prof.add_metadata("run", "first");
    prof.add_metadata_json("run", "{\"attempt\": 2}");
    prof.start();
    prof.stop();
    prof.export_chrome_trace(dir.file("t.json"));
    const std::string text = stint_test::read_file(dir.file("t.json"));
    std::size_t occurrences = 0;
    for (auto at = text.find("\"run\""); at != std::string::npos; at = text.find("\"run\"", at + 1)) ++occurrences;
    CHECK(occurrences == 1);
    CHECK(nlohmann::json::parse(text)["run"]["attempt"] == 2);
}

TEST_CASE("metadata reaches every window's trace file") {
    stint_test::temp_dir dir;
    stint::profiler<> p({
        .schedule = stint::schedule({.wait = 1, .warmup = 1, .active = 1, .repeat = 2}),
        .on_trace_ready = stint::tensorboard_trace_handler(dir.path().string(), "meta"),
    });
    p.add_metadata("experiment", "e1");
    for (int i = 0; i < 6; ++i) p.step();
    int files = 0;
    for (const auto& entry : std::filesystem::directory_iterator(dir.path())) {
        ++files;
        CHECK(stint_test::read_json(entry.path().string())["experiment"] == "e1");
    }
    CHECK(files == 2);
}

TEST_CASE("set_distributed_info puts Kineto's distributedInfo at the trace's top level") {
    auto env = no_launcher();
    stint::set_distributed_info({.rank = 1, .world_size = 4, .backend = "nccl"});
    const auto trace = export_with([](stint::profiler<>&) {});
    stint::clear_distributed_info();
    REQUIRE(trace.contains("distributedInfo"));
    CHECK(trace["distributedInfo"] == nlohmann::json{{"backend", "nccl"}, {"rank", 1}, {"world_size", 4}});
    // Cleared: a single-process trace has none.
    CHECK_FALSE(stint::current_distributed_info().has_value());
    CHECK_FALSE(export_with([](stint::profiler<>&) {}).contains("distributedInfo"));
}

TEST_CASE("set_distributed_info refuses a rank outside the world") {
    const std::vector<std::pair<std::int64_t, std::int64_t>> bad = {{-1, 4}, {4, 4}, {0, 0}, {0, -2}};
    for (const auto& pair : bad) {
        const std::int64_t rank = pair.first;
        const std::int64_t size = pair.second;
        CAPTURE(rank);
        CAPTURE(size);
        CHECK_THROWS_WITH_AS(stint::set_distributed_info({.rank = rank, .world_size = size}),
                             ("stint: set_distributed_info(): need 0 <= rank < world_size, got rank=" +
                              std::to_string(rank) + " world_size=" + std::to_string(size))
                                 .c_str(),
                             std::invalid_argument);
    }
    auto env = no_launcher();
    CHECK_FALSE(stint::current_distributed_info().has_value());  // nothing was stored
}

TEST_CASE("the launcher's environment gives distributedInfo") {
    auto env = no_launcher();
    SUBCASE("RANK and WORLD_SIZE, as torchrun sets them") {
        env_guard set{{"RANK", "2"}, {"WORLD_SIZE", "8"}, {"LOCAL_RANK", "0"}, {"LOCAL_WORLD_SIZE", "4"}};
        const auto trace = export_with([](stint::profiler<>&) {});
        CHECK(trace["distributedInfo"] == nlohmann::json{{"backend", ""}, {"rank", 2}, {"world_size", 8}});
    }
    SUBCASE("LOCAL_RANK and LOCAL_WORLD_SIZE alone") {
        env_guard set{{"LOCAL_RANK", "1"}, {"LOCAL_WORLD_SIZE", "2"}};
        const auto info = stint::current_distributed_info();
        REQUIRE(info.has_value());
        CHECK(info->rank == 1);
        CHECK(info->world_size == 2);
    }
    SUBCASE("the program's word wins over the environment") {
        env_guard set{{"RANK", "2"}, {"WORLD_SIZE", "8"}};
        stint::set_distributed_info({.rank = 5, .world_size = 6, .backend = "gloo"});
        const auto trace = export_with([](stint::profiler<>&) {});
        stint::clear_distributed_info();
        CHECK(trace["distributedInfo"]["rank"] == 5);
        CHECK(trace["distributedInfo"]["backend"] == "gloo");
    }
    SUBCASE("metadata named distributedInfo replaces stint's, never duplicates it") {
        env_guard set{{"RANK", "2"}, {"WORLD_SIZE", "8"}};
        stint_test::temp_dir dir;
        stint::profiler<> prof;
        prof.add_metadata_json("distributedInfo", R"({"backend": "custom", "rank": 7, "world_size": 9})");
        prof.start();
        prof.stop();
        prof.export_chrome_trace(dir.file("t.json"));
        const std::string text = stint_test::read_file(dir.file("t.json"));
        CHECK(text.find("distributedInfo") == text.rfind("distributedInfo"));
        CHECK(nlohmann::json::parse(text)["distributedInfo"]["rank"] == 7);
    }
    SUBCASE("unusable values warn and leave distributedInfo out") {
        warning_capture warnings;
        {
            env_guard set{{"RANK", "two"}, {"WORLD_SIZE", "8"}};
            CHECK_FALSE(stint::current_distributed_info().has_value());
        }
        {
            env_guard set{{"RANK", "3"}};
            CHECK_FALSE(stint::current_distributed_info().has_value());
        }
        {
            env_guard set{{"RANK", "9"}, {"WORLD_SIZE", "8"}};
            CHECK_FALSE(stint::current_distributed_info().has_value());
        }
        {
            env_guard set{{"RANK", "-1"}, {"WORLD_SIZE", "8"}};
            CHECK_FALSE(stint::current_distributed_info().has_value());
        }
        {
            env_guard set{{"RANK", "two"}, {"WORLD_SIZE", "8"}};  // again: warned once already
            CHECK_FALSE(stint::current_distributed_info().has_value());
        }
        CHECK(warnings.seen() == std::vector<std::string>{
                                     "RANK='two' is not a non-negative integer; traces carry no distributedInfo",
                                     "RANK is set but WORLD_SIZE is not; traces carry no distributedInfo",
                                     "RANK=9 is not below WORLD_SIZE=8; traces carry no distributedInfo",
                                     "RANK='-1' is not a non-negative integer; traces carry no distributedInfo",
                                 });
    }
}
