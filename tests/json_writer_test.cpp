#include "stint/export/json_validate.hpp"
#include "stint/export/json_writer.hpp"
#include "stint/export/output_file.hpp"

#include <doctest/doctest.h>

#include "child_process.hpp"
#include "reliability/size.hpp"
#include "test_util.hpp"
#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <limits>
#include <random>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include <csignal>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using stint::detail::json_writer;
using stint::detail::output_file;
using stint::detail::validate_json;

const std::string replacement = "\xEF\xBF\xBD";  // U+FFFD

std::string encode(std::string_view s) {
    json_writer out;
    out.string(s);
    return std::string(out.buffered());
}

// Encodes, checks the text is valid JSON (both validators), and returns the decoded string.
std::string round_trip(std::string_view s) {
    const std::string text = encode(s);
    const auto problem = validate_json(text);
    INFO("validate_json: " << problem.value_or("ok"));
    REQUIRE_FALSE(problem.has_value());
    return json::parse(text).get<std::string>();
}

template <class Write>
std::string written(Write write) {
    json_writer out;
    write(out);
    return std::string(out.buffered());
}

using stint_test::entries;
using stint_test::temp_dir;
// The whole file, failing loudly when it cannot be read; gzip decompressed (a member cut short fails).
std::string read_plain(const std::string& path) { return stint_test::read_file(path); }
using stint_test::read_gzip;

// output_file's temporary: a short name of its own, whatever the final name.
bool is_temporary_of(const std::string& name, const std::string& /*final_name*/) {
    return name.size() == 13 && name.starts_with(".stint-");
}

using stint_test::in_child;

// Every gzip member of `bytes`, each inflated on its own (windowBits 15 + 16, inflateReset between
// members), so that the test reads the member boundaries rather than trusting gzread to join them.
struct gzip_contents {
    std::string text;
    std::size_t members = 0;
    bool valid = true;
};
gzip_contents inflate_members(const std::string& bytes) {
    gzip_contents result;
    z_stream stream{};
    REQUIRE(inflateInit2(&stream, 15 + 16) == Z_OK);
    std::vector<unsigned char> in(bytes.begin(), bytes.end());
    stream.next_in = in.data();
    stream.avail_in = static_cast<uInt>(in.size());
    std::vector<unsigned char> out(1 << 16);
    while (stream.avail_in > 0) {
        stream.next_out = out.data();
        stream.avail_out = static_cast<uInt>(out.size());
        const int rc = inflate(&stream, Z_NO_FLUSH);
        result.text.append(reinterpret_cast<const char*>(out.data()), out.size() - stream.avail_out);
        if (rc == Z_STREAM_END) {
            ++result.members;
            REQUIRE(inflateReset(&stream) == Z_OK);
        } else if (rc != Z_OK) {
            result.valid = false;
            break;
        }
    }
    // A member cut short leaves inflate mid-stream: no Z_STREAM_END for it.
    if (stream.total_in != 0) result.valid = false;
    inflateEnd(&stream);
    return result;
}

// Text that deflates as a trace does (repeated keys, changing numbers), `size` bytes long.
std::string trace_like_text(std::size_t size) {
    std::string text;
    text.reserve(size + 100);
    for (std::uint64_t i = 0; text.size() < size; ++i) {
        text += R"({"ph":"X","cat":"cpu_op","name":"aten::linear","pid":1,"tid":)" + std::to_string(i % 7) +
                R"(,"ts":)" + std::to_string(1000000 + i * 37) + "},\n";
    }
    text.resize(size);
    return text;
}

using stint::detail::gzip_members;

using stint_test::write_error_text;

}  // namespace

// ---------------------------------------------------------------------------------------------
// Strings

