// Hostile input: names, thread names, metadata and op inputs with every byte value, invalid and
// overlong UTF-8, encoded surrogates, NULs and 1 MiB strings. Every JSON export parses as strict
// JSON (nlohmann-json rejects invalid UTF-8), each invalid UTF-8 subpart reads back as one U+FFFD
// (common/utf8.hpp), valid UTF-8 reads back unchanged, and collapsed stacks keep one line per event.
#include <doctest/doctest.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "../test_util.hpp"

using namespace std::string_literals;
using json = nlohmann::json;

namespace {

// Ops that keep string inputs of up to 1024 bytes (max_bytes / 4).
using text_ops = stint::config<stint::record_shapes_limits<4, 4, 4096>>;
using stacks = stint::config<stint::with_stack<>>;

const std::string fffd = "\xEF\xBF\xBD";  // U+FFFD REPLACEMENT CHARACTER

std::string repeat(std::string_view s, std::size_t n) {
    std::string out;
    for (std::size_t i = 0; i < n; ++i) out.append(s);
    return out;
}

struct hostile_case {
    std::string raw;       // what the program passes
    std::string expected;  // what a JSON reader reads back
};

// Every byte alone, all 256 together, and the invalid UTF-8 forms; each with its documented reading.
std::vector<hostile_case> hostile_cases() {
    std::vector<hostile_case> cases;
    std::string all;
    for (int b = 0; b < 256; ++b) {
        const std::string one(1, static_cast<char>(b));
        all += one;
        cases.push_back({one, b < 0x80 ? one : fffd});
    }
    // 0..7F as themselves; 80..BF are stray continuations; every lead byte C0..FF is followed by a
    // byte that cannot continue it: 128 replacements.
    cases.push_back({all, all.substr(0, 128) + repeat(fffd, 128)});
    const std::vector<hostile_case> forms = {
        {"\x80", fffd},                                       // lone continuation bytes
        {"\xBF\x80x", fffd + fffd + "x"},
        {"\xC3", fffd},                                       // truncated sequences: one U+FFFD each
        {"\xE4\xB8x", fffd + "x"},
        {"\xF0\x9F\x98!", fffd + "!"},
        {"\xC0\x80", fffd + fffd},                            // overlong NUL, 2, 3 and 4 bytes
        {"\xC1\xBF", fffd + fffd},
        {"\xE0\x80\x80", repeat(fffd, 3)},
        {"\xF0\x80\x80\x80", repeat(fffd, 4)},
        {"\xE0\x9F\xBF", repeat(fffd, 3)},                    // overlong U+07FF
        {"\xF4\x90\x80\x80", repeat(fffd, 4)},                // U+110000, beyond Unicode
        {"\xF5\x80\x80\x80", repeat(fffd, 4)},
        {"\xED\xA0\x80", repeat(fffd, 3)},                    // encoded surrogates: lone, low, a pair
        {"\xED\xBF\xBF", repeat(fffd, 3)},
        {"\xED\xA0\xBD\xED\xB8\x80", repeat(fffd, 6)},
        {"\xFE\xFF", fffd + fffd},
        {"a\0b"s, "a\0b"s},                                   // NULs
        {"\0\0\0"s, "\0\0\0"s},
        {"\"\\\"\\/'", "\"\\\"\\/'"},                         // quotes and backslashes
        {"\n\r\t\b\f\x1b\x7f", "\n\r\t\b\f\x1b\x7f"},         // control characters
        {"}]},\"x\": [\"", "}]},\"x\": [\""},                 // JSON-looking text
        // Valid UTF-8 reads back byte for byte: 2-, 3- and 4-byte sequences, the limits of each.
        {"\xC3\xA9\xE4\xB8\xAD\xF0\x9F\x98\x80", "\xC3\xA9\xE4\xB8\xAD\xF0\x9F\x98\x80"},
        {"\xC2\x80\xDF\xBF\xE0\xA0\x80\xED\x9F\xBF\xEE\x80\x80\xEF\xBF\xBF",
         "\xC2\x80\xDF\xBF\xE0\xA0\x80\xED\x9F\xBF\xEE\x80\x80\xEF\xBF\xBF"},
        {"\xF0\x90\x80\x80\xF4\x8F\xBF\xBF", "\xF0\x90\x80\x80\xF4\x8F\xBF\xBF"},
        {fffd + "\xE2\x80\xA8", fffd + "\xE2\x80\xA8"},       // U+FFFD itself, U+2028
        {"a\xFF" "b\xC3\xA9", "a" + fffd + "b\xC3\xA9"},      // valid around invalid
    };
    cases.insert(cases.end(), forms.begin(), forms.end());
    return cases;
}

// The trace's text, parsed strictly; REQUIREs that no object repeats a key at the top level.
json parse_unique(const std::string& text) {
    std::set<std::string> keys;
    bool repeated = false;
    json trace = json::parse(text, [&](int depth, json::parse_event_t event, json& parsed) {
        if (depth == 1 && event == json::parse_event_t::key) repeated |= !keys.insert(parsed.get<std::string>()).second;
        return true;
    });
    REQUIRE_FALSE(repeated);
    return trace;
}

// The program's events of the trace (not stint's overhead), in trace order.
std::vector<json> program_events(const json& trace) { return stint_test::timed_events(trace); }

using stint_test::spin_for;

}  // namespace

