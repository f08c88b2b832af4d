// Crash dumps where crashes are worst (profiler/crash_dump.hpp): two threads faulting at once while others
// record and spin, a stack overflow, a forked child, a relative path after a chdir, a dump cut short.
// Each crash runs in a child process (tests/programs/crash_in_flight.cpp); each dump is read by both
// readers, the C++ one (read_crash_dump) and tools/stint-crashdump, and their traces checked strictly.

#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "stint/stint.hpp"
#include "test_util.hpp"

namespace {

#if defined(__SANITIZE_ADDRESS__)
constexpr bool under_asan = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool under_asan = true;
#else
constexpr bool under_asan = false;
#endif
#else
constexpr bool under_asan = false;
#endif

/// Whether a program died of its SIGSEGV: under AddressSanitizer stint's handler chains to ASan's, which
/// reports the fault and exits with status 1 (unless another thread's fault ends the process first).
bool died_of_segv(const stint_test::program_result& r) {
    return r.status == 128 + SIGSEGV || (under_asan && r.status == 1);
}

stint_test::program_result crash(const std::string& mode, const std::string& dump, const std::string& more = "") {
    return stint_test::run_program(std::string(STINT_TEST_CRASH_PROGRAM) + " " + mode + " " + dump + " " + more);
}

/// The trace the Python tool writes, with its exit status checked.
nlohmann::json python_trace(const std::string& dump, const std::string& out, int status = 0) {
    const stint_test::program_result decoded =
        stint_test::run_program("python3 " + std::string(STINT_TEST_CRASHDUMP_TOOL) + " " + dump + " " + out);
    INFO(decoded.output);
    CHECK(decoded.status == status);
    return stint_test::read_json(out);  // nlohmann's parser is strict: no NaN, no trailing garbage
}

/// Checks a trace as a strict reader would: every complete event has numeric ts and dur >= 0, no event
/// names an unknown site, and on each thread the complete events nest (sorted by start, each ends within
/// the one it starts in). Returns the complete events' names per thread, in start order.
std::map<std::uint64_t, std::vector<std::string>> check_trace(const nlohmann::json& trace) {
    struct span {
        std::int64_t start, end;
        std::string name;
    };
    std::map<std::uint64_t, std::vector<span>> threads;
    for (const auto& e : trace.at("traceEvents")) {
        REQUIRE(e.at("name").is_string());
        CHECK(e.at("name").get<std::string>().find("[unknown site") == std::string::npos);
        if (e.at("ph") != "X") continue;
        REQUIRE(e.at("ts").is_number());
        REQUIRE(e.at("dur").is_number());
        CHECK(e.at("dur").get<double>() >= 0);
        const auto start = static_cast<std::int64_t>(e.at("ts").get<double>() * 1000 + 0.5);
        const auto end = start + static_cast<std::int64_t>(e.at("dur").get<double>() * 1000 + 0.5);
        threads[e.at("tid").get<std::uint64_t>()].push_back({start, end, e.at("name").get<std::string>()});
    }
    std::map<std::uint64_t, std::vector<std::string>> names;
    for (auto& [tid, spans] : threads) {
        std::stable_sort(spans.begin(), spans.end(), [](const span& a, const span& b) {
            return a.start != b.start ? a.start < b.start : a.end > b.end;
        });
        std::vector<const span*> open;
        for (const span& s : spans) {
            while (!open.empty() && open.back()->end <= s.start && !(open.back()->start == s.start)) open.pop_back();
            if (!open.empty() && s.end > open.back()->end + 1) {
                FAIL_CHECK("thread " << tid << ": " << s.name << " [" << s.start << ", " << s.end << "] ends after "
                                     << open.back()->name << " [" << open.back()->start << ", " << open.back()->end
                                     << "], which it began in");
            }
            open.push_back(&s);
            names[tid].push_back(s.name);
        }
    }
    return names;
}

/// "w<k> <i>" -> i for recorder k, else -1.
long index_of(const std::string& name, int k) {
    const std::string prefix = "w" + std::to_string(k) + " ";
    if (name.rfind(prefix, 0) != 0) return -1;
    return std::stol(name.substr(prefix.size()));
}

}  // namespace