TEST_CASE("string quotes and escapes quotes, backslashes and the short control escapes") {
    CHECK(encode("") == R"("")");
    CHECK(encode("aten::add") == R"("aten::add")");
    CHECK(encode(R"(say "hi" \ bye)") == R"("say \"hi\" \\ bye")");
    CHECK(encode("a\nb\tc\rd\be\ff") == R"("a\nb\tc\rd\be\ff")");
    CHECK(encode("a/b") == R"("a/b")");
    CHECK(encode("\x7F") == "\"\x7F\"");  // DEL is allowed as is
    CHECK(round_trip(R"(C:\path\"x"	tab)") == R"(C:\path\"x"	tab)");
}

TEST_CASE("string escapes every control character 0 to 31 and decodes back to it") {
    CHECK(encode(std::string_view("\0", 1)) == R"("\u0000")");
    CHECK(encode("\x01") == R"("\u0001")");
    CHECK(encode("\x0B") == R"("\u000b")");
    CHECK(encode("\x1F") == R"("\u001f")");
    for (int c = 0; c < 32; ++c) {
        CAPTURE(c);
        const std::string original = "<" + std::string(1, static_cast<char>(c)) + ">";
        const std::string text = encode(original);
        CHECK(std::none_of(text.begin(), text.end(),
                           [](char b) { return static_cast<unsigned char>(b) < 0x20; }));
        CHECK(round_trip(original) == original);
    }
}

TEST_CASE("string keeps NUL bytes inside a string_view") {
    const std::string_view with_nuls("a\0b\0", 4);
    CHECK(encode(with_nuls) == R"("a\u0000b\u0000")");
    CHECK(round_trip(with_nuls) == std::string(with_nuls));
}

TEST_CASE("string passes valid multibyte UTF-8 through unchanged") {
    const std::vector<std::string> valid = {
        "\xC3\xA9",              // é
        "\xE4\xB8\xAD",          // 中
        "\xF0\x9F\x98\x80",      // 😀
        "\xC2\x80",              // U+0080, smallest two-byte
        "\xDF\xBF",              // U+07FF
        "\xE0\xA0\x80",          // U+0800, smallest three-byte
        "\xED\x9F\xBF",          // U+D7FF, just below the surrogates
        "\xEE\x80\x80",          // U+E000, just above them
        "\xEF\xBF\xBD",          // U+FFFD itself
        "\xEF\xBF\xBF",          // U+FFFF
        "\xF0\x90\x80\x80",      // U+10000, smallest four-byte
        "\xF4\x8F\xBF\xBF",      // U+10FFFF, the last code point
        "caf\xC3\xA9 \xE4\xB8\xAD\xE6\x96\x87 \xF0\x9F\x98\x80!",
    };
    for (const auto& s : valid) {
        CAPTURE(s);
        CHECK(encode(s) == "\"" + s + "\"");
        CHECK(round_trip(s) == s);
    }
    CHECK(json::parse(encode("\xC3\xA9")) == json::parse(R"("\u00e9")"));
    CHECK(json::parse(encode("\xF0\x9F\x98\x80")) == json::parse(R"("\ud83d\ude00")"));
}

TEST_CASE("string replaces each maximal invalid UTF-8 subpart with U+FFFD and keeps the rest") {
    const std::string r = replacement;
    struct example {
        std::string input;
        std::string decoded;
    };
    const std::vector<example> examples = {
        {"\x80", r},                                          // stray continuation byte
        {"a\x80" "b", "a" + r + "b"},
        {"\x80\xBF", r + r},                                  // each stray byte is its own subpart
        {"\xC0\xAF", r + r},                                  // overlong '/': C0 never starts one
        {"\xC1\xBF", r + r},
        {"\xC0\x80", r + r},                                  // "modified UTF-8" NUL
        {"\xE0\x80\xAF", r + r + r},                          // overlong three-byte
        {"\xF0\x80\x80\x80", r + r + r + r},                  // overlong four-byte
        {"\xF0\x8F\xBF\xBF", r + r + r + r},
        {"\xED\xA0\x80", r + r + r},                          // high surrogate D800
        {"\xED\xB0\x80", r + r + r},                          // low surrogate DC00
        {"\xED\xBF\xBF", r + r + r},                          // DFFF
        {"\xED\xA0\xBD\xED\xB8\x80", r + r + r + r + r + r},  // CESU-8 pair for 😀
        {"\xF4\x90\x80\x80", r + r + r + r},                  // U+110000, beyond the last
        {"\xF5\x80\x80\x80", r + r + r + r},
        {"\xF8\x88\x80\x80\x80", r + r + r + r + r},          // old five-byte form
        {"\xFE", r},
        {"\xFF", r},
        {"\xFE\xFF", r + r},
        {"\xC3", r},                                          // truncated at the end
        {"\xE4\xB8", r},
        {"\xF0\x9F\x98", r},
        {"\xF4\x8F\xBF", r},
        {"\xE4\xB8x", r + "x"},                               // truncated by an ASCII byte
        {"\xF0\x9F\x98" "A", r + "A"},
        {"\xF0\x9F\x98\"", r + "\""},
        {"\xE4\xB8\xE4\xB8\xAD", r + "\xE4\xB8\xAD"},         // truncated by a valid sequence
        {"\xC3\xA9\xA9", "\xC3\xA9" + r},
        {"\xE4\xB8\xAD\xAD", "\xE4\xB8\xAD" + r},
        {"\xC3\xA9\xFF\xC3\xA9", "\xC3\xA9" + r + "\xC3\xA9"},
        {"\xE0\x80", r + r},
        {"\xF1\x80\x80\xE1\x80\xC2", r + r + r},
        // Unicode 15, table 3-8: 61 F1 80 80 E1 80 C2 62 80 63 80 BF 64.
        {"a\xF1\x80\x80\xE1\x80\xC2" "b\x80" "c\x80\xBF" "d",
         "a" + r + r + r + "b" + r + "c" + r + r + "d"},
        {std::string("\xC3\0", 2), r + std::string(1, '\0')},  // truncated by a NUL byte
    };
    for (const auto& e : examples) {
        CAPTURE(e.input);
        CHECK(round_trip(e.input) == e.decoded);
    }
    CHECK(encode("\xE4\xB8\n") == "\"" + r + "\\n\"");
}

TEST_CASE("string output is valid UTF-8 JSON for arbitrary bytes, and valid text survives") {
    std::mt19937 random(20240611);
    std::uniform_int_distribution<int> length(0, 24);
    std::uniform_int_distribution<int> byte(0, 255);
    std::uniform_int_distribution<int> high_byte(0x80, 0xFF);
    for (int i = 0; i < 5000; ++i) {
        std::string s(static_cast<std::size_t>(length(random)), '\0');
        // Half the strings are mostly non-ASCII, to hit multibyte edge cases often.
        for (auto& b : s) b = static_cast<char>(i % 2 == 0 ? byte(random) : high_byte(random));
        CAPTURE(s);
        const std::string decoded = round_trip(s);
        CHECK(round_trip(decoded) == decoded);
    }
}

TEST_CASE("string treats every byte value the same at every position of an 8-byte block") {
    for (int b = 0; b < 256; ++b) {
        const char c = static_cast<char>(b);
        const std::string expected = b < 0x80 ? std::string(1, c) : replacement;
        for (std::size_t at = 0; at < 16; ++at) {
            CAPTURE(b);
            CAPTURE(at);
            std::string s(17, 'x');
            s[at] = c;
            std::string decoded = std::string(17, 'x');
            decoded.replace(at, 1, expected);
            CHECK(round_trip(s) == decoded);
        }
    }
}

TEST_CASE("string handles long inputs, with sequences across its internal 16 KiB pieces") {
    const std::string emoji = "\xF0\x9F\x98\x80";
    for (std::size_t before = 16380; before <= 16384; ++before) {
        CAPTURE(before);
        const std::string valid = std::string(before, 'a') + emoji + "b";
        CHECK(round_trip(valid) == valid);
        const std::string truncated = std::string(before, 'a') + "\xF0\x9F\x98" + "b";
        CHECK(round_trip(truncated) == std::string(before, 'a') + replacement + "b");
    }

    const std::string controls(40000, '\x01');  // the worst case: six bytes out per byte in
    CHECK(encode(controls).size() == 40000 * 6 + 2);
    CHECK(round_trip(controls) == controls);

    const std::vector<std::string> parts = {"a",        "bcdefghij", "\"",           "\\",
                                            "\n",       "\x1F",      "\xC3\xA9",     "\xE4\xB8\xAD",
                                            emoji,      "\x7F",      std::string(1, '\0'),
                                            std::string(40, 'z')};
    std::mt19937 random(3);
    std::string mixed;
    while (mixed.size() < 200000) mixed += parts[random() % parts.size()];
    CHECK(round_trip(mixed) == mixed);
}

TEST_CASE("append_json_string appends after what the buffer already holds") {
    fmt::memory_buffer out;
    out.append(std::string_view("\"name\":"));
    stint::detail::append_json_string(out, "a\"b");
    CHECK(std::string_view(out.data(), out.size()) == R"("name":"a\"b")");
}

// ---------------------------------------------------------------------------------------------
// Numbers

TEST_CASE("number writes integers exactly, including the extremes") {
    const auto min = std::numeric_limits<std::int64_t>::min();
    const auto max = std::numeric_limits<std::int64_t>::max();
    const auto umax = std::numeric_limits<std::uint64_t>::max();
    CHECK(written([&](json_writer& w) { w.number(min); }) == "-9223372036854775808");
    CHECK(written([&](json_writer& w) { w.number(max); }) == "9223372036854775807");
    CHECK(written([&](json_writer& w) { w.number(umax); }) == "18446744073709551615");
    CHECK(written([](json_writer& w) { w.number(std::int64_t{0}); }) == "0");
    CHECK(written([](json_writer& w) { w.number(-1); }) == "-1");
    CHECK(written([](json_writer& w) { w.number(42u); }) == "42");
    CHECK(written([](json_writer& w) { w.number(static_cast<std::int8_t>(-128)); }) == "-128");
    CHECK(written([](json_writer& w) { w.number(static_cast<std::uint16_t>(65535)); }) == "65535");
    CHECK(written([](json_writer& w) { w.number(-5LL); }) == "-5");

    const json parsed = json::parse(written([&](json_writer& w) {
        w.raw("[");
        w.number(min);
        w.raw(",");
        w.number(umax);
        w.raw("]");
    }));
    CHECK(parsed[0].get<std::int64_t>() == min);
    CHECK(parsed[1].get<std::uint64_t>() == umax);
}

TEST_CASE("number writes finite doubles as the shortest text that reads back exactly") {
    CHECK(written([](json_writer& w) { w.number(0.1); }) == "0.1");
    CHECK(written([](json_writer& w) { w.number(1.0); }) == "1");
    CHECK(written([](json_writer& w) { w.number(-0.0); }) == "-0");
    CHECK(written([](json_writer& w) { w.number(1.5e300); }) == "1.5e+300");
    CHECK(written([](json_writer& w) { w.number(5e-324); }) == "5e-324");
    CHECK(written([](json_writer& w) { w.number(DBL_MAX); }) == "1.7976931348623157e+308");
    CHECK(written([](json_writer& w) { w.number(2.5e-5); }) == "2.5e-05");
    CHECK(written([](json_writer& w) { w.number(1.5f); }) == "1.5");

    std::mt19937_64 random(7);
    for (int i = 0; i < 2000; ++i) {
        std::uint64_t bits = random();
        double value = 0;
        std::memcpy(&value, &bits, sizeof value);
        if (!std::isfinite(value)) continue;
        const std::string text = written([&](json_writer& w) { w.number(value); });
        CAPTURE(text);
        REQUIRE_FALSE(validate_json(text).has_value());
        const double back = json::parse(text).get<double>();
        CHECK(std::memcmp(&back, &value, sizeof value) == 0);
    }
}

TEST_CASE("number writes NaN and infinities as the strings PyTorch's execution trace uses") {
    const double inf = std::numeric_limits<double>::infinity();
    const double nan = std::numeric_limits<double>::quiet_NaN();
    CHECK(written([&](json_writer& w) { w.number(nan); }) == R"("nan")");
    CHECK(written([&](json_writer& w) { w.number(-nan); }) == R"("nan")");
    CHECK(written([&](json_writer& w) { w.number(inf); }) == R"("inf")");
    CHECK(written([&](json_writer& w) { w.number(-inf); }) == R"("-inf")");
    const json parsed = json::parse(written([&](json_writer& w) {
        w.raw("[");
        w.number(nan);
        w.raw(",");
        w.number(-inf);
        w.raw("]");
    }));
    CHECK(parsed == json::array({"nan", "-inf"}));
}

TEST_CASE("boolean and null write the JSON literals") {
    CHECK(written([](json_writer& w) {
              w.boolean(true);
              w.raw(",");
              w.boolean(false);
              w.raw(",");
              w.null();
          }) == "true,false,null");
}

TEST_CASE("microseconds writes nanoseconds as microseconds with exactly three decimals") {
    const std::vector<std::pair<std::int64_t, std::string>> cases = {
        {1234567, "1234.567"},
        {5, "0.005"},
        {-1500, "-1.500"},
        {0, "0.000"},
        {999, "0.999"},
        {1000, "1.000"},
        {1001, "1.001"},
        {-5, "-0.005"},
        {-999, "-0.999"},
        {1000000000, "1000000.000"},
        {1700000000123456789, "1700000000123456.789"},
        {std::numeric_limits<std::int64_t>::max(), "9223372036854775.807"},
        {std::numeric_limits<std::int64_t>::min(), "-9223372036854775.808"},
    };
    for (const auto& c : cases) {
        CAPTURE(c.first);
        const std::string text = written([&](json_writer& w) { w.microseconds(c.first); });
        CHECK(text == c.second);
        CHECK_FALSE(validate_json(text).has_value());
        CHECK(json::parse(text).is_number_float());
    }
}

// ---------------------------------------------------------------------------------------------
// Buffering and sinks

namespace {
struct recording_sink {
    std::vector<std::size_t> sizes;
    std::string text;
    void write(std::string_view bytes) {
        sizes.push_back(bytes.size());
        text.append(bytes);
    }
};
}  // namespace

TEST_CASE("json_writer without a sink keeps all of its text in memory") {
    json_writer out;
    for (int i = 0; i < 100000; ++i) out.raw("ab");
    out.flush();
    CHECK(out.buffered().size() == 200000);
    CHECK(out.buffered().substr(0, 6) == "ababab");
}

TEST_CASE("json_writer hands its buffer to the sink each time it reaches 64 KiB") {
    recording_sink sink;
    json_writer out(sink);
    json_writer reference;
    const std::string name(100, 'n');
    for (int i = 0; i < 5000; ++i) {
        for (json_writer* w : {&out, &reference}) {
            w->raw(i == 0 ? "[" : ",");
            w->string(name);
            w->raw(",");
            w->microseconds(i * 1001);
        }
        REQUIRE(out.buffered().size() < json_writer::flush_threshold);
    }
    REQUIRE(sink.sizes.size() >= 8);
    for (const std::size_t size : sink.sizes) {
        CHECK(size >= json_writer::flush_threshold);
        CHECK(size < json_writer::flush_threshold + 200);  // at most one value past the mark
    }
    const std::size_t calls = sink.sizes.size();
    out.raw("]");
    out.flush();
    CHECK(sink.sizes.size() == calls + 1);
    CHECK(out.buffered().empty());
    out.flush();  // nothing buffered: the sink is not called
    CHECK(sink.sizes.size() == calls + 1);
    reference.raw("]");
    CHECK(sink.text == reference.buffered());
    CHECK(json::parse(sink.text).size() == 10000);
}

// ---------------------------------------------------------------------------------------------
// validate_json

TEST_CASE("validate_json accepts every RFC 8259 construct") {
    const std::vector<std::string> valid = {
        "0", "-0", "12", "-12.5", "1.5e10", "-1E-2", "1e+2", "0.0e0", "-0.0E+00",
        "true", "false", "null",
        R"("")", R"("a\"b\\c\/d\be\ff\ng\rh\ti")", R"("\u00e9\u4E2D\ud83d\ude00\u0000")",
        "\"caf\xC3\xA9 \xE4\xB8\xAD \xF0\x9F\x98\x80\"", "\"\x7F\"",
        "[]", "{}", " [ ] ", "\n\t\r 1 \n\t\r",
        "[1,2,3]", R"({"a":[1,{"b":null}],"c":"d","":{}})",
        R"({ "k" : [ true , false , null , -1 , "x" ] })",
        R"({"a":1,"a":2})",  // duplicate keys are allowed by RFC 8259
        // The edges of a double's range, and underflow to zero, which every reader takes.
        "1.7976931348623157e308", "-1.7976931348623157e+308", "1e-400", "-0.000001e-400",
        "0.0000000001e318", std::string(300, '1'), "4.9e-324",
    };
    for (const auto& text : valid) {
        CAPTURE(text);
        CHECK(validate_json(text) == std::nullopt);
        CHECK(json::accept(text));
    }
}

