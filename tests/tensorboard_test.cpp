// tensorboard_trace_handler: one file per saved window, named as torch names them, never colliding.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <stdexcept>
#include <string>
#include <system_error>
#include <vector>

#include "stint/stint.hpp"
#include "test_util.hpp"

namespace {

std::vector<std::string> split(const std::string& text, char sep) {
    std::vector<std::string> parts;
    std::string::size_type from = 0;
    for (;;) {
        const auto at = text.find(sep, from);
        parts.push_back(text.substr(from, at - from));
        if (at == std::string::npos) return parts;
        from = at + 1;
    }
}

bool is_digits(const std::string& s) {
    return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

/// File names in `dir`, sorted by their time stamp (the number before ".pt.trace.json").
std::vector<std::string> trace_files(const std::filesystem::path& dir) {
    std::vector<std::string> names;
    for (const auto& entry : std::filesystem::directory_iterator(dir)) names.push_back(entry.path().filename().string());
    static const std::regex pattern(R"(^(.+)\.([0-9]+)\.pt\.trace\.json(\.gz)?$)");
    std::sort(names.begin(), names.end(), [](const std::string& a, const std::string& b) {
        std::smatch ma;
        std::smatch mb;
        if (!std::regex_match(a, ma, pattern) || !std::regex_match(b, mb, pattern)) return a < b;
        return std::stoll(ma[2]) < std::stoll(mb[2]);
    });
    return names;
}

/// The ProfilerStep#N names of a trace, sorted.
std::vector<std::string> profiler_step_names(const nlohmann::json& trace) {
    std::vector<std::string> names;
    for (const auto& e : stint_test::timed_events(trace)) {
        const std::string name = e.at("name");
        if (name.starts_with("ProfilerStep")) names.push_back(name);
    }
    std::sort(names.begin(), names.end());
    return names;
}

void payload(int i) {
    stint::record_function rf("payload#" + std::to_string(i));
    STINT_SCOPE("inner");
}

}  // namespace

TEST_CASE("18 steps with wait=1 warmup=1 active=2 repeat=3 write 3 trace files with torch's names") {
    // test_tensorboard_trace_handler, plain (profiler driven by step() alone, as in the seed's `with`
    // block) and gzip (start/step/stop).
    for (const bool gzip : {false, true}) {
        CAPTURE(gzip);
        stint_test::temp_dir dir;
        const std::string log = (dir.path() / "log").string();  // created by the handler
        {
            stint::profiler<> p({
                .schedule = stint::schedule({.wait = 1, .warmup = 1, .active = 2, .repeat = 3}),
                .on_trace_ready = stint::tensorboard_trace_handler(log, "", gzip),
            });
            if (gzip) p.start();
            for (int i = 0; i < 18; ++i) {
                payload(i);
                p.step();
            }
            if (gzip) p.stop();
        }
        REQUIRE(std::filesystem::is_directory(log));
        const std::vector<std::string> files = trace_files(log);
        REQUIRE(files.size() == 3);
        const std::vector<std::vector<std::string>> expected_steps = {
            {"ProfilerStep#2", "ProfilerStep#3"},
            {"ProfilerStep#6", "ProfilerStep#7"},
            {"ProfilerStep#10", "ProfilerStep#11"},
        };
        for (std::size_t f = 0; f < files.size(); ++f) {
            const std::string& name = files[f];
            CAPTURE(name);
            // The seed's checks, verbatim in spirit: split on '.', the stamp, the suffix.
            const std::vector<std::string> parts = split(name, '.');
            REQUIRE(parts.size() > 4);
            if (gzip) {
                CHECK(is_digits(parts[parts.size() - 5]));
                CHECK(std::stoll(parts[parts.size() - 5]) > 0);
                CHECK(std::vector<std::string>(parts.end() - 4, parts.end()) ==
                      std::vector<std::string>{"pt", "trace", "json", "gz"});
            } else {
                CHECK(is_digits(parts[parts.size() - 4]));
                CHECK(std::stoll(parts[parts.size() - 4]) > 0);
                CHECK(std::vector<std::string>(parts.end() - 3, parts.end()) ==
                      std::vector<std::string>{"pt", "trace", "json"});
            }
            // Each file is a valid trace (parsed by nlohmann-json) holding only its window.
            const nlohmann::json trace = stint_test::read_json((std::filesystem::path(log) / name).string());
            CHECK(profiler_step_names(trace) == expected_steps[f]);
            std::set<std::string> payloads;
            for (const auto& e : stint_test::timed_events(trace)) {
                const std::string event_name = e.at("name");
                if (event_name.starts_with("payload#")) payloads.insert(event_name);
                if (event_name.starts_with("ProfilerStep#")) CHECK(e.at("cat") == "user_annotation");
            }
            const std::string a = expected_steps[f][0].substr(std::string("ProfilerStep#").size());
            const std::string b = expected_steps[f][1].substr(std::string("ProfilerStep#").size());
            CHECK(payloads == std::set<std::string>{"payload#" + a, "payload#" + b});
        }
        if (gzip) {
            // Really gzip: the first two bytes are gzip's magic number.
            std::ifstream in(std::filesystem::path(log) / files[0], std::ios::binary);
            unsigned char magic[2] = {};
            in.read(reinterpret_cast<char*>(magic), 2);
            CHECK(magic[0] == 0x1f);
            CHECK(magic[1] == 0x8b);
        }
    }
}

TEST_CASE("the default worker name is <host>_<pid>") {
    stint_test::temp_dir dir;
    const stint::tensorboard_trace_handler handler(dir.path().string());
    const std::string name = std::filesystem::path(handler.next_path()).filename().string();
    const std::string worker = stint::detail::current_host_name() + "_" + std::to_string(stint::detail::current_pid());
    CHECK(name.starts_with(worker + "."));
    CHECK(name.ends_with(".pt.trace.json"));
    CHECK(stint::tensorboard_trace_handler(dir.path().string(), "trainer0").next_path().starts_with(
        (dir.path() / "trainer0.").string()));
}

TEST_CASE("file names never collide, even for windows saved within one millisecond") {
    stint_test::temp_dir dir;
    {
        // Every step saves a one-step window: 30 files in a few milliseconds.
        stint::profiler<> p({
            .schedule = stint::schedule({.warmup = 1, .active = 1}),
            .on_trace_ready = stint::tensorboard_trace_handler(dir.path().string(), "w"),
        });
        for (int i = 0; i < 60; ++i) p.step();
    }
    const std::vector<std::string> files = trace_files(dir.path());
    CHECK(files.size() == 30);
    // Two handlers in one process (same worker) take distinct stamps too, and skip names on disk.
    const stint::tensorboard_trace_handler first(dir.path().string(), "w");
    const stint::tensorboard_trace_handler second(dir.path().string(), "w");
    std::set<std::string> paths;
    for (int i = 0; i < 100; ++i) {
        const std::string path = (i % 2 == 0 ? first : second).next_path();
        CHECK_FALSE(std::filesystem::exists(path));
        paths.insert(path);
    }
    CHECK(paths.size() == 100);
}

TEST_CASE("a directory the handler cannot create is an error naming it, and the window stays readable") {
    stint_test::temp_dir dir;
    const std::string blocker = dir.file("not_a_dir");
    std::ofstream(blocker) << "x";
    const std::string log = blocker + "/log";
    stint::profiler<> p({
        .schedule = stint::schedule({.warmup = 1, .active = 1, .repeat = 1}),
        .on_trace_ready = stint::tensorboard_trace_handler(log),
    });
    p.step();  // step 1 records
    payload(1);
    CHECK_THROWS_WITH_AS(p.step(),
                         ("stint: tensorboard_trace_handler: can't create directory '" + log + "': Not a directory")
                             .c_str(),
                         std::system_error);
    CHECK_FALSE(p.events().empty());  // nothing lost: the window can still be exported elsewhere
    p.export_chrome_trace(dir.file("rescued.json"));
    CHECK(profiler_step_names(stint_test::read_json(dir.file("rescued.json"))) ==
          std::vector<std::string>{"ProfilerStep#1"});
}

TEST_CASE("an empty directory name is refused at construction") {
    CHECK_THROWS_WITH_AS(stint::tensorboard_trace_handler(""),
                         "stint: tensorboard_trace_handler(): the directory is empty", std::invalid_argument);
}
