// stint-analyze run as a user runs it, on generated traces: its --json output read back with
// nlohmann-json, its exit statuses, its --help.

#include <doctest/doctest.h>

#include <cstdio>      // popen, pclose
#include <filesystem>  // std::filesystem
#include <fstream>     // std::ofstream
#include <string>      // std::string

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <sys/wait.h>
#include <unistd.h>

namespace {

struct run_result {
    int status = -1;
    std::string out;
};

run_result run_tool(const std::string& args) {
    const std::string command = fmt::format("'{}' {} 2>/dev/null", STINT_TEST_ANALYZE_TOOL, args);
    std::FILE* p = ::popen(command.c_str(), "r");
    REQUIRE(p != nullptr);
    run_result r;
    char buffer[4096];
    std::size_t n = 0;
    while ((n = std::fread(buffer, 1, sizeof buffer, p)) > 0) r.out.append(buffer, n);
    const int raw = ::pclose(p);
    r.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
    return r;
}

std::string write_temp(const std::string& name, const std::string& text) {
    const auto path = std::filesystem::temp_directory_path() / fmt::format("stint_cli_{}_{}", ::getpid(), name);
    std::ofstream(path) << text;
    return path.string();
}

// Device 0: a kernel 0-10 us and an NCCL kernel 5-25 us on another stream, a copy 30-40 us: span 40,
// compute 10, communication 20, memory 10, idle 40 - 35 = 5, overlap 5 / 20 = 25 %.
// Device 1: one kernel 100-104 us. A second run makes aten::mm 3x slower and adds one call.
std::string trace(int mm_us, int mm_calls) {
    std::string events = R"(
  {"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": 0, "dur": 10, "args": {"device": 0, "stream": 7}},
  {"ph": "X", "cat": "kernel", "name": "ncclKernel_AllReduce", "pid": 0, "tid": 8, "ts": 5, "dur": 20, "args": {"device": 0, "stream": 8}},
  {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy DtoH", "pid": 0, "tid": 7, "ts": 30, "dur": 10, "args": {"device": 0, "stream": 7}},
  {"ph": "X", "cat": "kernel", "name": "relu", "pid": 1, "tid": 7, "ts": 100, "dur": 4, "args": {"device": 1, "stream": 7}},
  {"ph": "X", "cat": "cpu_op", "name": "aten::relu", "pid": 9, "tid": 1, "ts": 0, "dur": 5})";
    for (int i = 0; i < mm_calls; ++i) {
        events += fmt::format(R"(,
  {{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 9, "tid": 1, "ts": {}, "dur": {}}})", 10 + 100 * i, mm_us);
    }
    return "{\"traceEvents\": [" + events + "\n]}\n";
}

}  // namespace

TEST_CASE("stint-analyze breakdown --json gives one object per device") {
    const std::string path = write_temp("a.json", trace(10, 2));
    const run_result r = run_tool("breakdown --json " + path);
    REQUIRE(r.status == 0);
    const auto j = nlohmann::json::parse(r.out);
    REQUIRE(j.is_array());
    REQUIRE(j.size() == 2);
    CHECK(j[0]["device"] == "cuda:0");
    CHECK(j[0]["span_us"].get<double>() == doctest::Approx(40));
    CHECK(j[0]["compute_us"].get<double>() == doctest::Approx(10));
    CHECK(j[0]["communication_us"].get<double>() == doctest::Approx(20));
    CHECK(j[0]["memory_us"].get<double>() == doctest::Approx(10));
    CHECK(j[0]["idle_us"].get<double>() == doctest::Approx(5));
    CHECK(j[0]["overlap_pct"].get<double>() == doctest::Approx(25));
    CHECK(j[1]["device"] == "cuda:1");
    CHECK(j[1]["span_us"].get<double>() == doctest::Approx(4));
    CHECK(j[1]["idle_us"].get<double>() == doctest::Approx(0));
    std::filesystem::remove(path);
}