TEST_CASE("validate_json rejects malformed text with the reason and its offset") {
    struct example {
        std::string text;
        std::string reason;
    };
    const std::vector<example> invalid = {
        {"", "expected value at offset 0"},
        {"   ", "expected value at offset 3"},
        {"[1 2]", "expected ',' or ']' at offset 3"},
        {"[1,]", "expected value at offset 3"},
        {"[1", "expected ',' or ']' at offset 2"},
        {"[1,2]]", "expected end of input at offset 5"},
        {"1 2", "expected end of input at offset 2"},
        {R"(["a":1])", "expected ',' or ']' at offset 4"},
        {R"({"a" 1})", "expected ':' at offset 5"},
        {R"({"a":1,})", "expected string key at offset 7"},
        {"{a:1}", "expected string key at offset 1"},
        {R"({"a":1)", "expected ',' or '}' at offset 6"},
        {R"({"a":1}})", "expected end of input at offset 7"},
        {"01", "leading zero in number at offset 0"},
        {"[-01]", "leading zero in number at offset 1"},
        {"-", "invalid number at offset 0"},
        {"1.", "invalid number at offset 0"},
        {"1.e5", "invalid number at offset 0"},
        {"1e", "invalid number at offset 0"},
        {"1e+", "invalid number at offset 0"},
        {".5", "expected value at offset 0"},
        {"+1", "expected value at offset 0"},
        {"NaN", "expected value at offset 0"},
        {"-Infinity", "invalid number at offset 0"},
        {"tru", "invalid literal at offset 0"},
        {"nul", "invalid literal at offset 0"},
        {"[truex]", "expected ',' or ']' at offset 5"},
        {"True", "expected value at offset 0"},
        {"'a'", "expected value at offset 0"},
        {"// c\n1", "expected value at offset 0"},
        {R"("abc)", "unterminated string at offset 4"},
        {R"("a\)", "unterminated string at offset 3"},
        {R"("a\x")", "invalid escape at offset 2"},
        {R"("\u12G4")", "invalid \\u escape at offset 1"},
        {R"("\u12")", "invalid \\u escape at offset 1"},
        {R"("\uD800")", "unpaired surrogate at offset 1"},
        {R"("\uDC00")", "unpaired surrogate at offset 1"},
        {R"("\uD800\u0041")", "unpaired surrogate at offset 1"},
        {R"("\uD800\n")", "unpaired surrogate at offset 1"},
        {R"("\uD800\uD800")", "unpaired surrogate at offset 1"},
        {R"("\uD800\uDC0")", "invalid \\u escape at offset 7"},
        {"\"a\tb\"", "control character in string at offset 2"},
        {std::string("\"a\0\"", 4), "control character in string at offset 2"},
        {"\"\xC3\"", "invalid UTF-8 in string at offset 1"},
        {"\"ok\xED\xA0\x80\"", "invalid UTF-8 in string at offset 3"},
        {"\"\xC0\xAF\"", "invalid UTF-8 in string at offset 1"},
        {"\"\xF4\x90\x80\x80\"", "invalid UTF-8 in string at offset 1"},
        {"\"\x80\"", "invalid UTF-8 in string at offset 1"},
        {std::string("[\"a\"\0]", 6), "expected ',' or ']' at offset 4"},
        {"\xC3\xA9", "expected value at offset 0"},
        // Past the largest double: Python reads inf, nlohmann-json refuses; stint refuses.
        {"1e400", "number out of range of a double at offset 0"},
        {"[1, -1.5e+222222222222222]", "number out of range of a double at offset 4"},
        {"1.8e308", "number out of range of a double at offset 0"},
        {"100000000000000000000e300", "number out of range of a double at offset 0"},
        {"0.00001e314", "number out of range of a double at offset 0"},
        {"1" + std::string(400, '0'), "number out of range of a double at offset 0"},
    };
    for (const auto& e : invalid) {
        CAPTURE(e.text);
        CHECK(validate_json(e.text) == e.reason);
        CHECK_FALSE(json::accept(e.text));
    }
    // nlohmann-json skips a byte order mark; RFC 8259 text must not start with one.
    CHECK(validate_json("\xEF\xBB\xBF{}") == "expected value at offset 0");
}

