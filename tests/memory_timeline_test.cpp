// export_memory_timeline: torch's [times, sizes] JSON (plain and gzip) and the HTML page, read back
// from the files written for hand-built event lists.

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <system_error>
#include <vector>

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include "stint/stint.hpp"
#include "stint/analysis/event_tree.hpp"
#include "test_util.hpp"

namespace {

constexpr std::int64_t base_ns = 1'700'000'000'123'456'100;  // the session's wall-clock start, 0.1 µs in
constexpr std::int64_t base_us = base_ns / 1000;
constexpr stint::device cpu{stint::device_type::cpu, -1};
using stint_test::cuda0;
const std::string tricky_op = "op<T> & \"quoted\" 'single'";

// One thread in one op. CPU: +400 at 1 µs, +100 at 2 µs (the peak, 500), the 400 freed and +50 both
// in 3 µs (coalesced to one point: 150). cuda:0: +1000 at 1.5 µs, freed at 4 µs.
stint::event_list two_devices() {
    stint::detail::event_list_builder b;
    b.set_base_time_ns(base_ns);
    const auto t = b.add_thread({.os_tid = 7, .name = "main"});
    b.add(stint::event_kind::user_annotation, tricky_op, t, 0, 5000);
    b.add_memory_event(stint::event_kind::memory, t, 1000, {.addr = 0x1000, .bytes = 400, .device = cpu}, 1);
    b.add_memory_event(stint::event_kind::memory, t, 1500, {.addr = 0x9000, .bytes = 1000, .device = cuda0}, 2);
    b.add_memory_event(stint::event_kind::memory, t, 2000, {.addr = 0x2000, .bytes = 100, .device = cpu}, 3);
    b.add_memory_event(stint::event_kind::memory, t, 3000, {.addr = 0x1000, .device = cpu}, 4,
                       {.free = true, .size_known = false});
    b.add_memory_event(stint::event_kind::memory, t, 3400, {.addr = 0x3000, .bytes = 50, .device = cpu}, 5);
    b.add_memory_event(stint::event_kind::memory, t, 4000, {.addr = 0x9000, .device = cuda0}, 6,
                       {.free = true, .size_known = false});
    return std::move(b).build();
}

// The times and the last column of each row, after checking each row's shape: 1 + 8 columns, all but
// the last zero.
struct series {
    std::vector<std::int64_t> times;
    std::vector<std::int64_t> bytes;
};

series read_series(const nlohmann::json& doc) {
    REQUIRE(doc.is_array());
    REQUIRE(doc.size() == 2);
    REQUIRE(doc[0].size() == doc[1].size());
    series s;
    for (const auto& t : doc[0]) s.times.push_back(t.get<std::int64_t>());
    for (const auto& row : doc[1]) {
        REQUIRE(row.size() == 9);
        for (std::size_t c = 0; c + 1 < row.size(); ++c) CHECK(row[c] == 0);
        s.bytes.push_back(row[8].get<std::int64_t>());
    }
    return s;
}

}  // namespace

TEST_CASE("memory timeline JSON is torch's [times, sizes] with the live bytes after each microsecond") {
    stint_test::temp_dir dir;
    const stint::event_list list = two_devices();
    stint::export_memory_timeline(list, dir.file("cpu.json"));
    const series s = read_series(stint_test::read_json(dir.file("cpu.json")));
    CHECK(s.times == std::vector<std::int64_t>{base_us + 1, base_us + 2, base_us + 3});
    CHECK(s.bytes == std::vector<std::int64_t>{400, 500, 150});
    // The same figures the list itself gives: the last Total Allocated of each microsecond.
    std::vector<std::int64_t> totals;
    for (const stint::event& e : list) {
        const stint::memory_record* r = list.memory_of(e);
        if (r != nullptr && r->device == cpu) totals.push_back(r->total_allocated);
    }
    CHECK(totals == std::vector<std::int64_t>{400, 500, 100, 150});
    // json.dump's separators, so that the file reads as torch's byte for byte.
    CHECK(stint_test::read_file(dir.file("cpu.json")).starts_with(
        "[[" + std::to_string(base_us + 1) + ", " + std::to_string(base_us + 2) + ", "));
}

TEST_CASE("memory timeline keeps only the asked device's events") {
    stint_test::temp_dir dir;
    const stint::event_list list = two_devices();
    SUBCASE("cuda:0") {
        stint::export_memory_timeline(list, dir.file("cuda.json"), cuda0);
        const series s = read_series(stint_test::read_json(dir.file("cuda.json")));
        CHECK(s.times == std::vector<std::int64_t>{base_us + 1, base_us + 4});
        CHECK(s.bytes == std::vector<std::int64_t>{1000, 0});
    }
    SUBCASE("a device with no memory events gives an empty timeline") {
        stint::export_memory_timeline(list, dir.file("cuda1.json"), {stint::device_type::cuda, 1});
        CHECK(stint_test::read_file(dir.file("cuda1.json")) == "[[], []]");
        stint::export_memory_timeline(list, dir.file("cuda1.html"), {stint::device_type::cuda, 1});
        const std::string page = stint_test::read_file(dir.file("cuda1.html"));
        CHECK(page.find("No memory events for cuda:1") != std::string::npos);
        CHECK(page.find("<svg") == std::string::npos);
        CHECK(page.ends_with("</html>\n"));
    }
    SUBCASE("a session without memory events") {
        stint::detail::event_list_builder b;
        const auto t = b.add_thread({.os_tid = 7, .name = "main"});
        b.add(stint::event_kind::user_annotation, "no memory", t, 0, 100);
        const stint::event_list none = std::move(b).build();
        stint::export_memory_timeline(none, dir.file("none.json"));
        CHECK(stint_test::read_json(dir.file("none.json")) == nlohmann::json::parse("[[], []]"));
    }
}

