#pragma once
// The bodies of json_writer.hpp: JSON string escaping, microsecond text and json_writer's members.

#include "stint/export/json_writer.hpp"

#include <algorithm>  // std::min
#include <cmath>      // std::isfinite, std::isnan

#include <fmt/compile.h>  // FMT_COMPILE

#include "stint/common/utf8.hpp"

namespace stint::detail {

namespace json_detail {
char* escape(char* o, const unsigned char*& p, const unsigned char* stop, const unsigned char* end) noexcept {
    static constexpr char hex[] = "0123456789abcdef";
    while (p < stop) {
        while (stop - p >= 8) {
            std::uint64_t bytes;
            std::memcpy(&bytes, p, 8);
            if (json_special_in(bytes)) break;
            std::memcpy(o, p, 8);
            o += 8;
            p += 8;
        }
        if (p >= stop) break;
        const unsigned char c = *p;
        if (json_plain_byte[c]) {
            *o++ = static_cast<char>(c);
            ++p;
            continue;
        }
        if (c < 0x80) {
            *o++ = '\\';
            switch (c) {
                case '"': *o++ = '"'; break;
                case '\\': *o++ = '\\'; break;
                case '\n': *o++ = 'n'; break;
                case '\t': *o++ = 't'; break;
                case '\r': *o++ = 'r'; break;
                case '\b': *o++ = 'b'; break;
                case '\f': *o++ = 'f'; break;
                default:
                    std::memcpy(o, "u00", 3);
                    o[3] = hex[c >> 4];
                    o[4] = hex[c & 0xF];
                    o += 5;
                    break;
            }
            ++p;
            continue;
        }
        const int length = utf8_sequence(p, end);
        if (length > 0) {
            std::memcpy(o, p, static_cast<std::size_t>(length));
            o += length;
            p += length;
        } else {
            std::memcpy(o, "\xEF\xBF\xBD", 3);  // U+FFFD
            o += 3;
            p += -length;
        }
    }
    return o;
}
}  // namespace json_detail

char* write_json_string(char* o, std::string_view s) noexcept {
    const auto* p = reinterpret_cast<const unsigned char*>(s.data());
    const auto* const end = p + s.size();
    *o++ = '"';
    o = json_detail::escape(o, p, end, end);
    *o++ = '"';
    return o;
}

void append_json_escaped(fmt::memory_buffer& out, std::string_view s) {
    // In pieces, so that a long string never reserves six times its size at once.
    constexpr std::size_t piece_size = 16 * 1024;
    const auto* p = reinterpret_cast<const unsigned char*>(s.data());
    const auto* const end = p + s.size();
    while (p < end) {
        const std::size_t size = out.size();
        const auto piece = std::min(static_cast<std::size_t>(end - p), piece_size);
        out.resize(size + 6 * piece + 6);  // + a sequence that crosses the piece's end
        char* const o = json_detail::escape(out.data() + size, p, p + piece, end);
        out.resize(static_cast<std::size_t>(o - out.data()));
    }
}

void append_json_string(fmt::memory_buffer& out, std::string_view s) {
    out.push_back('"');
    append_json_escaped(out, s);
    out.push_back('"');
}

char* write_microseconds(char* o, std::int64_t nanoseconds) noexcept {
    auto magnitude = static_cast<std::uint64_t>(nanoseconds);
    if (nanoseconds < 0) {
        *o++ = '-';
        magnitude = 0 - magnitude;  // modular negation: exact for INT64_MIN
    }
    o = fmt::format_to(o, FMT_COMPILE("{}"), magnitude / 1000);
    const auto fraction = static_cast<unsigned>(magnitude % 1000);
    o[0] = '.';
    o[1] = static_cast<char>('0' + fraction / 100);
    o[2] = static_cast<char>('0' + fraction / 10 % 10);
    o[3] = static_cast<char>('0' + fraction % 10);
    return o + 4;
}

void json_writer::raw(std::string_view text) {
    if (text.empty()) return;  // a default string_view's null data() must not reach memcpy
    std::memcpy(extend(text.size()), text.data(), text.size());
    flush_if_full();
}

void json_writer::string(std::string_view s) {
    append_json_string(buffer_, s);
    flush_if_full();
}

void json_writer::string_part(std::string_view s) {
    append_json_escaped(buffer_, s);
    flush_if_full();
}

void json_writer::number(std::int64_t value) {
    finish(fmt::format_to(extend(20), FMT_COMPILE("{}"), value));
}

void json_writer::number(std::uint64_t value) {
    finish(fmt::format_to(extend(20), FMT_COMPILE("{}"), value));
}

void json_writer::number(double value) {
    if (std::isfinite(value)) {
        fmt::format_to(fmt::appender(buffer_), FMT_COMPILE("{}"), value);
        flush_if_full();
    } else if (std::isnan(value)) {
        raw(R"("nan")");
    } else {
        raw(value > 0 ? R"("inf")" : R"("-inf")");
    }
}

void json_writer::flush() {
    if (write_ == nullptr || buffer_.size() == 0) return;
    write_(sink_, std::string_view(buffer_.data(), buffer_.size()));
    buffer_.clear();
}

char* json_writer::extend(std::size_t count) {
    const std::size_t size = buffer_.size();
    buffer_.resize(size + count);
    return buffer_.data() + size;
}

void json_writer::finish(char* end) {
    buffer_.resize(static_cast<std::size_t>(end - buffer_.data()));
    flush_if_full();
}

}  // namespace stint::detail