TEST_CASE("validate_json allows nesting 512 deep and rejects 513") {
    const auto nested_arrays = [](int depth) {
        return std::string(static_cast<std::size_t>(depth), '[') +
               std::string(static_cast<std::size_t>(depth), ']');
    };
    CHECK(validate_json(nested_arrays(512)) == std::nullopt);
    CHECK(validate_json(nested_arrays(513)) == "nesting deeper than 512 at offset 512");
    CHECK(validate_json(nested_arrays(100000)) == "nesting deeper than 512 at offset 512");

    std::string objects;
    for (int i = 0; i < 256; ++i) objects += R"({"k":[)";
    objects += "1";
    for (int i = 0; i < 256; ++i) objects += "]}";
    CHECK(validate_json(objects) == std::nullopt);
    const std::string deeper = "[" + objects + "]";
    // The 513th container is the '[' of the 256th {"k":[ group: 1 + 255 * 6 + 5.
    CHECK(validate_json(deeper) == "nesting deeper than 512 at offset 1536");
}

TEST_CASE("validate_json agrees with nlohmann-json on mutated documents") {
    const std::vector<std::string> seeds = {
        R"({"traceEvents":[{"ph":"X","name":"aten::add","ts":1.5,"dur":2,"args":{"a":[1,-2e3,true]}}]})",
        R"(["\u00e9\ud83d\ude00","x\ny",null,false,0.25,{"":[]}])",
        "{\"k\":\"caf\xC3\xA9\xE4\xB8\xAD\"}",
    };
    const std::string alphabet = "{}[]\",:\\/-+.eE0123456789 \ttrufalsn\x80\xC3\xED\xF0\xBF";
    std::mt19937 random(99);
    int checked = 0;
    for (int i = 0; i < 20000; ++i) {
        std::string text = seeds[static_cast<std::size_t>(i) % seeds.size()];
        const int edits = 1 + static_cast<int>(random() % 3);
        for (int e = 0; e < edits && !text.empty(); ++e) {
            const std::size_t at = random() % text.size();
            switch (random() % 3) {
                case 0: text.erase(at, 1); break;
                case 1: text.insert(at, 1, alphabet[random() % alphabet.size()]); break;
                default: text[at] = alphabet[random() % alphabet.size()]; break;
            }
        }
        if (text.starts_with("\xEF\xBB\xBF")) continue;
        CAPTURE(text);
        CHECK(!validate_json(text).has_value() == json::accept(text));
        ++checked;
    }
    CHECK(checked > 19000);
}