TEST_CASE("every byte value and every invalid UTF-8 form reads back as U+FFFD or unchanged in traces") {
    const std::vector<hostile_case> cases = hostile_cases();
    stint_test::temp_dir dir;
    stint::profiler<> prof;
    for (std::size_t i = 0; i < cases.size(); ++i) prof.add_metadata("value#" + std::to_string(i), cases[i].raw);
    prof.start();
    for (const hostile_case& c : cases) {
        { STINT_SCOPE_NAMED(c.raw); }
        { stint::record_function rf(c.raw); }
        { stint::record_function rf("args", c.raw); }
        { STINT_OP(text_ops, "op", c.raw); }
    }
    prof.stop();
    REQUIRE(prof.stats().dropped == 0);
    CHECK(prof.stats().truncated_names == 0);

    // In memory, names and args stay byte for byte what the program passed.
    std::vector<std::optional<stint::event>> in_memory;
    for (const stint::event& e : prof.events()) {
        if (e.kind != stint::event_kind::overhead) in_memory.push_back(e);
    }
    REQUIRE(in_memory.size() == 4 * cases.size());
    for (std::size_t i = 0; i < cases.size(); ++i) {
        CAPTURE(i);
        CHECK(in_memory[4 * i]->name == cases[i].raw);
        CHECK(in_memory[4 * i + 1]->name == cases[i].raw);
        REQUIRE(prof.events().args(*in_memory[4 * i + 2]) != nullptr);
        CHECK(prof.events().args(*in_memory[4 * i + 2])->record_args == cases[i].raw);
        REQUIRE(prof.events().args(*in_memory[4 * i + 3]) != nullptr);
        CHECK(prof.events().args(*in_memory[4 * i + 3])->concrete_inputs == std::vector<std::string>{cases[i].raw});
    }

    SUBCASE("the chrome trace, plain and gzip, parses and reads back the documented text") {
        prof.export_chrome_trace(dir.file("t.json"));
        prof.export_chrome_trace(dir.file("t.json.gz"));
        const json trace = parse_unique(stint_test::read_file(dir.file("t.json")));
        CHECK(stint_test::read_json(dir.file("t.json.gz")) == trace);
        const std::vector<json> events = program_events(trace);
        REQUIRE(events.size() == 4 * cases.size());
        for (std::size_t i = 0; i < cases.size(); ++i) {
            CAPTURE(i);
            const std::string& expected = cases[i].expected;
            CHECK(events[4 * i].at("name") == expected);
            CHECK(events[4 * i + 1].at("name") == expected);
            CHECK(events[4 * i + 2].at("name") == "args");
            CHECK(events[4 * i + 2].at("args").at("Concrete Inputs") == json::array({expected}));
            CHECK(events[4 * i + 3].at("name") == "op");
            CHECK(events[4 * i + 3].at("args").at("Input type") == json::array({"String"}));
            CHECK(events[4 * i + 3].at("args").at("Concrete Inputs") == json::array({expected}));
            CHECK(trace.at("value#" + std::to_string(i)) == expected);
        }
    }
    SUBCASE("a TensorBoard directory gets the same trace") {
        stint::tensorboard_trace_handler handler(dir.file("log"), "worker", true);
        handler(prof);
        std::vector<std::filesystem::path> files;
        for (const auto& f : std::filesystem::directory_iterator(dir.file("log"))) files.push_back(f.path());
        REQUIRE(files.size() == 1);
        const std::vector<json> events = program_events(stint_test::read_json(files[0].string()));
        REQUIRE(events.size() == 4 * cases.size());
        CHECK(events[4 * 256].at("name") == cases[256].expected);  // all 256 bytes together
    }
    SUBCASE("key_averages and its table take every name") {
        const stint::averaged_event_list averages = prof.key_averages();
        std::int64_t calls = 0;
        for (const stint::averaged_event& a : averages) calls += a.count;
        CHECK(calls == static_cast<std::int64_t>(prof.events().size()));
        const std::string table = averages.table({.row_limit = -1});
        CHECK(table.find("Self CPU time total: ") != std::string::npos);
    }
}

