#pragma once
// The bodies of analysis/trace_reader.hpp: a SAX-style JSON pass over a Chrome trace, from a buffer
// refilled by zlib (which reads gzip and plain files alike).

#include "stint/analysis/trace_reader.hpp"
#include "stint/common/utf8.hpp"

#include <algorithm>     // std::min, std::copy_n
#include <cerrno>        // errno
#include <charconv>      // std::from_chars
#include <cmath>         // std::llround, std::isfinite, std::abs
#include <functional>    // std::hash
#include <system_error>  // std::system_error, std::generic_category
#include <unordered_map> // std::unordered_map
#include <vector>        // std::vector

#include <fmt/format.h>  // fmt::format
#include <zlib.h>        // gzopen, gzread, gzerror

namespace stint {
namespace detail {

bool iequals(std::string_view a, std::string_view b) noexcept {
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i) {
        char x = a[i], y = b[i];
        if (x >= 'A' && x <= 'Z') x = static_cast<char>(x - 'A' + 'a');
        if (y >= 'A' && y <= 'Z') y = static_cast<char>(y - 'A' + 'a');
        if (x != y) return false;
    }
    return true;
}

// Well-formed UTF-8 by the exporters' rule (common/utf8.hpp): no overlong form, surrogate or code point
// past U+10FFFF.
bool valid_utf8(std::string_view s) noexcept {
    const auto* p = reinterpret_cast<const unsigned char*>(s.data());
    const auto* end = p + s.size();
    while (p < end) {
        const int n = utf8_sequence(p, end);
        if (n < 0) return false;
        p += n;
    }
    return true;
}

// Where the JSON text comes from: a refillable window. `fill` returns the bytes it read, 0 at the end.
struct json_source {
    std::function<std::size_t(char*, std::size_t)> fill;
    std::vector<char> buffer;
    std::size_t pos = 0;
    std::size_t end = 0;
    std::uint64_t base = 0;  // the offset of buffer[0] in the text
    bool done = false;

    [[nodiscard]] std::uint64_t offset() const noexcept { return base + pos; }

    bool more() {
        if (pos < end) return true;
        if (done) return false;
        base += end;
        pos = 0;
        end = fill(buffer.data(), buffer.size());
        if (end == 0) done = true;
        return end != 0;
    }
};

// The parser: reads just what the analyses need from each event and skips the rest without storing it.
class chrome_trace_parser {
public:
    chrome_trace_parser(json_source& in, const trace_sink& sink) : in_(in), sink_(sink) {}

    trace_read_stats run() {
        skip_ws();
        const char c = peek("'{' or '['");
        if (c == '[') {
            parse_events();
        } else if (c == '{') {
            next();
            skip_ws();
            if (peek("a key or '}'") == '}') {
                next();
            } else {
                for (;;) {
                    read_string(key_);
                    expect(':');
                    skip_ws();
                    if (key_ == "traceEvents") {
                        parse_events();
                    } else if (key_ == "distributedInfo" && peek("a value") == '{') {
                        parse_distributed_info();
                    } else {
                        skip_value();
                    }
                    skip_ws();
                    const char sep = next_char("',' or '}'");
                    if (sep == '}') break;
                    if (sep != ',') fail("expected ',' or '}' after a member of the trace object", 1);
                    skip_ws();
                }
            }
        } else {
            fail("expected '{' or '[' at the start of a trace", 0);
        }
        skip_ws();
        if (in_.more()) fail("unexpected text after the trace's end", 0);
        stats_.bytes = in_.offset();
        return stats_;
    }

private:
    [[noreturn]] void fail(const std::string& what, std::uint64_t back) const {
        const std::uint64_t at = in_.offset() >= back ? in_.offset() - back : 0;
        throw trace_read_error(fmt::format("stint: malformed trace at byte {}: {}", at, what), at);
    }
    [[noreturn]] void fail_end(const char* wanted) const {
        throw trace_read_error(
            fmt::format("stint: trace ends early at byte {}: expected {} (a truncated file?)", in_.offset(), wanted),
            in_.offset());
    }
    char peek(const char* wanted) {
        if (!in_.more()) fail_end(wanted);
        return in_.buffer[in_.pos];
    }
    void next() { ++in_.pos; }
    char next_char(const char* wanted) {
        const char c = peek(wanted);
        ++in_.pos;
        return c;
    }
    void skip_ws() {
        while (in_.more()) {
            const char c = in_.buffer[in_.pos];
            if (c != ' ' && c != '\n' && c != '\r' && c != '\t') return;
            ++in_.pos;
        }
    }
    void expect(char c) {
        skip_ws();
        if (next_char("a ':'") != c) fail(fmt::format("expected '{}'", c), 1);
    }

