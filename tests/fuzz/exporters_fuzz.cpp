// libFuzzer target: arbitrary bytes as scope names, a thread name, metadata, metadata JSON text and
// op input values, through a real session and the exporters. Traps when a chrome trace does not
// parse as strict JSON (nlohmann-json: RFC 8259, UTF-8 checked), repeats a top-level key, or reads
// back other than stint documents; when collapsed stacks break their line format; or when a count
// differs; or when the trace reader (analysis/trace_reader.hpp) fails on the exporter's trace, counts
// other events than it holds, or refuses the raw input other than with a trace_read_error. Built by
// `-Dfuzz=true` with clang; run by tools/fuzz.sh.
//
// Input: fields separated by "|#|" (a missing field is empty):
//   0 flags (first byte: bit 0 gzip trace, bit 1 concrete inputs off, bit 2 nest the op in the
//     scopes, bits 4-5 repeats - 1)   1 STINT_SCOPE_NAMED name   2 record_function name
//   3 record_function args (absent: no args)   4 thread name   5 metadata key   6 metadata value
//   7 add_metadata_json text   8.. op string inputs (up to 4)
#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <unistd.h>
#include <zlib.h>

#include <nlohmann/json.hpp>

#include "stint/stint.hpp"

namespace {

using json = nlohmann::json;
using stacks = stint::config<stint::with_stack<>>;
using text_ops = stint::config<stint::record_shapes_limits<8, 4, 4096>>;

constexpr std::string_view separator = "|#|";
constexpr std::size_t max_name = 4096;  // stint::detail::max_runtime_name_bytes

[[noreturn]] void fail(const char* what) {
    std::fprintf(stderr, "exporters_fuzz: %s\n", what);
    __builtin_trap();
}

void require(bool ok, const char* what) {
    if (!ok) fail(what);
}

std::vector<std::string_view> split(std::string_view data) {
    std::vector<std::string_view> fields;
    for (;;) {
        const std::size_t at = data.find(separator);
        fields.push_back(data.substr(0, at));
        if (at == std::string_view::npos) return fields;
        data.remove_prefix(at + separator.size());
    }
}

std::string_view field(const std::vector<std::string_view>& fields, std::size_t i) {
    return i < fields.size() ? fields[i] : std::string_view();
}

// Whether nlohmann-json takes `s` as UTF-8 text (it throws on invalid UTF-8 when dumping).
bool valid_utf8(std::string_view s) {
    try {
        (void)json(std::string(s)).dump();
        return true;
    } catch (const json::type_error&) {
        return false;
    }
}

// What a JSON reader must read back for `s`: `s` itself when valid UTF-8; else a text that differs,
// with U+FFFD in it and no invalid UTF-8 (nullopt: "check that").
std::optional<std::string> expected_text(std::string_view s) {
    if (valid_utf8(s)) return std::string(s);
    return std::nullopt;
}

void check_text(const json& value, std::string_view raw, const char* what) {
    require(value.is_string(), what);
    const std::string& got = value.get_ref<const std::string&>();
    if (std::optional<std::string> want = expected_text(raw)) {
        require(got == *want, what);
    } else {
        require(got != raw && got.find("\xEF\xBF\xBD") != std::string::npos, what);
    }
}

std::string read_file(const std::string& path, bool gzip) {
    std::string text;
    if (gzip) {
        gzFile file = gzopen(path.c_str(), "rb");
        require(file != nullptr, "cannot open the gzip trace");
        char block[65536];
        int n = 0;
        while ((n = gzread(file, block, sizeof(block))) > 0) text.append(block, static_cast<std::size_t>(n));
        gzclose(file);
        return text;
    }
    std::FILE* file = std::fopen(path.c_str(), "rb");
    require(file != nullptr, "cannot open the trace");
    char block[65536];
    std::size_t n = 0;
    while ((n = std::fread(block, 1, sizeof(block), file)) > 0) text.append(block, n);
    std::fclose(file);
    return text;
}

// Parses strictly; traps on a syntax error or a repeated top-level key.
json parse_strict(const std::string& text) {
    // nlohmann-json ends its input at a NUL byte: one would hide whatever follows it.
    require(text.find('\0') == std::string::npos, "the chrome trace holds a NUL byte");
    std::set<std::string> keys;
    bool repeated = false;
    json out;
    try {
        out = json::parse(text, [&](int depth, json::parse_event_t event, json& parsed) {
            if (depth == 1 && event == json::parse_event_t::key) {
                repeated |= !keys.insert(parsed.get<std::string>()).second;
            }
            return true;
        });
    } catch (const json::exception& e) {
        std::fprintf(stderr, "exporters_fuzz: %s\n", e.what());
        fail("the chrome trace is not valid JSON");
    }
    require(!repeated, "the chrome trace repeats a top-level key");
    return out;
}

// Deepest nesting of '[' / '{' outside strings, to tell stint's 512 limit from invalid text.
std::size_t nesting(std::string_view text) {
    std::size_t depth = 0, deepest = 0;
    bool in_string = false;
    for (std::size_t i = 0; i < text.size(); ++i) {
        const char c = text[i];
        if (in_string) {
            if (c == '\\') ++i;
            else if (c == '"') in_string = false;
        } else if (c == '"') {
            in_string = true;
        } else if (c == '[' || c == '{') {
            deepest = std::max(deepest, ++depth);
        } else if ((c == ']' || c == '}') && depth > 0) {
            --depth;
        }
    }
    return deepest;
}

// Collapsed stacks: every line "frames count\n", no space, control character or empty frame list.
void check_stacks(const std::string& text, std::size_t lines_expected) {
    std::size_t lines = 0;
    std::size_t start = 0;
    while (start < text.size()) {
        const std::size_t end = text.find('\n', start);
        require(end != std::string::npos, "collapsed stacks: the last line has no newline");
        const std::string_view line(text.data() + start, end - start);
        const std::size_t space = line.rfind(' ');
        require(space != std::string_view::npos && space > 0 && space + 1 < line.size(),
                "collapsed stacks: a line is not 'frames count'");
        for (std::size_t i = space + 1; i < line.size(); ++i) {
            require(line[i] >= '0' && line[i] <= '9', "collapsed stacks: the count is not an integer");
        }
        for (std::size_t i = 0; i < space; ++i) {
            const auto u = static_cast<unsigned char>(line[i]);
            require(u > 0x20 && u != 0x7F, "collapsed stacks: a frame holds a space or a control character");
        }
        const std::string_view frames = line.substr(0, space);
        require(frames.front() != ';' && frames.back() != ';' && frames.find(";;") == std::string_view::npos,
                "collapsed stacks: an empty frame");
        ++lines;
        start = end + 1;
    }
    require(lines == lines_expected, "collapsed stacks: lines differ from the events over 1 us");
}

struct string_sink {
    std::string text;
    void write(std::string_view bytes) { text.append(bytes); }
};

void spin_one_microsecond() {
    const auto until = std::chrono::steady_clock::now() + std::chrono::nanoseconds(1500);
    while (std::chrono::steady_clock::now() < until) {
    }
}

const std::string& trace_path(bool gzip) {
    static const std::string dir = [] {
        const std::filesystem::path base = std::filesystem::exists("/dev/shm") ? "/dev/shm" : "/tmp";
        return (base / ("stint_fuzz_" + std::to_string(::getpid()))).string();
    }();
    static const std::string plain = [] {
        std::filesystem::create_directories(dir);
        return dir + "/t.json";
    }();
    static const std::string gz = dir + "/t.json.gz";
    return gzip ? gz : plain;
}

void run(std::string_view data) {
    const std::vector<std::string_view> fields = split(data);
    const std::string_view flags_field = field(fields, 0);
    const unsigned flags = flags_field.empty() ? 0u : static_cast<unsigned char>(flags_field[0]);
    const bool gzip = (flags & 1u) != 0;
    const bool concrete = (flags & 2u) == 0;
    const bool nest_op = (flags & 4u) != 0;
    const int repeats = static_cast<int>((flags >> 4) & 3u) + 1;
    const std::string scope_name(field(fields, 1));
    const std::string rf_name(field(fields, 2));
    const bool has_args = fields.size() > 3;
    const std::string args(field(fields, 3));
    const std::string thread_name(field(fields, 4));
    const std::string key(field(fields, 5));
    const std::string value(field(fields, 6));
    const bool has_json = fields.size() > 7;
    const std::string json_text(field(fields, 7));
    std::vector<std::string> inputs;
    for (std::size_t i = 8; i < fields.size() && inputs.size() < 4; ++i) inputs.emplace_back(fields[i]);
    inputs.resize(4);

    stint::set_record_concrete_inputs(concrete);
    stint::profiler<stacks> prof;
    bool key_refused = false;
    try {
        prof.add_metadata(key, value);
    } catch (const std::invalid_argument& e) {
        require(stint::detail::is_reserved_trace_key(key), "add_metadata refused a key the format does not use");
        require(std::string_view(e.what()).starts_with("stint: add_metadata(\""), "add_metadata: wrong message");
        key_refused = true;
    }
    bool json_refused = false;
    if (has_json) {
        try {
            prof.add_metadata_json("fuzz_json", json_text);
        } catch (const std::invalid_argument& e) {
            require(std::string_view(e.what()).starts_with(
                        "stint: add_metadata_json(\"fuzz_json\"): the value is not valid JSON: "),
                    "add_metadata_json: wrong message");
            json_refused = true;
        }
        // Differential: stint's validator against nlohmann-json's parser, which has no depth limit,
        // skips a leading byte-order mark (RFC 8259 lets a parser ignore it; stint refuses it) and
        // takes a NUL byte for the end of the input (stint refuses any NUL outside a string's escapes).
        const bool nlohmann_accepts = json::accept(json_text);
        if (json_refused) {
            require(!nlohmann_accepts || nesting(json_text) > 512 || json_text.starts_with("\xEF\xBB\xBF") ||
                        json_text.find('\0') != std::string::npos,
                    "add_metadata_json refused valid JSON");
        } else {
            require(nlohmann_accepts, "add_metadata_json accepted invalid JSON");
        }
    }
    stint::set_thread_name(thread_name);
    prof.start();
    for (int r = 0; r < repeats; ++r) {
        STINT_SCOPE_NAMED(scope_name);
        std::optional<stint::record_function> rf;
        if (has_args) rf.emplace(rf_name, args);
        else rf.emplace(rf_name);
        if (nest_op) {
            STINT_OP(text_ops, "fuzz::op", inputs[0], inputs[1], inputs[2], inputs[3], inputs);
            spin_one_microsecond();
        } else {
            rf.reset();
            STINT_OP(text_ops, "fuzz::op", inputs[0], inputs[1], inputs[2], inputs[3], inputs);
            spin_one_microsecond();
        }
    }
    prof.stop();
    stint::set_record_concrete_inputs(true);
    const stint::profiler_stats& stats = prof.stats();
    require(stats.dropped == 0, "records were dropped");
    const std::uint64_t cut = static_cast<std::uint64_t>(repeats) *
                              ((scope_name.size() > max_name ? 1u : 0u) + (rf_name.size() > max_name ? 1u : 0u));
    require(stats.truncated_names == cut, "truncated_names differs from the names over 4096 bytes");

    // The chrome trace.
    const std::string& path = trace_path(gzip);
    prof.export_chrome_trace(path);
    const json trace = parse_strict(read_file(path, gzip));
    // The trace reader (analysis/trace_reader.hpp) reads what the exporter wrote: every complete event.
    std::uint64_t complete = 0;
    for (const json& e : trace.at("traceEvents")) {
        if (e.value("ph", "") == "X" && e.contains("ts") && e.contains("dur")) ++complete;
    }
    const stint::trace_profile read_back = stint::trace_profile::from_file(path);
    require(read_back.read_stats().events + read_back.read_stats().missing_duration == complete,
            "the trace reader counts other complete events than the trace holds");
    const json& block = trace.at("stint");
    require(block.at("recorded") == stats.recorded, "stint.recorded differs from stats()");
    require(block.at("dropped") == 0, "stint.dropped is not 0");
    require(block.at("truncated_names") == cut, "stint.truncated_names differs");
    if (!key_refused && key != "fuzz_json") {
        const std::optional<std::string> key_read = expected_text(key);
        if (key_read && *key_read != "fuzz_json") check_text(trace.at(*key_read), value, "metadata value");
    }
    if (has_json && !json_refused) require(trace.at("fuzz_json") == json::parse(json_text), "metadata JSON differs");
    bool thread_seen = false;
    for (const json& t : block.at("threads")) {
        if (t.at("tid") == static_cast<std::uint64_t>(::gettid())) {
            if (!thread_name.empty()) check_text(t.at("name"), thread_name, "thread name");  // else the OS name
            thread_seen = true;
        }
    }
    require(thread_seen, "the recording thread is missing from the thread list");
    std::size_t annotations = 0, ops = 0;
    for (const json& e : trace.at("traceEvents")) {
        if (e.at("ph") == "M" || e.at("cat") == "overhead") continue;
        const std::string& name = e.at("name").get_ref<const std::string&>();
        const json& a = e.at("args");
        if (e.at("cat") == "cpu_op") {
            require(name == "fuzz::op", "op name");
            require(a.at("Input type").size() == 5, "op: Input type has not 5 entries");
            if (!concrete) {
                require(!a.contains("Concrete Inputs"), "op: Concrete Inputs while concrete inputs are off");
            } else if (!a.contains("Inputs truncated")) {
                for (std::size_t i = 0; i < 4; ++i) check_text(a.at("Concrete Inputs").at(i), inputs[i], "op input");
            }
            ++ops;
            continue;
        }
        ++annotations;
        // record_function with args is the annotation with an input; the others are told apart by
        // name only where the names differ.
        if (has_args && a.contains("Input type")) {
            check_text(e.at("name"), std::string_view(rf_name).substr(0, max_name), "record_function name");
            if (concrete) {
                check_text(a.at("Concrete Inputs").at(0), std::string_view(args).substr(0, max_name),
                           "record_function args");
            }
            continue;
        }
        const std::string_view raw_scope = std::string_view(scope_name).substr(0, max_name);
        const std::string_view raw_rf = std::string_view(rf_name).substr(0, max_name);
        const std::optional<std::string> a_name = expected_text(raw_scope), b_name = expected_text(raw_rf);
        const bool is_scope = a_name ? name == *a_name : name != raw_scope;
        const bool is_rf = !has_args && (b_name ? name == *b_name : name != raw_rf);
        require(is_scope || is_rf, "an annotation's name is neither field");
    }
    require(ops == static_cast<std::size_t>(repeats), "op events differ from the ops run");
    require(annotations == 2 * static_cast<std::size_t>(repeats), "annotations differ from those run");

    // Collapsed stacks, names and locations, into memory.
    for (stint::stack_frames frames : {stint::stack_frames::names, stint::stack_frames::locations}) {
        string_sink sink;
        stint::detail::write_collapsed_stacks(sink, prof.events(), "self_cpu_time_total", frames);
        std::size_t expected = 0;
        for (const stint::event& e : prof.events()) {
            if (frames == stint::stack_frames::locations && prof.events().stack(e).empty()) continue;
            expected += e.self_cpu_time_total() >= 1.0 ? 1 : 0;
        }
        check_stacks(sink.text, expected);
    }
    // The table: every name through the display rules and the column layout.
    const std::string table = prof.key_averages().table({.row_limit = -1});
    require(table.find("Self CPU time total: ") != std::string::npos, "table footer");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    // The raw bytes as a trace: the reader must read them or refuse them with a trace_read_error.
    try {
        (void)stint::trace_profile::from_text(std::string_view(reinterpret_cast<const char*>(data), size));
    } catch (const stint::trace_read_error&) {
    }
    run(std::string_view(reinterpret_cast<const char*>(data), size));
    return 0;
}