TEST_CASE("a name with a NUL is shown as recorded, not as what the demangler reads up to the NUL") {
    stint::profiler<> prof;
    prof.start();
    { stint::record_function rf("a\0b"s); }       // "a" alone demangles to "signed char"
    { stint::record_function rf("_Z3foov\0x"s); }  // "_Z3foov" to "foo()"
    { stint::record_function rf("_Z3foov"); }
    prof.stop();
    std::map<std::string, std::int64_t> counts;
    for (const stint::averaged_event& a : prof.key_averages()) counts[a.key] += a.count;
    CHECK(counts["a\0b"s] == 1);
    CHECK(counts["_Z3foov\0x"s] == 1);
    CHECK(counts["foo()"] == 1);
    CHECK(counts.count("signed char") == 0);
}

TEST_CASE("hostile thread names read back as documented in the thread list and the thread metadata") {
    const std::vector<hostile_case> cases = hostile_cases();
    stint_test::temp_dir dir;
    stint::profiler<> prof;
    prof.start();
    for (std::size_t i = 0; i < cases.size(); ++i) {
        std::thread([&, i] {
            stint::set_thread_name(cases[i].raw);
            stint::record_function rf("thread#" + std::to_string(i));
        }).join();
    }
    prof.stop();
    REQUIRE(prof.stats().dropped == 0);
    prof.export_chrome_trace(dir.file("t.json"));
    const json trace = parse_unique(stint_test::read_file(dir.file("t.json")));
    std::map<std::uint64_t, std::string> metadata_names;  // by tid
    std::map<std::string, std::uint64_t> tid_of;          // by event name
    for (const json& e : trace.at("traceEvents")) {
        if (e.at("ph") == "M" && e.at("name") == "thread_name") {
            metadata_names[e.at("tid").get<std::uint64_t>()] = e.at("args").at("name").get<std::string>();
        } else if (e.at("ph") == "X" && e.at("cat") == "user_annotation") {
            tid_of[e.at("name").get<std::string>()] = e.at("tid").get<std::uint64_t>();
        }
    }
    std::map<std::uint64_t, std::string> listed_names;
    for (const json& t : trace.at("stint").at("threads")) {
        listed_names[t.at("tid").get<std::uint64_t>()] = t.at("name").get<std::string>();
    }
    REQUIRE(tid_of.size() == cases.size());
    for (std::size_t i = 0; i < cases.size(); ++i) {
        CAPTURE(i);
        const std::uint64_t tid = tid_of.at("thread#" + std::to_string(i));
        CHECK(listed_names.at(tid) == cases[i].expected);
        CHECK(metadata_names.at(tid) == cases[i].expected);
    }
}