    static void append_utf8(std::string& out, std::uint32_t cp) {
        if (cp < 0x80) {
            out.push_back(static_cast<char>(cp));
        } else if (cp < 0x800) {
            out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
            out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
        } else if (cp < 0x10000) {
            out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
            out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
            out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
        } else {
            out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
            out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
            out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
            out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
        }
    }
    std::uint32_t read_hex4() {
        std::uint32_t v = 0;
        for (int i = 0; i < 4; ++i) {
            const char h = next_char("a \\u escape's hex digit");
            v <<= 4;
            if (h >= '0' && h <= '9') v |= static_cast<std::uint32_t>(h - '0');
            else if (h >= 'a' && h <= 'f') v |= static_cast<std::uint32_t>(h - 'a' + 10);
            else if (h >= 'A' && h <= 'F') v |= static_cast<std::uint32_t>(h - 'A' + 10);
            else fail("bad hex digit in a \\u escape", 1);
        }
        return v;
    }

    // Reads a string (the opening quote next) into `out`, escapes decoded. Bytes are copied a run at a
    // time: most strings have no escapes.
    void read_string(std::string& out) {
        skip_ws();
        if (next_char("a string") != '"') fail("expected a string", 1);
        out.clear();
        for (;;) {
            if (!in_.more()) fail_end("the end of a string");
            const char* start = in_.buffer.data() + in_.pos;
            const std::size_t avail = in_.end - in_.pos;
            std::size_t n = 0;
            while (n < avail && start[n] != '"' && start[n] != '\\') {
                if (static_cast<unsigned char>(start[n]) < 0x20) {
                    in_.pos += n;
                    fail("control character in a string", 0);
                }
                ++n;
            }
            out.append(start, n);
            in_.pos += n;
            if (n == avail) continue;
            const char c = next_char("the end of a string");
            if (c == '"') return;
            read_escape(out, next_char("an escape"));
        }
    }

    // One escape after its backslash (`e` its letter). A UTF-16 surrogate pair becomes one code point;
    // a half without its other half becomes U+FFFD (RFC 8259 allows them, Unicode does not), and an
    // escape that follows a lone high half is read as its own.
    void read_escape(std::string& out, char e) {
        switch (e) {
            case '"': out.push_back('"'); return;
            case '\\': out.push_back('\\'); return;
            case '/': out.push_back('/'); return;
            case 'b': out.push_back('\b'); return;
            case 'f': out.push_back('\f'); return;
            case 'n': out.push_back('\n'); return;
            case 'r': out.push_back('\r'); return;
            case 't': out.push_back('\t'); return;
            case 'u': break;
            default: fail("bad escape in a string", 1);
        }
        std::uint32_t cp = read_hex4();
        for (;;) {
            if (cp >= 0xDC00 && cp <= 0xDFFF) return append_utf8(out, 0xFFFD);
            if (cp < 0xD800 || cp > 0xDBFF) return append_utf8(out, cp);
            if (peek("a string") != '\\') return append_utf8(out, 0xFFFD);
            next();
            const char next_escape = next_char("an escape");
            if (next_escape != 'u') {
                append_utf8(out, 0xFFFD);
                return read_escape(out, next_escape);
            }
            const std::uint32_t lo = read_hex4();
            if (lo >= 0xDC00 && lo <= 0xDFFF) return append_utf8(out, 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00));
            append_utf8(out, 0xFFFD);
            cp = lo;  // read as its own: a code point, or a high half that the next escape may complete
        }
    }