// ---------------------------------------------------------------------------------------------
// output_file

TEST_CASE("output_file renames its temporary into place only at commit") {
    temp_dir dir;
    const std::string path = dir / "t.json";
    output_file out(path);
    CHECK(out.path() == path);
    out.write("{\"a\":");
    out.write("1}");
    const auto during = entries(dir.path());
    REQUIRE(during.size() == 1);
    CHECK(is_temporary_of(during[0], "t.json"));
    CHECK_FALSE(fs::exists(path));
    out.commit();
    CHECK(entries(dir.path()) == std::vector<std::string>{"t.json"});
    CHECK(read_plain(path) == "{\"a\":1}");
}

TEST_CASE("output_file gives the trace the permissions the umask allows") {
    temp_dir dir;
    const mode_t saved = ::umask(022);
    {
        output_file out(dir / "a.json");
        out.commit();
    }
    ::umask(077);
    {
        output_file out(dir / "b.json");
        out.commit();
    }
    ::umask(saved);
    struct stat a {};
    struct stat b {};
    REQUIRE(::stat((dir / "a.json").c_str(), &a) == 0);
    REQUIRE(::stat((dir / "b.json").c_str(), &b) == 0);
    CHECK((a.st_mode & 0777) == 0644);
    CHECK((b.st_mode & 0777) == 0600);
}

TEST_CASE("output_file compresses a .gz path with gzip") {
    temp_dir dir;
    const std::string text = R"({"traceEvents":[{"name":"x","ts":1.000}]})";
    for (const int level : {0, 1, 6, 9}) {
        CAPTURE(level);
        const std::string path = dir / ("t" + std::to_string(level) + ".json.gz");
        output_file out(path, level);
        out.write(text);
        out.write(text);
        out.commit();
        const std::string bytes = read_plain(path);
        REQUIRE(bytes.size() > 2);
        CHECK(static_cast<unsigned char>(bytes[0]) == 0x1F);
        CHECK(static_cast<unsigned char>(bytes[1]) == 0x8B);
        CHECK(read_gzip(path) == text + text);
    }
    CHECK(entries(dir.path()).size() == 4);
}

TEST_CASE("output_file writes an empty gzip stream when nothing was written") {
    temp_dir dir;
    const std::string path = dir / "empty.json.gz";
    output_file out(path);
    out.commit();
    CHECK(fs::file_size(path) == 20);  // 10-byte header, empty deflate block, 8-byte trailer
    CHECK(read_gzip(path).empty());
}