TEST_CASE("two threads faulting at once, while four record and three spin, leave one complete dump") {
    for (const int mib : {256, 4}) {
        CAPTURE(mib);
        stint_test::temp_dir dir;
        const std::string dump = dir / "race.stint";
        const stint_test::program_result died = crash("race", dump, std::to_string(mib));
        INFO(died.output);
        CHECK(died_of_segv(died));
        // What each recorder had finished before the faults: "finished k tid i".
        std::map<int, std::pair<std::uint64_t, long>> finished;
        std::istringstream lines(died.output);
        for (std::string word; lines >> word;) {
            if (word != "finished") continue;
            int k = 0;
            std::uint64_t tid = 0;
            long i = 0;
            lines >> k >> tid >> i;
            finished[k] = {tid, i};
        }
        REQUIRE(finished.size() == 4);

        const stint::crash_dump_contents read = stint::read_crash_dump(dump);
        CHECK(read.complete);  // the second fault waited for the first's dump
        CHECK(read.signal == SIGSEGV);
        const std::string ours = dir / "race.cpp.pt.trace.json";
        stint::write_crash_dump_trace(read, ours);
        const nlohmann::json from_cpp = stint_test::read_json(ours);
        const nlohmann::json from_python = python_trace(dump, dir / "race.py.pt.trace.json");
        CHECK(from_python.at("crash").at("complete") == true);
        CHECK(from_cpp.at("traceEvents").size() == from_python.at("traceEvents").size());
        for (const nlohmann::json* trace : {&from_cpp, &from_python}) {
            const auto names = check_trace(*trace);
            for (const auto& item : finished) {
                const int k = item.first;
                const std::uint64_t tid = item.second.first;
                const long last_finished = item.second.second;
                CAPTURE(k);
                REQUIRE(names.count(tid) == 1);
                // The recorder's scopes, in order: every one from the oldest kept to the newest, once each,
                // the newest at or after what it had finished before the crash.
                std::vector<long> seen;
                for (const std::string& name : names.at(tid)) {
                    if (const long i = index_of(name, k); i >= 0) seen.push_back(i);
                }
                REQUIRE_FALSE(seen.empty());
                CHECK(seen.back() >= last_finished);
                CHECK(seen.back() - seen.front() + 1 == static_cast<long>(seen.size()));
                CHECK(std::adjacent_find(seen.begin(), seen.end(), [](long a, long b) { return b != a + 1; }) ==
                      seen.end());
                if (mib == 256) CHECK(seen.front() == 0);  // the big ring never turned
            }
        }
        std::uint64_t overwritten = 0;
        for (const auto& t : read.threads) overwritten += t.overwritten;
        if (mib == 4) CHECK(overwritten > 0);  // the small one did, and says how much
    }
}

TEST_CASE("a stack overflow leaves a dump, and under AddressSanitizer its report too") {
    stint_test::temp_dir dir;
    const std::string dump = dir / "overflow.stint";
    const stint_test::program_result died = crash("overflow", dump);
    INFO(died.output);
    CHECK(died.status != 0);
    if (under_asan) CHECK(died.output.find("AddressSanitizer: stack-overflow") != std::string::npos);
    REQUIRE(std::filesystem::exists(dump));
    const stint::crash_dump_contents read = stint::read_crash_dump(dump);
    CHECK(read.complete);
    const auto overflowing = std::find_if(read.threads.begin(), read.threads.end(),
                                          [](const auto& t) { return t.name == "overflowing"; });
    REQUIRE(overflowing != read.threads.end());
    CHECK(overflowing->crashed);
    // Inside the recursion: the outermost scopes kept, the deeper ones counted.
    REQUIRE(overflowing->inside.size() == 64);
    CHECK(overflowing->inside.back() == "crash.recursion");
    CHECK(overflowing->deeper_not_kept > 0);
    check_trace(python_trace(dump, dir / "overflow.pt.trace.json"));
}