    // Copies the text of one value (any JSON) into `out` (for "Input Dims"), or skips it when out is null.
    void skip_value(std::string* out = nullptr) {
        skip_ws();
        int depth = 0;
        bool in_string = false;
        bool escaped = false;
        bool any = false;
        (void)peek("a value");
        while (in_.more()) {
            const char c = in_.buffer[in_.pos];
            if (in_string) {
                if (escaped) escaped = false;
                else if (c == '\\') escaped = true;
                else if (c == '"') {
                    in_string = false;
                    if (depth == 0) {
                        ++in_.pos;
                        if (out != nullptr) out->push_back(c);
                        return;
                    }
                }
            } else if (c == '"') {
                in_string = true;
            } else if (c == '{' || c == '[') {
                ++depth;
            } else if (c == '}' || c == ']') {
                if (depth == 0) {
                    if (!any) fail("expected a value", 0);
                    return;  // the end of the enclosing container (a scalar's end)
                }
                --depth;
                if (depth == 0) {
                    ++in_.pos;
                    if (out != nullptr) out->push_back(c);
                    return;
                }
            } else if (depth == 0 && (c == ',' || c == ' ' || c == '\n' || c == '\r' || c == '\t')) {
                if (!any) fail("expected a value", 0);
                return;
            }
            if (out != nullptr) out->push_back(c);
            any = true;
            ++in_.pos;
        }
        fail_end("the end of a value");
    }

    // A number or a numeric string ("pid": "1" appears in old traces): true when it parsed.
    bool read_number(double& v) {
        number_.clear();
        skip_ws();
        const char c = peek("a value");
        if (c == '"') {
            read_string(scratch_);
            const char* b = scratch_.data();
            const char* e = b + scratch_.size();
            while (b != e && (*b < '0' || *b > '9') && *b != '-') ++b;  // "stream 7" names its number
            if (b == e) {
                v = static_cast<double>(std::hash<std::string>{}(scratch_) & 0x3FFFFFFF);
                return true;
            }
            const auto r = std::from_chars(b, e, v);
            return r.ec == std::errc{};
        }
        if (c != '-' && (c < '0' || c > '9')) {
            skip_value();
            return false;
        }
        while (in_.more()) {
            const char d = in_.buffer[in_.pos];
            if ((d >= '0' && d <= '9') || d == '-' || d == '+' || d == '.' || d == 'e' || d == 'E') {
                number_.push_back(d);
                ++in_.pos;
            } else {
                break;
            }
        }
        const auto r = std::from_chars(number_.data(), number_.data() + number_.size(), v);
        if (r.ec != std::errc{} || r.ptr != number_.data() + number_.size()) {
            fail(fmt::format("bad number '{}'", number_), number_.size());
        }
        return true;
    }

    // A time in microseconds, as nanoseconds without going through a double: Kineto writes epoch
    // microseconds (~1.7e15) with three decimals, past a double's precision once scaled.
    bool read_time_ns(std::int64_t& ns) {
        double v = 0;
        if (!read_number(v) || !std::isfinite(v) || std::abs(v) > 4e15) return false;  // so that start + duration fits in ns
        if (number_.empty() || number_.find_first_of("eE") != std::string::npos) {
            ns = std::llround(v * 1e3);  // an exponent, or a numeric string: rare; a double will do
            return true;
        }
        const bool negative = number_[0] == '-';
        const char* p = number_.data() + (negative ? 1 : 0);
        const char* end = number_.data() + number_.size();
        std::int64_t whole = 0;
        const auto r = std::from_chars(p, end, whole);
        if (r.ec != std::errc{}) return false;
        std::int64_t fraction = 0;
        int digits = 0;
        bool round_up = false;
        if (r.ptr != end && *r.ptr == '.') {
            for (const char* d = r.ptr + 1; d != end; ++d, ++digits) {
                if (digits < 3) fraction = fraction * 10 + (*d - '0');
                else if (digits == 3) round_up = *d >= '5';
            }
        }
        for (int k = digits; k < 3; ++k) fraction *= 10;
        ns = whole * 1000 + fraction + (round_up ? 1 : 0);
        if (negative) ns = -ns;
        return true;
    }

    void parse_distributed_info() {
        next();
        skip_ws();
        if (peek("a key or '}'") == '}') {
            next();
            return;
        }
        for (;;) {
            read_string(key_);
            expect(':');
            double v = 0;
            if (key_ == "rank") {
                if (read_number(v) && std::isfinite(v)) stats_.rank = static_cast<std::int32_t>(v);
            } else {
                skip_value();
            }
            skip_ws();
            const char sep = next_char("',' or '}'");
            if (sep == '}') return;
            if (sep != ',') fail("expected ',' or '}' in distributedInfo", 1);
        }
    }

