#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>
#include <type_traits>

#include <fmt/compile.h>
#include <fmt/format.h>

#include "stint/export/utf8.hpp"

namespace stint::detail {

// Bytes that go through a JSON string unchanged: printable ASCII except '"' and '\'.
inline constexpr std::array<bool, 256> json_plain_byte = [] {
    std::array<bool, 256> plain{};
    for (int c = 0x20; c < 0x80; ++c) plain[static_cast<std::size_t>(c)] = true;
    plain['"'] = false;
    plain['\\'] = false;
    return plain;
}();

// Whether any of 8 bytes needs more than a copy (control, '"', backslash, non-ASCII); the usual
// "has a byte less than n" bit tricks, exact for "any".
constexpr bool json_special_in(std::uint64_t bytes) noexcept {
    constexpr std::uint64_t ones = 0x0101010101010101ULL;
    constexpr std::uint64_t highs = 0x8080808080808080ULL;
    const auto has_zero = [](std::uint64_t v) { return (v - ones) & ~v & highs; };
    return ((bytes | ((bytes - ones * 0x20) & ~bytes)) & highs) != 0 ||
           has_zero(bytes ^ (ones * '"')) != 0 || has_zero(bytes ^ (ones * '\\')) != 0;
}

/// Most bytes write_json_string can produce for `size` input bytes: no input byte becomes more than
/// 6 output bytes (\u00XX; a UTF-8 sequence or U+FFFD never outgrows its input), plus the quotes.
constexpr std::size_t json_string_bound(std::size_t size) noexcept { return 6 * size + 2; }

namespace json_detail {
// Escapes [p, stop) at `o`, advancing p; a UTF-8 sequence may run past `stop` up to `end`.
template <class = void>
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

/// Writes `s` at `o` as a quoted JSON string: '"', '\' and control characters escaped, and each
/// maximal invalid UTF-8 subpart replaced by U+FFFD, so the output is valid UTF-8 JSON for any input.
/// `o` must have json_string_bound(s.size()) bytes of room; returns the end of what was written.
template <class = void>
char* write_json_string(char* o, std::string_view s) noexcept {
    const auto* p = reinterpret_cast<const unsigned char*>(s.data());
    const auto* const end = p + s.size();
    *o++ = '"';
    o = json_detail::escape(o, p, end, end);
    *o++ = '"';
    return o;
}

/// Appends `s` escaped as write_json_string escapes it, without the quotes.
template <class = void>
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

/// Appends `s` as a quoted JSON string (see write_json_string).
///     fmt::memory_buffer out;
///     append_json_string(out, "a\"b\n");   // out holds "a\"b\n" with the escapes written out
template <class = void>
void append_json_string(fmt::memory_buffer& out, std::string_view s) {
    out.push_back('"');
    append_json_escaped(out, s);
    out.push_back('"');
}

/// Writes a nanosecond count at `o` as microseconds with exactly three decimals, the unit of Chrome
/// trace timestamps: 1234567 -> 1234.567, 5 -> 0.005, -1500 -> -1.500. Needs 25 bytes of room.
template <class = void>
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

/// Writes a string literal's bytes (without its terminator) at `o`.
template <std::size_t N>
char* write_literal(char* o, const char (&text)[N]) noexcept {
    std::memcpy(o, text, N - 1);
    return o + N - 1;
}

template <class = void>
class basic_json_writer;
/// basic_json_writer's one form (a template only so that a file that does not use it does not compile it).
using json_writer = basic_json_writer<>;

/// Streaming JSON text writer: values are appended to an internal buffer, which goes to the sink
/// whenever it holds 64 KiB or more, and on flush(). It keeps no structure: the caller writes the
/// punctuation with raw(). Without a sink everything stays in memory (see buffered()).
///     output_file file("trace.json");
///     json_writer out(file);
///     out.raw("{\"ts\":"); out.microseconds(1234567); out.raw("}"); out.flush(); file.commit();
template <class>
class basic_json_writer {
public:
    /// Buffer size at which the buffer is handed to the sink.
    static constexpr std::size_t flush_threshold = 64 * 1024;

    /// Writes to memory only; read the text with buffered().
    basic_json_writer() = default;