TEST_CASE("output_file writes a .gz of many blocks as gzip members that decompress to the bytes written") {
    temp_dir dir;
    const std::string path = dir / "big.json.gz";
    const std::string text = trace_like_text(5 * gzip_members::block_size + 12345);
    output_file out(path);
    // Pieces of every size: small ones, one that fills a block exactly, one larger than two blocks.
    const std::size_t sizes[] = {1, 100, 65536, gzip_members::block_size, 2 * gzip_members::block_size + 7};
    std::size_t at = 0;
    for (std::size_t i = 0; at < text.size(); ++i) {
        const std::size_t piece = std::min(sizes[i % std::size(sizes)], text.size() - at);
        out.write(std::string_view(text).substr(at, piece));
        at += piece;
    }
    out.commit();
    const gzip_contents read = inflate_members(read_plain(path));
    CHECK(read.valid);
    CHECK(read.members == 6);  // five full blocks and the rest
    CHECK(read.text == text);
    CHECK(read_gzip(path) == text);  // gzread joins the members, as gzip -d and zcat do
    CHECK(entries(dir.path()) == std::vector<std::string>{"big.json.gz"});
}

TEST_CASE("output_file writes a .gz under one block as one gzip member, starting no thread") {
    const std::string text = trace_like_text(gzip_members::block_size - 1);
    std::string bytes;
    gzip_members gzip(1);
    const auto emit = [&](const unsigned char* data, std::size_t size) {
        bytes.append(reinterpret_cast<const char*>(data), size);
    };
    CHECK(gzip.write(text, emit) == 0);
    CHECK(gzip.workers() == 0);
    CHECK(bytes.empty());
    CHECK(gzip.finish(emit) == 0);
    const gzip_contents read = inflate_members(bytes);
    CHECK(read.valid);
    CHECK(read.members == 1);
    CHECK(read.text == text);

    SUBCASE("through output_file") {
        temp_dir dir;
        output_file out(dir / "small.json.gz");
        out.write(text);
        out.commit();
        CHECK(read_gzip(dir / "small.json.gz") == text);
    }
}

TEST_CASE("a paused gzip emits its full blocks, lets its threads go, and starts them again on the next block") {
    const std::string first = trace_like_text(2 * gzip_members::block_size + 1000);
    const std::string second = trace_like_text(3 * gzip_members::block_size);
    std::string bytes;
    gzip_members gzip(1);
    const auto emit = [&](const unsigned char* data, std::size_t size) {
        bytes.append(reinterpret_cast<const char*>(data), size);
    };
    CHECK(gzip.write(first, emit) == 0);
    CHECK(gzip.workers() >= 1);
    CHECK(gzip.pause(emit) == 0);
    CHECK(gzip.workers() == 0);
    // The two full blocks are out; the 1000 bytes after them wait for more.
    const gzip_contents paused = inflate_members(bytes);
    CHECK(paused.valid);
    CHECK(paused.members == 2);
    CHECK(paused.text == first.substr(0, 2 * gzip_members::block_size));
    CHECK(gzip.pause(emit) == 0);  // again, with nothing to do
    CHECK(gzip.write(second, emit) == 0);
    CHECK(gzip.workers() >= 1);
    CHECK(gzip.finish(emit) == 0);
    CHECK(gzip.workers() == 0);
    const gzip_contents read = inflate_members(bytes);
    CHECK(read.valid);
    CHECK(read.text == first + second);

    SUBCASE("output_file::idle, then more and commit") {
        temp_dir dir;
        output_file out(dir / "bursts.json.gz");
        out.write(first);
        out.idle();
        out.write(second);
        out.commit();
        CHECK(read_gzip(dir / "bursts.json.gz") == first + second);
    }
}

constexpr std::string_view failing_block_marker = "#fail this block#";

// Deflates as zlib does, except the block that begins with the marker, which fails as a corrupt
// stream would. (Known by its bytes, not by the order of calls: blocks are compressed in parallel.)
int deflate_failing_marked(z_streamp stream, int flush) {
    const bool marked = stream->avail_in >= failing_block_marker.size() &&
                        std::memcmp(stream->next_in, failing_block_marker.data(), failing_block_marker.size()) == 0;
    return marked ? Z_STREAM_ERROR : deflate(stream, flush);
}

TEST_CASE("a gzip block that fails on a worker fails the next write or the finish, in order") {
    std::string text = trace_like_text(12 * gzip_members::block_size);
    text.replace(3 * gzip_members::block_size, failing_block_marker.size(), failing_block_marker);  // the fourth
    std::size_t emitted = 0;
    int error = 0;
    {
        gzip_members gzip(1, &deflate_failing_marked);
        const auto emit = [&](const unsigned char*, std::size_t) { ++emitted; };
        for (std::size_t at = 0; at < text.size() && error == 0; at += 65536) {
            error = gzip.write(std::string_view(text).substr(at, 65536), emit);
        }
        if (error == 0) error = gzip.finish(emit);
        CHECK(gzip.workers() >= 1);  // compressed on threads, at least partly
        CHECK(gzip.write("more", emit) == EIO);  // and stays failed
    }  // joins the workers: the test ends, no deadlock
    CHECK(error == EIO);
    CHECK(emitted <= 3);  // only the members before the failed one, in order
}

TEST_CASE("gzip members in a child forked while workers run fail the child's writes and never wait") {
    const std::string text = trace_like_text(3 * gzip_members::block_size + 1);
    std::string bytes;
    gzip_members gzip(1);
    const auto emit = [&](const unsigned char* data, std::size_t size) {
        bytes.append(reinterpret_cast<const char*>(data), size);
    };
    REQUIRE(gzip.write(text, emit) == 0);
    REQUIRE(gzip.workers() >= 1);
    const std::string result = in_child([&]() -> std::string {
        if (const int error = gzip.write("x", emit); error != EIO) return "write gave " + std::to_string(error);
        if (const int error = gzip.finish(emit); error != EIO) return "finish gave " + std::to_string(error);
        gzip.stop();  // the parent's workers are not in this process: nothing to join
        return "ok";
    });
    CHECK(result == "ok");
    REQUIRE(gzip.finish(emit) == 0);  // the parent's workers went on
    CHECK(inflate_members(bytes).text == text);
}