    void parse_events() {
        skip_ws();
        if (next_char("'['") != '[') fail("expected '[' to open traceEvents", 1);
        skip_ws();
        if (peek("an event or ']'") == ']') {
            next();
            return;
        }
        for (;;) {
            skip_ws();
            if (peek("an event") == '{') parse_event();
            else skip_value();
            skip_ws();
            const char sep = next_char("',' or ']'");
            if (sep == ']') return;
            if (sep != ',') fail("expected ',' or ']' between events", 1);
        }
    }

    void parse_args(trace_record& r) {
        next();
        skip_ws();
        if (peek("a key or '}'") == '}') {
            next();
            return;
        }
        for (;;) {
            read_string(key_);
            expect(':');
            double v = 0;
            if (key_ == "correlation") {
                if (read_number(v) && std::isfinite(v)) r.correlation = static_cast<std::int64_t>(v);
            } else if (key_ == "device") {
                if (read_number(v) && std::isfinite(v)) r.device = static_cast<std::int32_t>(v);
            } else if (key_ == "stream") {
                if (read_number(v) && std::isfinite(v)) r.stream = static_cast<std::int64_t>(v);
            } else if (key_ == "Input Dims") {
                shapes_.clear();
                skip_value(&shapes_);
            } else {
                skip_value();
            }
            skip_ws();
            const char sep = next_char("',' or '}'");
            if (sep == '}') return;
            if (sep != ',') fail("expected ',' or '}' in an event's args", 1);
        }
    }

    void parse_event() {
        next();
        trace_record r;
        name_.clear();
        category_.clear();
        phase_.clear();
        shapes_.clear();
        bool has_ts = false;
        bool has_dur = false;
        std::int64_t ts = 0;
        std::int64_t dur = 0;
        skip_ws();
        if (peek("a key or '}'") == '}') {
            next();
            ++stats_.other_phases;
            return;
        }
        for (;;) {
            read_string(key_);
            expect(':');
            skip_ws();
            double v = 0;
            if (key_ == "ph") {
                if (peek("a value") == '"') read_string(phase_);
                else skip_value();
            } else if (key_ == "name") {
                if (peek("a value") == '"') read_string(name_);
                else skip_value();
            } else if (key_ == "cat") {
                if (peek("a value") == '"') read_string(category_);
                else skip_value();
            } else if (key_ == "ts") {
                has_ts = read_time_ns(ts);
            } else if (key_ == "dur") {
                has_dur = read_time_ns(dur);
            } else if (key_ == "pid") {
                if (read_number(v) && std::isfinite(v)) r.pid = static_cast<std::int64_t>(v);
            } else if (key_ == "tid") {
                if (read_number(v) && std::isfinite(v)) r.tid = static_cast<std::int64_t>(v);
            } else if (key_ == "args" && peek("a value") == '{') {
                parse_args(r);
            } else {
                skip_value();
            }
            skip_ws();
            const char sep = next_char("',' or '}'");
            if (sep == '}') break;
            if (sep != ',') fail("expected ',' or '}' in an event", 1);
        }
        if (phase_ != "X") {
            ++stats_.other_phases;
            return;
        }
        if (!has_ts || !has_dur || dur < 0) {
            ++stats_.missing_duration;
            return;
        }
        if (!valid_utf8(name_)) ++stats_.invalid_utf8_names;
        r.name = name_;
        r.category = category_;
        r.shapes = shapes_;
        r.activity = classify_trace_event(category_, name_);
        if (r.activity == trace_activity::unknown) ++stats_.unknown_category;
        r.start_ns = ts;
        r.duration_ns = dur;
        ++stats_.events;
        sink_(r);
    }

    json_source& in_;
    const trace_sink& sink_;
    trace_read_stats stats_;
    std::string key_, name_, category_, phase_, shapes_, scratch_, number_;
};

}  // namespace detail