    /// Writes to `sink` (an output_file, or any object with `write(std::string_view)`), which must
    /// outlive the writer. Call flush() before finishing the sink: the destructor does not flush.
    template <class Sink>
        requires requires(Sink& sink, std::string_view bytes) { sink.write(bytes); }
    explicit basic_json_writer(Sink& sink)
        : sink_(&sink), write_([](void* target, std::string_view bytes) {
              static_cast<Sink*>(target)->write(bytes);
          }) {
        buffer_.reserve(flush_threshold + flush_threshold / 4);
    }

    basic_json_writer(const basic_json_writer&) = delete;
    basic_json_writer& operator=(const basic_json_writer&) = delete;

    /// Appends `text` verbatim (punctuation, keys known to need no escaping, nested JSON).
    void raw(std::string_view text) {
        if (text.empty()) return;  // a default string_view's null data() must not reach memcpy
        std::memcpy(extend(text.size()), text.data(), text.size());
        flush_if_full();
    }

    /// Appends `s` as a quoted, escaped JSON string (see append_json_string).
    void string(std::string_view s) {
        append_json_string(buffer_, s);
        flush_if_full();
    }

    /// Appends `s` escaped, without quotes: one part of a string written between raw("\"") calls,
    /// so that a long value need not be built first. A part that ends inside a UTF-8 sequence has
    /// that sequence replaced (write_json_string's rule, applied to each part alone).
    ///     out.raw("\""); for (const auto& f : frames) { out.string_part(f); out.raw(";"); } out.raw("\"");
    void string_part(std::string_view s) {
        append_json_escaped(buffer_, s);
        flush_if_full();
    }

    /// Appends an integer in decimal.
    void number(std::int64_t value) {
        finish(fmt::format_to(extend(20), FMT_COMPILE("{}"), value));
    }

    /// Appends an unsigned integer in decimal.
    void number(std::uint64_t value) {
        finish(fmt::format_to(extend(20), FMT_COMPILE("{}"), value));
    }

    /// Appends any other integer type (int, unsigned, long long …) in decimal.
    template <std::integral Integer>
        requires(!std::same_as<Integer, bool>)
    void number(Integer value) {
        if constexpr (std::is_signed_v<Integer>) {
            number(static_cast<std::int64_t>(value));
        } else {
            number(static_cast<std::uint64_t>(value));
        }
    }

    /// Appends the shortest decimal that reads back as `value`. JSON has no NaN or infinity, so
    /// those are written as the strings "nan", "inf" and "-inf", as PyTorch's execution trace does.
    void number(double value) {
        if (std::isfinite(value)) {
            fmt::format_to(fmt::appender(buffer_), FMT_COMPILE("{}"), value);
            flush_if_full();
        } else if (std::isnan(value)) {
            raw(R"("nan")");
        } else {
            raw(value > 0 ? R"("inf")" : R"("-inf")");
        }
    }

    /// Appends `true` or `false`.
    void boolean(bool value) { raw(value ? "true" : "false"); }

    /// Appends `null`.
    void null() { raw("null"); }

    /// Appends a nanosecond count as microseconds with exactly three decimals (write_microseconds).
    void microseconds(std::int64_t nanoseconds) { finish(write_microseconds(extend(25), nanoseconds)); }

    /// Room for `count` bytes to write directly (with write_* functions); end with commit(end).
    /// One capacity check for a whole record instead of one per value.
    char* reserve(std::size_t count) { return extend(count); }
    /// Ends a write begun with reserve() at `end`.
    void commit(char* end) { finish(end); }

    /// Hands everything buffered to the sink. Without a sink, does nothing.
    void flush() {
        if (write_ == nullptr || buffer_.size() == 0) return;
        write_(sink_, std::string_view(buffer_.data(), buffer_.size()));
        buffer_.clear();
    }

    /// The text not yet handed to a sink: with no sink, all of it.
    std::string_view buffered() const noexcept {
        return std::string_view(buffer_.data(), buffer_.size());
    }

private:
    // Grows the buffer by `count` bytes and returns where they start: one capacity check.
    char* extend(std::size_t count) {
        const std::size_t size = buffer_.size();
        buffer_.resize(size + count);
        return buffer_.data() + size;
    }

    // Ends a write begun with extend() at `end`, giving back the room not used.
    void finish(char* end) {
        buffer_.resize(static_cast<std::size_t>(end - buffer_.data()));
        flush_if_full();
    }

    void flush_if_full() {
        if (buffer_.size() >= flush_threshold) flush();
    }

    fmt::memory_buffer buffer_;
    void* sink_ = nullptr;
    void (*write_)(void*, std::string_view) = nullptr;
};

}  // namespace stint::detail