TEST_CASE("metadata keys that read back alike appear once, with the value added last") {
    const std::vector<hostile_case> cases = hostile_cases();
    stint_test::temp_dir dir;
    stint::profiler<> prof;
    std::map<std::string, std::string> expected;  // key as read back -> the value added last
    for (std::size_t i = 0; i < cases.size(); ++i) {
        prof.add_metadata(cases[i].raw, std::to_string(i));
        expected[cases[i].expected] = std::to_string(i);
    }
    prof.add_metadata("k\xFF", "invalid");
    prof.add_metadata("k" + fffd, "valid U+FFFD");  // reads back as the same key: the last wins
    prof.add_metadata("k\xFE", "invalid again");
    prof.add_metadata("k" + fffd, "valid U+FFFD");
    expected["k" + fffd] = "valid U+FFFD";
    prof.start();
    prof.stop();
    prof.export_chrome_trace(dir.file("t.json"));
    const std::string text = stint_test::read_file(dir.file("t.json"));
    const json trace = parse_unique(text);  // REQUIREs unique keys
    for (const auto& entry : expected) {  // not a structured binding: clang 14 cannot capture one
        const std::string& key = entry.first;
        CAPTURE(key);
        REQUIRE(trace.contains(key));
        CHECK(trace.at(key) == entry.second);
    }
    CHECK(text.find("\"invalid\"") == std::string::npos);
    CHECK(text.find("\"invalid again\"") == std::string::npos);
}

TEST_CASE("metadata JSON with lone surrogates, invalid UTF-8 or NULs is refused with the reason") {
    stint::profiler<> prof;
    const std::vector<std::pair<std::string, std::string>> refused = {
        {R"("\ud800")", "unpaired surrogate at offset 1"},
        {R"("\udc00")", "unpaired surrogate at offset 1"},
        {R"("x\ud83d\u0041")", "unpaired surrogate at offset 2"},
        {R"(["\ud83d"])", "unpaired surrogate at offset 2"},
        {R"("\ud83d\ude0")", "invalid \\u escape at offset 7"},
        {"\"\xED\xA0\x80\"", "invalid UTF-8 in string at offset 1"},
        {"\"\xC0\x80\"", "invalid UTF-8 in string at offset 1"},
        {"\"\xF4\x90\x80\x80\"", "invalid UTF-8 in string at offset 1"},
        {"\"ab\xE4\xB8\"", "invalid UTF-8 in string at offset 3"},
        {"\"a\0b\""s, "control character in string at offset 2"},
        {"1\0"s, "expected end of input at offset 1"},
        {"\0"s, "expected value at offset 0"},
        {"\xEF\xBB\xBF{}", "expected value at offset 0"},  // a byte-order mark is not JSON
        {repeat("[", 513) + repeat("]", 513), "nesting deeper than 512 at offset 512"},
    };
    for (const auto& entry : refused) {
        const std::string& text = entry.first;
        CAPTURE(text);
        CHECK_THROWS_WITH_AS(prof.add_metadata_json("k", text),
                             ("stint: add_metadata_json(\"k\"): the value is not valid JSON: " + entry.second).c_str(),
                             std::invalid_argument);
    }
    prof.add_metadata_json("pair", R"("\ud83d\ude00")");
    prof.add_metadata_json("deep", repeat("[", 512) + repeat("]", 512));
    prof.add_metadata_json("utf8", "\"\xF0\x9F\x98\x80\\u0000\"");
    stint_test::temp_dir dir;
    prof.start();
    prof.stop();
    prof.export_chrome_trace(dir.file("t.json"));
    const json trace = parse_unique(stint_test::read_file(dir.file("t.json")));
    CHECK_FALSE(trace.contains("k"));
    CHECK(trace.at("pair") == "\xF0\x9F\x98\x80");
    CHECK(trace.at("utf8") == "\xF0\x9F\x98\x80\0"s);
    CHECK(trace.at("deep").dump() == repeat("[", 512) + repeat("]", 512));
}