trace_activity classify_trace_event(std::string_view category, std::string_view name) {
    using detail::iequals;
    if (iequals(category, "kernel")) {
        // Kineto's old traces filed copies and memsets under "Kernel" by name.
        if (name.starts_with("Memcpy")) return trace_activity::memcpy;
        if (name.starts_with("Memset")) return trace_activity::memset;
        return trace_activity::kernel;
    }
    // No category: torch's legacy profiler (libtorch without Kineto, export_chrome_trace of
    // torch.autograd.profiler) writes its ops so.
    if (iequals(category, "cpu_op") || iequals(category, "operator") || category.empty()) {
        return trace_activity::cpu_op;
    }
    if (iequals(category, "user_annotation") || iequals(category, "python_function") ||
        iequals(category, "cpu")) {
        return trace_activity::annotation;
    }
    if (iequals(category, "gpu_memcpy") || iequals(category, "memcpy")) return trace_activity::memcpy;
    if (iequals(category, "gpu_memset") || iequals(category, "memset")) return trace_activity::memset;
    if (iequals(category, "cuda_runtime") || iequals(category, "cuda_driver") || iequals(category, "runtime") ||
        iequals(category, "hip_runtime") || iequals(category, "driver") || iequals(category, "xpu_runtime") ||
        iequals(category, "mtia_runtime") || iequals(category, "privateuse1_runtime") ||
        iequals(category, "privateuse1_driver")) {
        return trace_activity::runtime;
    }
    if (iequals(category, "cuda_sync") || iequals(category, "gpu_user_annotation") || iequals(category, "overhead") ||
        iequals(category, "trace") || iequals(category, "cpu_instant_event") || iequals(category, "ac2g") ||
        iequals(category, "flow") || iequals(category, "python_function_event") || iequals(category, "async") ||
        iequals(category, "stint") || iequals(category, "fwdbwd") || iequals(category, "external_correlation") ||
        iequals(category, "cuda_profiler_range")) {
        return trace_activity::ignored;
    }
    return trace_activity::unknown;
}

trace_read_stats read_chrome_trace_text(std::string_view json, const trace_sink& sink) {
    detail::json_source in;
    std::size_t taken = 0;
    in.buffer.resize(64 * 1024);
    in.fill = [&](char* out, std::size_t cap) {
        const std::size_t n = std::min(cap, json.size() - taken);
        std::copy_n(json.data() + taken, n, out);
        taken += n;
        return n;
    };
    return detail::chrome_trace_parser(in, sink).run();
}

namespace detail {

// A file read through zlib (gzip or plain alike) into `in`, closed with this object.
struct trace_file {
    gzFile file = nullptr;
    std::string path;
    json_source in;

    explicit trace_file(const std::string& p) : path(p) {
        errno = 0;
        file = gzopen(path.c_str(), "rb");
        if (file == nullptr) {
            throw std::system_error(errno != 0 ? errno : ENOMEM, std::generic_category(),
                                    fmt::format("stint: cannot read trace '{}'", path));
        }
        gzbuffer(file, 1U << 20);
        in.buffer.resize(std::size_t{1} << 20);
        in.fill = [this](char* out, std::size_t cap) -> std::size_t {
            const int n = gzread(file, out, static_cast<unsigned>(cap));
            int code = Z_OK;
            const char* why = n <= 0 ? gzerror(file, &code) : nullptr;
            // zlib reports a gzip stream cut short only through gzerror, after the last read.
            if (n < 0 || (n == 0 && code != Z_OK)) {
                throw trace_read_error(fmt::format("stint: cannot read trace '{}' at byte {}: {} (a truncated gzip file?)",
                                                   path, in.offset(), why != nullptr ? why : "read error"),
                                       in.offset());
            }
            return static_cast<std::size_t>(n);
        };
    }
    ~trace_file() { gzclose(file); }
    trace_file(const trace_file&) = delete;
    trace_file& operator=(const trace_file&) = delete;
};

// A protobuf message's fields, one at a time (wire format: key varint, then the value by wire type).
struct proto_fields {
    std::string_view data;
    std::size_t pos = 0;
    std::uint64_t base = 0;  // the message's offset in the file, for errors