TEST_CASE("memory timeline .json.gz is the gzip of the .json") {
    stint_test::temp_dir dir;
    const stint::event_list list = two_devices();
    stint::export_memory_timeline(list, dir.file("m.json"), cuda0);
    stint::export_memory_timeline(list, dir.file("m.json.gz"), cuda0);
    const std::string packed = stint_test::read_file(dir.file("m.json.gz"));
    REQUIRE(packed.size() > 2);
    CHECK(static_cast<unsigned char>(packed[0]) == 0x1f);
    CHECK(static_cast<unsigned char>(packed[1]) == 0x8b);
    CHECK(stint_test::read_gzip(dir.file("m.json.gz")) == stint_test::read_file(dir.file("m.json")));
    CHECK(read_series(stint_test::read_json(dir.file("m.json.gz"))).bytes == std::vector<std::int64_t>{1000, 0});
}

TEST_CASE("memory timeline page marks the peak and the op, escaped") {
    stint_test::temp_dir dir;
    const stint::event_list list = two_devices();
    REQUIRE(list.memory_peaks().size() == 2);
    stint::export_memory_timeline(list, dir.file("cpu.html"));
    const std::string page = stint_test::read_file(dir.file("cpu.html"));
    CHECK(page.starts_with("<!DOCTYPE html>"));
    CHECK(page.find("<title>Memory timeline: cpu</title>") != std::string::npos);
    const std::string escaped = "op&lt;T&gt; &amp; &quot;quoted&quot; &#39;single&#39;";
    CHECK(page.find("<p id=\"peak\">Peak: 500 B (500 bytes) at 0.001 ms, in " + escaped + "</p>") !=
          std::string::npos);
    CHECK(page.find("peak 500 B in " + escaped + "</text>") != std::string::npos);
    CHECK(page.find(tricky_op) == std::string::npos);
    CHECK(page.find("<script") == std::string::npos);
    CHECK(page.find("http://") == page.find("http://www.w3.org/2000/svg"));  // the SVG namespace only
    // The step line: three points, each value held until the next, the last a little past it.
    const std::size_t series_at = page.find("<path id=\"series\" d=\"M");
    REQUIRE(series_at != std::string::npos);
    const std::string d = page.substr(series_at, page.find('"', series_at + 22) - series_at);
    CHECK(std::count(d.begin(), d.end(), 'H') == 3);
    CHECK(std::count(d.begin(), d.end(), 'V') == 2);

    stint::export_memory_timeline(list, dir.file("cuda.html"), cuda0);
    const std::string gpu = stint_test::read_file(dir.file("cuda.html"));
    CHECK(gpu.find("<h1>Memory timeline: cuda:0</h1>") != std::string::npos);
    CHECK(gpu.find("Peak: 1000 B (1000 bytes) at 0.000 ms, in " + escaped) != std::string::npos);

    // STINT_TEST_TRACE_DIR: keep a page for tests/viewer/run.sh, which renders it in headless Chromium.
    if (const char* keep = std::getenv("STINT_TEST_TRACE_DIR"); keep != nullptr) {
        std::filesystem::copy_file(dir.file("cpu.html"), std::string(keep) + "/memory_timeline.html",
                                   std::filesystem::copy_options::overwrite_existing);
    }
}

TEST_CASE("memory timeline html escaping replaces ill-formed UTF-8 and control characters") {
    CHECK(stint::detail::html_escaped("a\xC3\xA9<b>") == "a\xC3\xA9&lt;b&gt;");
    CHECK(stint::detail::html_escaped("x\xC0\xAFy") == "x\xEF\xBF\xBD\xEF\xBF\xBDy");
    CHECK(stint::detail::html_escaped(std::string("n\0l\x1b", 4)) == "n\xEF\xBF\xBDl\xEF\xBF\xBD");
}

TEST_CASE("memory timeline refuses other endings and unwritable paths") {
    stint_test::temp_dir dir;
    const stint::event_list list = two_devices();
    for (const std::string name : {"m.txt", "m.gz", "m.raw.json.gz", "m.htm", "m"}) {
        const std::string path = dir.file(name);
        CHECK_THROWS_WITH_AS(stint::export_memory_timeline(list, path),
                             ("stint: export_memory_timeline('" + path +
                              "'): the path must end in .json, .json.gz or .html")
                                 .c_str(),
                             std::invalid_argument);
        CHECK_FALSE(std::filesystem::exists(path));
    }
    const std::string missing = dir.file("no/such/dir/m.html");
    CHECK_THROWS_WITH_AS(stint::export_memory_timeline(list, missing),
                         stint_test::write_error_text(missing, "No such file or directory").c_str(),
                         std::system_error);
    std::ofstream(dir.file("file")) << "x";
    const std::string under_file = dir.file("file") + "/m.json";
    CHECK_THROWS_WITH_AS(stint::export_memory_timeline(list, under_file),
                         stint_test::write_error_text(under_file, "Not a directory").c_str(),
                         std::system_error);
}