TEST_CASE("output_file replaces an existing file only at commit") {
    temp_dir dir;
    const std::string path = dir / "t.json";
    std::ofstream(path) << "old contents";
    output_file out(path);
    out.write("new");
    CHECK(read_plain(path) == "old contents");
    out.commit();
    CHECK(read_plain(path) == "new");
    CHECK(entries(dir.path()) == std::vector<std::string>{"t.json"});
}

TEST_CASE("output_file destroyed without commit leaves no file behind") {
    temp_dir dir;
    for (const std::string name : {"t.json", "t.json.gz"}) {
        CAPTURE(name);
        {
            output_file out(dir / name);
            // Three blocks and a bit: gzip workers are busy when the file is dropped.
            out.write(trace_like_text(3 * gzip_members::block_size + 1));
            REQUIRE(entries(dir.path()).size() == 1);
            CHECK(is_temporary_of(entries(dir.path())[0], name));
        }
        CHECK(entries(dir.path()).empty());
    }
    SUBCASE("and leaves an existing file as it was") {
        const std::string path = dir / "t.json";
        std::ofstream(path) << "old";
        {
            output_file out(path);
            out.write("new");
        }
        CHECK(read_plain(path) == "old");
        CHECK(entries(dir.path()) == std::vector<std::string>{"t.json"});
    }
}

TEST_CASE("output_file reports a missing directory with the path and the reason") {
    temp_dir dir;
    const std::string path = dir / "missing/t.json";
    try {
        output_file out(path);
        FAIL("no exception");
    } catch (const std::system_error& e) {
        CHECK(e.code() == std::errc::no_such_file_or_directory);
        CHECK(std::string(e.what()) == write_error_text(path, "No such file or directory"));
    }
    CHECK(entries(dir.path()).empty());
}

TEST_CASE("output_file reports a parent that is a regular file") {
    temp_dir dir;
    std::ofstream(dir / "file") << "x";
    const std::string path = dir / "file/t.json";
    try {
        output_file out(path);
        FAIL("no exception");
    } catch (const std::system_error& e) {
        CHECK(e.code() == std::errc::not_a_directory);
        CHECK(std::string(e.what()) == write_error_text(path, "Not a directory"));
    }
    CHECK(entries(dir.path()) == std::vector<std::string>{"file"});
}

TEST_CASE("output_file refuses a path that is a directory before writing anything") {
    temp_dir dir;
    fs::create_directory(dir / "d");
    for (const std::string& path : {dir / "d", dir / "d/"}) {
        CAPTURE(path);
        try {
            output_file out(path);
            FAIL("no exception");
        } catch (const std::system_error& e) {
            CHECK(e.code() == std::errc::is_a_directory);
            CHECK(std::string(e.what()) == write_error_text(path, "Is a directory"));
        }
        CHECK(entries(dir.path()) == std::vector<std::string>{"d"});
        CHECK(entries(dir / "d").empty());
    }
}

TEST_CASE("output_file reports an unwritable directory") {
    // Root ignores permission bits, so as root the check runs in a child that has dropped to the
    // unprivileged user "nobody" (uid/gid 65534), in a directory that user owns with mode 0500.
    temp_dir dir;
    fs::permissions(dir.path(), fs::perms::owner_all | fs::perms::others_exec | fs::perms::group_exec);
    fs::create_directory(dir / "ro");
    const bool root = ::geteuid() == 0;
    if (root) REQUIRE(::chown((dir / "ro").c_str(), 65534, 65534) == 0);
    fs::permissions(dir / "ro", fs::perms::owner_read | fs::perms::owner_exec);
    const std::string path = dir / "ro/t.json";
    const std::string result = in_child([&]() -> std::string {
        if (root && (::setgid(65534) != 0 || ::setuid(65534) != 0)) return "cannot drop privileges";
        try {
            output_file out(path);
            return "no exception";
        } catch (const std::system_error& e) {
            if (e.code() != std::errc::permission_denied) return "wrong code: " + e.code().message();
            if (std::string(e.what()) != write_error_text(path, "Permission denied")) return e.what();
        }
        return "";
    });
    CHECK(result == "");
    fs::permissions(dir / "ro", fs::perms::owner_all);
    CHECK(entries(dir / "ro").empty());
}

TEST_CASE("output_file removes its temporary as soon as a write fails") {
    // RLIMIT_FSIZE makes write() fail with EFBIG, standing in for a full disk; the limit is
    // process-wide, so it is set in a child.
    temp_dir dir;
    for (const std::string name : {"big.json", "big.json.gz"}) {
        CAPTURE(name);
        const std::string path = dir / name;
        const std::string result = in_child([&]() -> std::string {
            std::signal(SIGXFSZ, SIG_IGN);
            const rlimit limit{65536, 65536};
            if (::setrlimit(RLIMIT_FSIZE, &limit) != 0) return "setrlimit failed";
            std::mt19937 random(1);
            // Three blocks and a bit: the write fails while gzip workers hold blocks.
            std::string incompressible(3 * gzip_members::block_size + 1, '\0');
            for (auto& c : incompressible) c = static_cast<char>(random());
            output_file out(path);
            try {
                out.write(incompressible);
                out.commit();
                return "no error";
            } catch (const std::system_error& e) {
                if (e.code() != std::errc::file_too_large) return "code " + e.code().message();
                if (e.what() != write_error_text(path, "File too large")) return e.what();
            }
            if (!entries(dir.path()).empty()) return "left behind: " + entries(dir.path())[0];
            try {
                out.write("x");
                return "write after failure accepted";
            } catch (const std::logic_error& e) {
                if (e.what() != write_error_text(path, "an earlier write failed")) return e.what();
            }
            return "ok";
        });
        CHECK(result == "ok");
        CHECK(entries(dir.path()).empty());
    }
}