    [[noreturn]] void fail(const char* what) const {
        throw trace_read_error(fmt::format("stint: malformed Perfetto trace at byte {}: {}", base + pos, what), base + pos);
    }
    std::uint64_t varint() {
        std::uint64_t v = 0;
        for (int shift = 0; shift < 64; shift += 7) {
            if (pos >= data.size()) fail("a varint runs past its message");
            const auto b = static_cast<unsigned char>(data[pos++]);
            v |= static_cast<std::uint64_t>(b & 0x7F) << shift;
            if ((b & 0x80) == 0) return v;
        }
        fail("a varint longer than 10 bytes");
    }
    // The next field's number and wire type; false at the message's end.
    bool next(std::uint32_t& field, std::uint32_t& wire) {
        if (pos >= data.size()) return false;
        const std::uint64_t key = varint();
        field = static_cast<std::uint32_t>(key >> 3);
        wire = static_cast<std::uint32_t>(key & 7);
        return true;
    }
    std::string_view bytes() {
        const std::uint64_t n = varint();
        if (n > data.size() - pos) fail("a length runs past its message");
        const std::string_view v = data.substr(pos, static_cast<std::size_t>(n));
        pos += static_cast<std::size_t>(n);
        return v;
    }
    proto_fields sub() {
        const std::string_view b = bytes();
        return {b, 0, base + pos - b.size()};
    }
    void skip(std::uint32_t wire) {
        switch (wire) {
            case 0: (void)varint(); break;
            case 1:
                if (data.size() - pos < 8) fail("a fixed64 runs past its message");
                pos += 8;
                break;
            case 2: (void)bytes(); break;
            case 5:
                if (data.size() - pos < 4) fail("a fixed32 runs past its message");
                pos += 4;
                break;
            default: fail("an unknown wire type");
        }
    }
};

// The slices of stint's Perfetto trace, matched begin to end per track, handed on as complete events.
class perfetto_trace_parser {
public:
    perfetto_trace_parser(json_source& in, const trace_sink& sink) : in_(in), sink_(sink) {}

    // A Trace starts with its packet field's key, 0x0A, which is also a newline that may start JSON: JSON
    // is '[' or '{' after white space, with white space, '"' or '}' after the '{'; a packet's first key is
    // none of these.
    static bool looks_like_protobuf(json_source& in) {
        if (!in.more() || in.buffer[in.pos] != '\x0A') return false;
        std::size_t i = in.pos;
        while (i < in.end && (in.buffer[i] == ' ' || in.buffer[i] == '\n' || in.buffer[i] == '\r' || in.buffer[i] == '\t')) ++i;
        if (i == in.end) return false;
        if (in.buffer[i] == '[') return false;
        if (in.buffer[i] != '{') return true;
        if (i + 1 == in.end) return false;
        const char next = in.buffer[i + 1];
        return !(next == ' ' || next == '\n' || next == '\r' || next == '\t' || next == '"' || next == '}');
    }

    trace_read_stats run() {
        while (in_.more()) {
            const std::uint64_t at = in_.offset();
            const std::uint64_t key = stream_varint();
            if (key != ((1U << 3) | 2U)) fail(at, "expected a Trace.packet field");
            const std::uint64_t n = stream_varint();
            if (n > (std::uint64_t{1} << 28)) fail(at, "a packet longer than 256 MiB");
            packet_.resize(static_cast<std::size_t>(n));
            std::size_t got = 0;
            while (got < packet_.size()) {
                if (!in_.more()) fail(in_.offset(), "the trace ends inside a packet (a truncated file?)");
                const std::size_t take = std::min(packet_.size() - got, in_.end - in_.pos);
                std::copy_n(in_.buffer.data() + in_.pos, take, packet_.data() + got);
                in_.pos += take;
                got += take;
            }
            parse_packet(proto_fields{packet_, 0, in_.offset() - n});
        }
        for (const auto& [uuid, t] : tracks_) stats_.missing_duration += t.open.size();
        stats_.bytes = in_.offset();
        return stats_;
    }

private:
    struct open_slice {
        std::int64_t start = 0;
        std::string name;
        std::string category;
    };
    struct track {
        std::int64_t pid = 0;
        std::int64_t tid = 0;
        std::int32_t device = -1;  // a device stream's track: "GPU d stream s"
        std::int64_t stream = -1;
        std::vector<open_slice> open;
    };
    struct sequence {
        std::unordered_map<std::uint64_t, std::string> names;
        std::unordered_map<std::uint64_t, std::string> categories;
        std::uint64_t default_track = 0;
    };

