#pragma once
// The bodies of analysis/trace_reader.hpp: a SAX-style JSON pass over a Chrome trace, from a buffer
// refilled by zlib (which reads gzip and plain files alike).

#include "stint/analysis/trace_reader.hpp"

#include <algorithm>     // std::min, std::copy_n
#include <cerrno>        // errno
#include <charconv>      // std::from_chars
#include <cmath>         // std::llround, std::isfinite, std::abs
#include <functional>    // std::hash
#include <system_error>  // std::system_error, std::generic_category
#include <vector>        // std::vector

#include <fmt/format.h>  // fmt::format
#include <zlib.h>        // gzopen, gzread, gzerror

namespace stint {
namespace detail {

// Equal ignoring ASCII case (categories are "Kernel" in old Kineto, "kernel" now).
inline bool iequals(std::string_view a, std::string_view b) noexcept {
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i) {
        char x = a[i], y = b[i];
        if (x >= 'A' && x <= 'Z') x = static_cast<char>(x - 'A' + 'a');
        if (y >= 'A' && y <= 'Z') y = static_cast<char>(y - 'A' + 'a');
        if (x != y) return false;
    }
    return true;
}

bool valid_utf8(std::string_view s) noexcept {
    std::size_t i = 0;
    while (i < s.size()) {
        const auto c = static_cast<unsigned char>(s[i]);
        std::size_t n = 0;
        if (c < 0x80) n = 0;
        else if (c >= 0xC2 && c <= 0xDF) n = 1;
        else if (c >= 0xE0 && c <= 0xEF) n = 2;
        else if (c >= 0xF0 && c <= 0xF4) n = 3;
        else return false;
        if (i + n >= s.size() && n != 0) return false;
        for (std::size_t k = 1; k <= n; ++k) {
            if ((static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80) return false;
        }
        i += n + 1;
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
            const char e = next_char("an escape");
            switch (e) {
                case '"': out.push_back('"'); break;
                case '\\': out.push_back('\\'); break;
                case '/': out.push_back('/'); break;
                case 'b': out.push_back('\b'); break;
                case 'f': out.push_back('\f'); break;
                case 'n': out.push_back('\n'); break;
                case 'r': out.push_back('\r'); break;
                case 't': out.push_back('\t'); break;
                case 'u': {
                    std::uint32_t cp = read_hex4();
                    if (cp >= 0xD800 && cp <= 0xDBFF) {
                        // A surrogate pair's second half follows; a lone half becomes U+FFFD.
                        if (peek("a string") == '\\') {
                            next();
                            if (next_char("an escape") != 'u') fail("expected a \\u low surrogate", 1);
                            const std::uint32_t lo = read_hex4();
                            cp = (lo >= 0xDC00 && lo <= 0xDFFF) ? 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00) : 0xFFFD;
                        } else {
                            cp = 0xFFFD;
                        }
                    } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
                        cp = 0xFFFD;
                    }
                    append_utf8(out, cp);
                    break;
                }
                default: fail("bad escape in a string", 1);
            }
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
    if (iequals(category, "cpu_op") || iequals(category, "operator")) return trace_activity::cpu_op;
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
        iequals(category, "cuda_profiler_range") || iequals(category, "")) {
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

trace_read_stats read_chrome_trace(const std::string& path, const trace_sink& sink) {
    errno = 0;
    gzFile file = gzopen(path.c_str(), "rb");
    if (file == nullptr) {
        throw std::system_error(errno != 0 ? errno : ENOMEM, std::generic_category(),
                                fmt::format("stint: cannot read trace '{}'", path));
    }
    struct closer {
        gzFile f;
        ~closer() { gzclose(f); }
    } close_at_end{file};
    gzbuffer(file, 1U << 20);
    detail::json_source in;
    in.buffer.resize(std::size_t{1} << 20);
    in.fill = [&](char* out, std::size_t cap) -> std::size_t {
        const int n = gzread(file, out, static_cast<unsigned>(cap));
        if (n < 0) {
            int code = 0;
            const char* why = gzerror(file, &code);
            throw trace_read_error(fmt::format("stint: cannot read trace '{}' at byte {}: {}", path, in.offset(),
                                               why != nullptr ? why : "read error"),
                                   in.offset());
        }
        if (n == 0) {
            // zlib reports a gzip stream cut short only through gzerror after the last read.
            int code = 0;
            const char* why = gzerror(file, &code);
            if (code != Z_OK) {
                throw trace_read_error(fmt::format("stint: cannot read trace '{}' at byte {}: {} (a truncated gzip file?)",
                                                   path, in.offset(), why != nullptr ? why : "read error"),
                                       in.offset());
            }
        }
        return static_cast<std::size_t>(n);
    };
    return detail::chrome_trace_parser(in, sink).run();
}

}  // namespace stint