TEST_CASE("a crash in a forked child leaves the parent's dump path alone") {
    stint_test::temp_dir dir;
    const std::string dump = dir / "fork.stint";
    const stint_test::program_result ran = crash("fork", dump);
    INFO(ran.output);
    CHECK(ran.status == 0);
    CHECK(ran.output.find(under_asan ? "child crashed" : "child crashed: signal 11") != std::string::npos);
    // The child's session ended at the fork and the file is the parent's: the child wrote none.
    CHECK_FALSE(std::filesystem::exists(dump));
}

TEST_CASE("a relative dump path is the one start() checked, whatever the program's directory at the crash") {
    stint_test::temp_dir dir;
    const std::string dump = dir / "relative.stint";
    const stint_test::program_result died = crash("chdir", dump);
    INFO(died.output);
    CHECK(died_of_segv(died));
    REQUIRE(std::filesystem::exists(dump));
    const stint::crash_dump_contents read = stint::read_crash_dump(dump);
    CHECK(read.complete);
    CHECK_FALSE(std::filesystem::exists("/relative.stint"));
}

TEST_CASE("a dump cut short is read as far as it goes, and both readers say what was lost") {
    stint_test::temp_dir dir;
    const std::string dump = dir / "cut.stint";
    CHECK(died_of_segv(crash("null", dump)));
    const auto size = std::filesystem::file_size(dump);
    std::filesystem::resize_file(dump, size / 2);  // as a full disk leaves it
    const stint::crash_dump_contents read = stint::read_crash_dump(dump);
    CHECK_FALSE(read.complete);
    CHECK(read.bytes == size / 2);
    REQUIRE_FALSE(read.lost.empty());
    CHECK(read.lost.front().find("cut short after") != std::string::npos);
    CHECK(stint::crash_dump_summary(read).find("(dump cut short)") != std::string::npos);
    const nlohmann::json trace = python_trace(dump, dir / "cut.pt.trace.json", 1);
    CHECK(trace.at("crash").at("complete") == false);
    CHECK_FALSE(trace.at("crash").at("lost").empty());
    // Not a dump at all, and a header cut short: an error naming the byte, never a crash.
    std::filesystem::resize_file(dump, 20);
    CHECK_THROWS_WITH_AS(stint::read_crash_dump(dump), doctest::Contains("cut short inside its header"),
                         std::runtime_error);
    { std::ofstream(dump) << "not a dump at all"; }
    CHECK_THROWS_WITH_AS(stint::read_crash_dump(dump), doctest::Contains("is not a stint crash dump (byte 0)"),
                         std::runtime_error);
    const stint_test::program_result help =
        stint_test::run_program("python3 " + std::string(STINT_TEST_CRASHDUMP_TOOL) + " --help");
    CHECK(help.status == 0);
    CHECK(help.output.find("stint-crashdump CRASH_DUMP OUT.pt.trace.json") != std::string::npos);
}

#if defined(STINT_TEST_FLIGHT_EXAMPLE)
TEST_CASE("the flight recorder example's crash mode leaves a dump that says where it died") {
    stint_test::temp_dir dir;
    const stint_test::program_result died =
        stint_test::run_program(std::string(STINT_TEST_FLIGHT_EXAMPLE) + " " + dir.path().string() + " crash");
    INFO(died.output);
    CHECK(died_of_segv(died));
    const std::string dump = dir / "flight_recorder.crash";
    REQUIRE(std::filesystem::exists(dump));
    const stint::crash_dump_contents read = stint::read_crash_dump(dump);
    CHECK(read.complete);
    const auto crashed = std::find_if(read.threads.begin(), read.threads.end(), [](const auto& t) { return t.crashed; });
    REQUIRE(crashed != read.threads.end());
    CHECK(crashed->inside == std::vector<std::string>{"ProfilerStep#80", "dispatch"});
    check_trace(python_trace(dump, dir / "example.pt.trace.json"));
}
#endif