    [[noreturn]] static void fail(std::uint64_t at, const char* what) {
        throw trace_read_error(fmt::format("stint: malformed Perfetto trace at byte {}: {}", at, what), at);
    }
    std::uint64_t stream_varint() {
        std::uint64_t v = 0;
        for (int shift = 0; shift < 64; shift += 7) {
            if (!in_.more()) fail(in_.offset(), "the trace ends inside a varint (a truncated file?)");
            const auto b = static_cast<unsigned char>(in_.buffer[in_.pos++]);
            v |= static_cast<std::uint64_t>(b & 0x7F) << shift;
            if ((b & 0x80) == 0) return v;
        }
        fail(in_.offset(), "a varint longer than 10 bytes");
    }

    static void read_interned(proto_fields m, std::unordered_map<std::uint64_t, std::string>& into) {
        std::uint64_t iid = 0;
        std::string_view name;
        std::uint32_t field = 0, wire = 0;
        while (m.next(field, wire)) {
            if (field == 1 && wire == 0) iid = m.varint();
            else if (field == 2 && wire == 2) name = m.bytes();
            else m.skip(wire);
        }
        into[iid] = std::string(name);
    }

    void read_descriptor(proto_fields m) {
        std::uint64_t uuid = 0;
        std::string_view name;
        track t;
        std::uint32_t field = 0, wire = 0;
        while (m.next(field, wire)) {
            if (field == 1 && wire == 0) {
                uuid = m.varint();
            } else if (field == 2 && wire == 2) {
                name = m.bytes();
            } else if (field == 4 && wire == 2) {
                proto_fields thread = m.sub();
                std::uint32_t f = 0, w = 0;
                while (thread.next(f, w)) {
                    if (f == 1 && w == 0) t.pid = static_cast<std::int64_t>(thread.varint());
                    else if (f == 2 && w == 0) t.tid = static_cast<std::int64_t>(thread.varint());
                    else thread.skip(w);
                }
            } else {
                m.skip(wire);
            }
        }
        // stint names a stream's track "GPU <device> stream <stream>" (its syncs: "... (sync)").
        if (name.starts_with("GPU ")) {
            const char* b = name.data() + 4;
            const char* e = name.data() + name.size();
            std::int32_t device = 0;
            const auto r = std::from_chars(b, e, device);
            if (r.ec == std::errc{}) {
                t.device = device;
                t.pid = device;
                const std::string_view rest(r.ptr, static_cast<std::size_t>(e - r.ptr));
                std::int64_t stream = 0;
                if (rest.starts_with(" stream ") &&
                    std::from_chars(rest.data() + 8, rest.data() + rest.size(), stream).ec == std::errc{}) {
                    t.stream = stream;
                }
                t.tid = t.stream;
            }
        }
        auto& slot = tracks_[uuid];
        t.open = std::move(slot.open);
        slot = std::move(t);
    }

    void parse_packet(proto_fields m) {
        std::uint64_t ts = 0;
        std::uint64_t sequence_id = 0;
        std::uint64_t flags = 0;
        proto_fields interned{}, defaults{}, descriptor{}, event{};
        bool has_interned = false, has_defaults = false, has_descriptor = false, has_event = false;
        std::uint32_t field = 0, wire = 0;
        while (m.next(field, wire)) {
            if (field == 8 && wire == 0) ts = m.varint();
            else if (field == 10 && wire == 0) sequence_id = m.varint();
            else if (field == 13 && wire == 0) flags = m.varint();
            else if (field == 12 && wire == 2) interned = m.sub(), has_interned = true;
            else if (field == 59 && wire == 2) defaults = m.sub(), has_defaults = true;
            else if (field == 60 && wire == 2) descriptor = m.sub(), has_descriptor = true;
            else if (field == 11 && wire == 2) event = m.sub(), has_event = true;
            else m.skip(wire);
        }
        sequence& seq = sequences_[sequence_id];
        if ((flags & 1U) != 0) {  // SEQ_INCREMENTAL_STATE_CLEARED
            seq.names.clear();
            seq.categories.clear();
        }
        if (has_interned) {
            while (interned.next(field, wire)) {
                if (field == 2 && wire == 2) read_interned(interned.sub(), seq.names);
                else if (field == 1 && wire == 2) read_interned(interned.sub(), seq.categories);
                else interned.skip(wire);
            }
        }
        if (has_defaults) {
            while (defaults.next(field, wire)) {
                if (field != 11 || wire != 2) {
                    defaults.skip(wire);
                    continue;
                }
                proto_fields d = defaults.sub();
                std::uint32_t f = 0, w = 0;
                while (d.next(f, w)) {
                    if (f == 11 && w == 0) seq.default_track = d.varint();
                    else d.skip(w);
                }
            }
        }
        if (has_descriptor) read_descriptor(descriptor);
        if (has_event) read_event(event, seq, static_cast<std::int64_t>(ts));
    }