TEST_CASE("stint-analyze diff --json lists the most changed op first, and --fail-ratio gates") {
    const std::string a = write_temp("a.json", trace(10, 2));
    const std::string b = write_temp("b.json", trace(30, 3));
    const run_result r = run_tool(fmt::format("diff --json {} {}", a, b));
    REQUIRE(r.status == 0);
    const auto j = nlohmann::json::parse(r.out);
    REQUIRE(j.is_array());
    REQUIRE(j.size() == 6);
    CHECK(j[0]["name"] == "aten::mm");
    CHECK(j[0]["count_a"] == 2);
    CHECK(j[0]["count_b"] == 3);
    CHECK(j[0]["total_us_a"].get<double>() == doctest::Approx(20));
    CHECK(j[0]["total_us_b"].get<double>() == doctest::Approx(90));
    CHECK(j[1]["total_us_a"] == j[1]["total_us_b"]);

    CHECK(run_tool(fmt::format("diff --fail-ratio 5 {} {}", a, b)).status == 0);
    const run_result gated = run_tool(fmt::format("diff --fail-ratio 1.5 --noise-us 1 {} {}", a, b));
    CHECK(gated.status == 1);
    CHECK(gated.out.find("SLOWER: aten::mm") != std::string::npos);
    const auto quiet = nlohmann::json::parse(run_tool(fmt::format("diff --json --noise-us 1 {} {}", a, b)).out);
    CHECK(quiet.size() == 1);
    std::filesystem::remove(a);
    std::filesystem::remove(b);
}

TEST_CASE("stint-analyze's other commands print JSON that parses, and tables") {
    const std::string path = write_temp("c.json", trace(10, 2));
    for (const char* command : {"idle", "overlap", "kernels", "launches", "queue"}) {
        CAPTURE(command);
        const run_result r = run_tool(fmt::format("{} --json {}", command, path));
        CHECK(r.status == 0);
        CHECK(nlohmann::json::accept(r.out));
        const run_result table = run_tool(fmt::format("{} {}", command, path));
        CHECK(table.status == 0);
        CHECK(table.out.starts_with("---"));
    }
    const auto overlap = nlohmann::json::parse(run_tool("overlap --json " + path).out);
    CHECK(overlap[0]["overlap_us"].get<double>() == doctest::Approx(5));
    std::filesystem::remove(path);
}

TEST_CASE("stint-analyze: --help, bad usage and unreadable traces") {
    const run_result help = run_tool("--help");
    CHECK(help.status == 0);
    CHECK(help.out.starts_with("usage: stint-analyze"));
    CHECK(run_tool("").status == 2);
    CHECK(run_tool("frobnicate x.json").status == 2);
    CHECK(run_tool("diff only_one.json").status == 2);
    CHECK(run_tool("breakdown --top").status == 2);
    // Past what the option's type holds: a usage error, not a cast that is undefined.
    CHECK(run_tool("breakdown --top 1e30 /nonexistent/stint.json").status == 2);
    CHECK(run_tool("launches --kernel-wait-ns 1e19 /nonexistent/stint.json").status == 2);
    const std::string cut = write_temp("cut.json", trace(10, 2).substr(0, 200));
    CHECK(run_tool("breakdown " + cut).status == 3);
    CHECK(run_tool("breakdown /nonexistent/stint.json").status == 3);
    std::filesystem::remove(cut);
}

TEST_CASE("stint-analyze --json replaces what is not UTF-8 by Unicode's table with U+FFFD, one per ill-formed part") {
    // A surrogate (ED A0 80), an overlong form (E0 80 80) and a code point past U+10FFFF (F4 90 80 80)
    // pass a check of lead and continuation bytes alone; each of their bytes is an ill-formed part.
    const std::string name = "k\xed\xa0\x80\xe0\x80\x80\xf4\x90\x80\x80\xc3\xa9";
    const std::string text = "{\"traceEvents\": [{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"" + name +
                             "\", \"pid\": 0, \"tid\": 7, \"ts\": 0, \"dur\": 10, \"args\": {\"device\": 0, \"stream\": 7}}]}";
    const std::string path = write_temp("utf8.json", text);
    const run_result r = run_tool("kernels --json " + path);
    CHECK(r.status == 0);
    REQUIRE(nlohmann::json::accept(r.out));
    const std::string dumped = nlohmann::json::parse(r.out).dump();
    std::string expected = "k";
    for (int i = 0; i < 10; ++i) expected += "\xef\xbf\xbd";
    expected += "\xc3\xa9";
    CHECK(dumped.find(expected) != std::string::npos);
    std::filesystem::remove(path);
}