TEST_CASE("output_file rejects misuse and bad arguments with clear messages") {
    temp_dir dir;
    const std::string path = dir / "t.json";
    output_file out(path);
    out.commit();
    CHECK_THROWS_WITH_AS(out.commit(), write_error_text(path, "it was already committed").c_str(),
                         std::logic_error);
    CHECK_THROWS_WITH_AS(out.write("x"), write_error_text(path, "it was already committed").c_str(),
                         std::logic_error);
    {
        const std::string gz = dir / "t.json.gz";
        output_file packed(gz);
        packed.write(trace_like_text(2 * gzip_members::block_size + 1));
        packed.commit();
        CHECK_THROWS_WITH_AS(packed.commit(), write_error_text(gz, "it was already committed").c_str(),
                             std::logic_error);
        CHECK(read_gzip(gz) == trace_like_text(2 * gzip_members::block_size + 1));
        fs::remove(gz);
    }
    CHECK_THROWS_WITH_AS(output_file(""), "stint: cannot write trace '': the path is empty",
                         std::invalid_argument);
    CHECK_THROWS_WITH_AS(output_file(dir / "t.json.gz", 10),
                         write_error_text(dir / "t.json.gz", "gzip level 10 is not in 0..9").c_str(),
                         std::invalid_argument);
    CHECK_THROWS_WITH_AS(output_file(dir / "t.json.gz", -1),
                         write_error_text(dir / "t.json.gz", "gzip level -1 is not in 0..9").c_str(),
                         std::invalid_argument);
    CHECK(entries(dir.path()) == std::vector<std::string>{"t.json"});
}

// ---------------------------------------------------------------------------------------------
// json_writer over output_file

TEST_CASE("json_writer streams a whole trace through an output_file, plain and gzip") {
    temp_dir dir;
    for (const std::string name : {"trace.json", "trace.json.gz"}) {
        CAPTURE(name);
        const std::string path = dir / name;
        {
            output_file file(path);
            json_writer out(file);
            out.raw(R"({"traceEvents":[)");
            for (int i = 0; i < 20000; ++i) {
                if (i > 0) out.raw(",");
                out.raw(R"({"ph":"X","name":)");
                out.string("op \"" + std::to_string(i) + "\"\n\xFF");
                out.raw(R"(,"ts":)");
                out.microseconds(std::int64_t{i} * 1000 + 456);
                out.raw(R"(,"id":)");
                out.number(std::uint64_t{1} << 63 | static_cast<std::uint64_t>(i));
                out.raw("}");
            }
            out.raw("]}");
            out.flush();
            file.commit();
        }
        const std::string text = name.ends_with(".gz") ? read_gzip(path) : read_plain(path);
        CHECK_FALSE(validate_json(text).has_value());
        const json trace = json::parse(text);
        REQUIRE(trace["traceEvents"].size() == 20000);
        const json& event = trace["traceEvents"][123];
        CHECK(event["name"] == "op \"123\"\n" + replacement);
        CHECK(event["ts"].get<double>() == 123.456);
        CHECK(event["id"].get<std::uint64_t>() == (std::uint64_t{1} << 63 | 123));
    }
    CHECK(entries(dir.path()) == std::vector<std::string>{"trace.json", "trace.json.gz"});
}

TEST_CASE("a 50 MB gzip trace streams through in bounded memory and reads back intact") {
    temp_dir dir;
    const std::string path = dir / "big.json.gz";
    constexpr std::size_t target = 50u << 20;

    // What reaches the file, hashed (FNV-1a) so that neither side holds it whole.
    struct hashing_tee {
        output_file* file;
        std::uint64_t hash = 14695981039346656037ULL;
        std::size_t size = 0;
        void write(std::string_view bytes) {
            for (const char c : bytes) {
                hash = (hash ^ static_cast<unsigned char>(c)) * 1099511628211ULL;
            }
            size += bytes.size();
            file->write(bytes);
        }
    };

    const std::string result = in_child([&]() -> std::string {
        rusage before {};
        ::getrusage(RUSAGE_SELF, &before);
        output_file file(path);
        hashing_tee tee{&file};
        json_writer out(tee);
        std::mt19937_64 random(5);
        out.raw("[");
        for (std::size_t i = 0; tee.size < target; ++i) {
            if (i > 0) out.raw(",\n");
            out.raw(R"({"ts":)");
            out.microseconds(static_cast<std::int64_t>(random() >> 20));
            out.raw(R"(,"v":)");
            out.number(random());
            out.raw("}");
        }
        out.raw("]");
        out.flush();
        file.commit();
        rusage after {};
        ::getrusage(RUSAGE_SELF, &after);
        const long grown_kib = after.ru_maxrss - before.ru_maxrss;
        // Under a sanitizer RSS is meaningless (shadow memory: TSan's grows by ~4 MB per gzip worker).
        if (!stint_test::sanitized && grown_kib > 16 * 1024) return "peak RSS grew by " + std::to_string(grown_kib) + " KiB";
        return std::to_string(tee.size) + " " + std::to_string(tee.hash);
    });

    std::uint64_t hash = 14695981039346656037ULL;
    std::size_t size = 0;
    gzFile in = gzopen(path.c_str(), "rb");
    REQUIRE(in != nullptr);
    std::vector<char> chunk(1 << 20);
    int n = 0;
    while ((n = gzread(in, chunk.data(), static_cast<unsigned>(chunk.size()))) > 0) {
        for (int i = 0; i < n; ++i) {
            hash = (hash ^ static_cast<unsigned char>(chunk[static_cast<std::size_t>(i)])) *
                   1099511628211ULL;
        }
        size += static_cast<std::size_t>(n);
    }
    CHECK(n == 0);
    CHECK(gzclose(in) == Z_OK);
    CHECK(size >= target);
    CHECK(result == std::to_string(size) + " " + std::to_string(hash));
    CHECK(fs::file_size(path) < size);
    CHECK(entries(dir.path()) == std::vector<std::string>{"big.json.gz"});
}