TEST_CASE("1 MiB names are cut at 4096 bytes and counted; 1 MiB values are cut where inputs are bounded") {
    const std::string big(std::size_t{1} << 20, 'x');
    const std::string cut_in_sequence = std::string(4095, 'a') + "\xC3\xA9" + std::string(100, 'b');
    stint_test::temp_dir dir;
    stint::profiler<> prof;
    prof.add_metadata("big", big);
    prof.add_metadata_json("big_json", "\"" + big + "\"");
    prof.start();
    { stint::record_function rf(big); }
    { STINT_SCOPE_NAMED(big); }
    { stint::record_function rf(big, "with args"); }
    { stint::record_function rf(cut_in_sequence); }
    { stint::record_function rf("big args", big); }
    { STINT_OP(text_ops, "big op", big); }
    std::thread([&] {
        stint::set_thread_name(big);
        stint::record_function rf("named thread");
    }).join();
    prof.stop();
    CHECK(prof.stats().truncated_names == 4);
    CHECK(prof.stats().dropped == 0);
    prof.export_chrome_trace(dir.file("t.json"));
    const json trace = parse_unique(stint_test::read_file(dir.file("t.json")));
    CHECK(trace.at("stint").at("truncated_names") == 4);
    CHECK(trace.at("big") == big);
    CHECK(trace.at("big_json") == big);
    const std::vector<json> events = program_events(trace);
    REQUIRE(events.size() == 7);
    CHECK(events[0].at("name") == big.substr(0, 4096));
    CHECK(events[1].at("name") == big.substr(0, 4096));
    CHECK(events[2].at("name") == big.substr(0, 4096));
    CHECK(events[2].at("args").at("Concrete Inputs") == json::array({"with args"}));
    CHECK(events[3].at("name") == std::string(4095, 'a') + fffd);  // a sequence cut short is replaced
    CHECK(events[4].at("args").at("Concrete Inputs") == json::array({big.substr(0, 4096)}));
    CHECK(events[4].at("args").at("Inputs truncated") == true);
    CHECK(events[5].at("args").at("Concrete Inputs") == json::array({big.substr(0, 1024)}));
    CHECK(events[5].at("args").at("Inputs truncated") == true);
    // Thread names are not cut.
    const std::uint64_t tid = events[6].at("tid").get<std::uint64_t>();
    for (const json& t : trace.at("stint").at("threads")) {
        if (t.at("tid") == tid) CHECK(t.at("name") == big);
    }
}

TEST_CASE("collapsed stacks keep one line per event whatever the names hold") {
    std::vector<std::string> names;
    for (const hostile_case& c : hostile_cases()) names.push_back(c.raw);
    names.push_back("a b;c\nd\re\vf\tg\fh\x1ci\x1dj\x1ek\0l\x7fm"s);
    names.push_back("");  // an empty frame is '_'
    stint_test::temp_dir dir;
    stint::profiler<stacks> prof;
    prof.start();
    for (const std::string& name : names) {
        stint::record_function rf(name);
        spin_for(std::chrono::microseconds(3));  // rows that round to 0 µs are left out
    }
    prof.stop();
    REQUIRE(prof.stats().dropped == 0);
    prof.export_stacks(dir.file("names.stacks"), "self_cpu_time_total", stint::stack_frames::names);
    const std::string text = stint_test::read_file(dir.file("names.stacks"));
    REQUIRE_FALSE(text.empty());
    REQUIRE(text.back() == '\n');
    std::multiset<std::string> paths;
    std::istringstream lines(text);
    for (std::string line; std::getline(lines, line, '\n');) {
        CAPTURE(line);
        const std::size_t space = line.rfind(' ');
        REQUIRE(space != std::string::npos);
        CHECK(line.find_first_not_of("0123456789", space + 1) == std::string::npos);
        CHECK(space + 1 < line.size());
        const std::string path = line.substr(0, space);
        CHECK_FALSE(path.empty());
        for (char c : path) {
            const auto u = static_cast<unsigned char>(c);
            CHECK((u > 0x20 && u != 0x7F));
        }
        paths.insert(path);
    }
    // Each event is one line: a top-level name is its whole path, with space, ';' and every ASCII
    // control character as '_', other bytes as they are.
    for (const std::string& name : names) {
        std::string frame = name.empty() ? "_" : name;
        for (char& c : frame) {
            const auto u = static_cast<unsigned char>(c);
            if (u <= 0x20 || u == 0x7F || c == ';') c = '_';
        }
        CAPTURE(name);
        CHECK(paths.count(frame) >= 1);
    }
    CHECK(paths.count("a_b_c_d_e_f_g_h_i_j_k_l_m") == 1);
    std::size_t program_lines = 0;
    for (const std::string& path : paths) program_lines += path.starts_with("[stint]") ? 0 : 1;
    CHECK(program_lines == names.size());
}
