// Crash dumps where crashes are worst (profiler/crash_dump.hpp): two threads faulting at once while others
// record and spin, a stack overflow, a forked child, a relative path after a chdir, a dump cut short.
// Each crash runs in a child process (tests/programs/crash_in_flight.cpp); each dump is read by both
// by the library's reader (read_crash_dump) and by the stint-crashdump tool built on it
// (tools/stint_crashdump.cpp), and their traces checked strictly.

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

/// Runs stint-crashdump with `arguments`.
stint_test::program_result run_tool(const std::string& arguments) {
    return stint_test::run_program(std::string(STINT_TEST_CRASHDUMP_TOOL) + " " + arguments);
}

/// The trace stint-crashdump writes, with its exit status checked.
nlohmann::json tool_trace(const std::string& dump, const std::string& out, int status = 0) {
    const stint_test::program_result decoded = run_tool(dump + " " + out);
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
        const nlohmann::json from_tool = tool_trace(dump, dir / "race.tool.pt.trace.json");
        CHECK(from_tool.at("crash").at("complete") == true);
        CHECK(from_cpp.at("traceEvents").size() == from_tool.at("traceEvents").size());
        for (const nlohmann::json* trace : {&from_cpp, &from_tool}) {
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
    check_trace(tool_trace(dump, dir / "overflow.pt.trace.json"));
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

TEST_CASE("a dump cut short is read as far as it goes, and the reader and the tool say what was lost") {
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
    const nlohmann::json trace = tool_trace(dump, dir / "cut.pt.trace.json", 1);
    CHECK(trace.at("crash").at("complete") == false);
    CHECK_FALSE(trace.at("crash").at("lost").empty());
    // Not a dump at all, and a header cut short: an error naming the byte, never a crash.
    std::filesystem::resize_file(dump, 20);
    CHECK_THROWS_WITH_AS(stint::read_crash_dump(dump), doctest::Contains("cut short inside its header"),
                         std::runtime_error);
    { std::ofstream(dump) << "not a dump at all"; }
    CHECK_THROWS_WITH_AS(stint::read_crash_dump(dump), doctest::Contains("is not a stint crash dump (byte 0)"),
                         std::runtime_error);
    const stint_test::program_result help = run_tool("--help");
    CHECK(help.status == 0);
    CHECK(help.output.find("stint-crashdump CRASH_DUMP OUT.pt.trace.json") != std::string::npos);
}

TEST_CASE("stint-crashdump refuses what is not a whole dump with a message and status 1, and bad usage with 2") {
    stint_test::temp_dir dir;
    const std::string dump = dir / "tool.stint";
    const std::string out = dir / "tool.pt.trace.json";
    CHECK(died_of_segv(crash("null", dump)));
    const auto size = std::filesystem::file_size(dump);
    {
        const stint_test::program_result whole = run_tool(dump + " " + out);
        INFO(whole.output);
        CHECK(whole.status == 0);
        CHECK(whole.output.find("died of signal 11") != std::string::npos);
        CHECK(stint_test::read_json(out).at("crash").at("complete") == true);
        std::filesystem::remove(out);
    }
    {
        std::filesystem::resize_file(dump, size - 1);  // the end section lost: read as far as it goes
        const stint_test::program_result cut = run_tool(dump + " " + out);
        INFO(cut.output);
        CHECK(cut.status == 1);
        CHECK(cut.output.find("the dump was cut short; " + out + " holds what could be read") != std::string::npos);
        CHECK(stint_test::read_json(out).at("crash").at("complete") == false);
        std::filesystem::remove(out);
    }
    const auto refused = [&](const std::string& why) {
        const stint_test::program_result r = run_tool(dump + " " + out);
        INFO(r.output);
        CHECK(r.status == 1);
        CHECK(r.output.find(why) != std::string::npos);
        CHECK(r.output.find("nothing converted") != std::string::npos);
        CHECK_FALSE(std::filesystem::exists(out));
    };
    std::filesystem::resize_file(dump, 30);
    refused("is cut short inside its header");
    { std::ofstream(dump, std::ios::binary) << "STINTCRASH" << '\x07' << '\0'; }
    refused("is a crash dump of version 7");
    { std::ofstream(dump) << "not a dump at all"; }
    refused("is not a stint crash dump (byte 0)");
    std::filesystem::remove(dump);
    refused("cannot read crash dump");
    CHECK(run_tool(dump).status == 2);
    CHECK(run_tool(dump).output.find("usage: stint-crashdump CRASH_DUMP OUT.pt.trace.json") != std::string::npos);
}

/// A crash dump (version 3) made by hand, a section at a time, from the layout as crash_dump_format.hpp
/// documents it (not from its names: this checks the layout itself).
class handmade_dump {
public:
    static constexpr std::uint64_t anchor = 1'000'000;
    static constexpr std::uint64_t crashed = 1'000'000'000;
    handmade_dump() {
        text("STINTCRASH");
        put(std::uint16_t{3});
        put(std::uint64_t{42});  // pid
        put(std::uint64_t{11});  // signal
        put(std::uint64_t{7});   // the crashed thread
        put(anchor);
        put(std::uint64_t{0});  // the anchor on the system clock
        put(1.0);  // ns per tick
        put(crashed);
    }
    /// A 'T' section with one span record (its run and its 'X').
    void thread(std::uint64_t tid, const std::string& name, std::uint64_t site, std::uint64_t begin,
                std::uint64_t end) {
        bytes_ += 'T';
        for (const std::uint64_t v : {tid, std::uint64_t{0}, std::uint64_t{0}, std::uint64_t{0}}) put(v);
        put(static_cast<std::uint32_t>(name.size()));
        text(name);
        bytes_ += 'R';
        put(std::uint64_t{24});
        for (const std::uint64_t v : {site, begin, end}) put(v);
        bytes_ += 'X';
        put(std::uint64_t{1});
        put(std::uint64_t{0});
        put(std::uint8_t{0});
    }
    /// An 'O' section: `depth` scopes open, of which one kept.
    void open(std::uint64_t tid, const std::string& name, std::uint32_t depth, std::uint64_t site,
              std::uint64_t begin) {
        bytes_ += 'O';
        put(tid);
        put(static_cast<std::uint32_t>(name.size()));
        text(name);
        put(depth);
        put(std::uint32_t{1});
        for (const std::uint64_t v : {site, begin, std::uint64_t{0}}) put(v);
        bytes_.append(24, '\0');
    }
    void site(std::uint64_t address, const std::string& name) {
        bytes_ += 'S';
        put(address);
        put(std::uint8_t{0});  // a span
        put(std::uint8_t{0});  // no payload
        put(static_cast<std::uint32_t>(name.size()));
        text(name);
    }
    void raw(char tag) { bytes_ += tag; }
    void write(const std::string& path) {
        std::ofstream out(path, std::ios::binary);
        out << bytes_ << 'E';
    }

private:
    template <class T>
    void put(T value) {
        bytes_.append(reinterpret_cast<const char*>(&value), sizeof value);
    }
    void text(const std::string& s) { bytes_ += s; }
    std::string bytes_;
};

TEST_CASE("a thread recorded by two shared objects is one thread, its open scopes from both, in reader and tool") {
    // Each object with copies of its own writes an 'O' and a 'T' section for the thread.
    stint_test::temp_dir dir;
    const std::string dump = dir / "two_objects.stint";
    handmade_dump d;
    d.open(9, "worker", 3, 0x1000, handmade_dump::anchor + 100);
    d.thread(9, "worker", 0x2000, handmade_dump::anchor + 200, handmade_dump::anchor + 300);
    d.open(9, "", 2, 0x3000, handmade_dump::anchor + 400);
    d.thread(9, "", 0x4000, handmade_dump::anchor + 500, handmade_dump::anchor + 600);
    for (const auto& [address, name] : std::map<std::uint64_t, std::string>{
             {0x1000, "a.open"}, {0x2000, "a.done"}, {0x3000, "b.open"}, {0x4000, "b.done"}}) {
        d.site(address, name);
    }
    d.write(dump);
    const stint::crash_dump_contents read = stint::read_crash_dump(dump);
    CHECK(read.complete);
    REQUIRE(read.threads.size() == 1);
    CHECK(read.threads[0].name == "worker");
    CHECK(read.threads[0].inside == std::vector<std::string>{"a.open", "b.open"});
    CHECK(read.threads[0].deeper_not_kept == 3);  // 2 under a.open, 1 under b.open
    const nlohmann::json trace = tool_trace(dump, dir / "two_objects.pt.trace.json");
    const nlohmann::json& threads = trace.at("crash").at("threads");
    REQUIRE(threads.size() == 1);
    CHECK(threads[0].at("name") == "worker");
    CHECK(threads[0].at("inside") == nlohmann::json::array({"a.open", "b.open"}));
    CHECK(threads[0].at("deeper_not_kept") == 3);
    std::vector<std::string> names;
    int thread_names = 0;
    for (const auto& e : trace.at("traceEvents")) {
        if (e.at("ph") == "M") ++thread_names;
        if (e.at("ph") == "X") names.push_back(e.at("name"));
    }
    CHECK(thread_names == 1);
    CHECK(names == std::vector<std::string>{"a.done", "b.done", "a.open", "b.open"});
    check_trace(trace);
}

TEST_CASE("a dump whose records come before any thread is refused by the reader and the tool, with a message") {
    stint_test::temp_dir dir;
    const std::string dump = dir / "orphan.stint";
    for (const char tag : {'R', 'X'}) {
        CAPTURE(tag);
        handmade_dump d;
        d.raw(tag);
        d.write(dump);
        CHECK_THROWS_WITH_AS(stint::read_crash_dump(dump), doctest::Contains("comes before any thread ('T')"),
                             std::runtime_error);
        const stint_test::program_result decoded = run_tool(dump + " " + (dir / "orphan.json"));
        INFO(decoded.output);
        CHECK(decoded.status == 1);
        CHECK(decoded.output.find("comes before any thread ('T')") != std::string::npos);
    }
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
    check_trace(tool_trace(dump, dir / "example.pt.trace.json"));
}
#endif