    void read_event(proto_fields m, const sequence& seq, std::int64_t ts) {
        std::uint64_t type = 0;
        std::uint64_t track_uuid = seq.default_track;
        std::uint64_t name_iid = 0, category_iid = 0;
        std::string_view literal_name, literal_category;
        std::uint32_t field = 0, wire = 0;
        while (m.next(field, wire)) {
            if (field == 9 && wire == 0) type = m.varint();
            else if (field == 10 && wire == 0) name_iid = m.varint();
            else if (field == 3 && wire == 0) category_iid = m.varint();
            else if (field == 11 && wire == 0) track_uuid = m.varint();
            else if (field == 23 && wire == 2) literal_name = m.bytes();
            else if (field == 22 && wire == 2) literal_category = m.bytes();
            else m.skip(wire);
        }
        if (type == 1) {  // SLICE_BEGIN
            open_slice s;
            s.start = ts;
            if (!literal_name.empty()) s.name = std::string(literal_name);
            else if (const auto it = seq.names.find(name_iid); it != seq.names.end()) s.name = it->second;
            if (!literal_category.empty()) s.category = std::string(literal_category);
            else if (const auto it = seq.categories.find(category_iid); it != seq.categories.end()) s.category = it->second;
            tracks_[track_uuid].open.push_back(std::move(s));
        } else if (type == 2) {  // SLICE_END
            track& t = tracks_[track_uuid];
            if (t.open.empty()) {
                ++stats_.other_phases;  // an end with no begin on its track
                return;
            }
            const open_slice s = std::move(t.open.back());
            t.open.pop_back();
            trace_record r;
            r.name = s.name;
            r.category = s.category;
            r.activity = classify_trace_event(s.category, s.name);
            if (r.activity == trace_activity::unknown) ++stats_.unknown_category;
            if (!valid_utf8(s.name)) ++stats_.invalid_utf8_names;
            r.pid = t.pid;
            r.tid = t.tid;
            r.device = t.device;
            r.stream = t.stream;
            r.start_ns = s.start;
            r.duration_ns = std::max<std::int64_t>(0, ts - s.start);
            ++stats_.events;
            sink_(r);
        } else {
            ++stats_.other_phases;  // instants and counters
        }
    }

    json_source& in_;
    const trace_sink& sink_;
    trace_read_stats stats_;
    std::string packet_;
    std::unordered_map<std::uint64_t, sequence> sequences_;
    std::unordered_map<std::uint64_t, track> tracks_;
};

}  // namespace detail

trace_read_stats read_chrome_trace(const std::string& path, const trace_sink& sink) {
    detail::trace_file f(path);
    return detail::chrome_trace_parser(f.in, sink).run();
}

trace_read_stats read_perfetto_trace(const std::string& path, const trace_sink& sink) {
    detail::trace_file f(path);
    return detail::perfetto_trace_parser(f.in, sink).run();
}

trace_read_stats read_perfetto_trace_bytes(std::string_view bytes, const trace_sink& sink) {
    detail::json_source in;
    std::size_t taken = 0;
    in.buffer.resize(64 * 1024);
    in.fill = [&](char* out, std::size_t cap) {
        const std::size_t n = std::min(cap, bytes.size() - taken);
        std::copy_n(bytes.data() + taken, n, out);
        taken += n;
        return n;
    };
    return detail::perfetto_trace_parser(in, sink).run();
}

trace_read_stats read_trace(const std::string& path, const trace_sink& sink) {
    detail::trace_file f(path);
    if (detail::perfetto_trace_parser::looks_like_protobuf(f.in)) return detail::perfetto_trace_parser(f.in, sink).run();
    return detail::chrome_trace_parser(f.in, sink).run();
}

}  // namespace stint
