#pragma once

#include <array>        // std::array
#include <concepts>     // std::integral, std::same_as
#include <cstddef>      // std::size_t
#include <cstdint>      // std::int64_t, std::uint64_t
#include <cstring>      // std::memcpy
#include <string_view>  // std::string_view
#include <type_traits>  // std::is_signed_v

#include <fmt/format.h>  // fmt::memory_buffer

#include "stint/detail/separate_compilation.hpp"

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
STINT_DECL char* escape(char* o, const unsigned char*& p, const unsigned char* stop, const unsigned char* end) noexcept;
}  // namespace json_detail

/// Writes `s` at `o` as a quoted JSON string: '"', '\' and control characters escaped, and each
/// maximal invalid UTF-8 subpart replaced by U+FFFD, so the output is valid UTF-8 JSON for any input.
/// `o` must have json_string_bound(s.size()) bytes of room; returns the end of what was written.
STINT_DECL char* write_json_string(char* o, std::string_view s) noexcept;

/// Appends `s` escaped as write_json_string escapes it, without the quotes.
STINT_DECL void append_json_escaped(fmt::memory_buffer& out, std::string_view s);

/// Appends `s` as a quoted JSON string (see write_json_string).
///     fmt::memory_buffer out;
///     append_json_string(out, "a\"b\n");   // out holds "a\"b\n" with the escapes written out
STINT_DECL void append_json_string(fmt::memory_buffer& out, std::string_view s);

/// Writes a nanosecond count at `o` as microseconds with exactly three decimals, the unit of Chrome
/// trace timestamps: 1234567 -> 1234.567, 5 -> 0.005, -1500 -> -1.500. Needs 25 bytes of room.
STINT_DECL char* write_microseconds(char* o, std::int64_t nanoseconds) noexcept;

/// Writes a string literal's bytes (without its terminator) at `o`.
template <std::size_t N>
char* write_literal(char* o, const char (&text)[N]) noexcept {
    std::memcpy(o, text, N - 1);
    return o + N - 1;
}

/// Streaming JSON text writer: values are appended to an internal buffer, which goes to the sink
/// whenever it holds 64 KiB or more, and on flush(). It keeps no structure: the caller writes the
/// punctuation with raw(). Without a sink everything stays in memory (see buffered()).
///     output_file file("trace.json");
///     json_writer out(file);
///     out.raw("{\"ts\":"); out.microseconds(1234567); out.raw("}"); out.flush(); file.commit();
class json_writer {
public:
    /// Buffer size at which the buffer is handed to the sink.
    static constexpr std::size_t flush_threshold = 64 * 1024;

    /// Writes to memory only; read the text with buffered().
    json_writer() = default;

    /// Writes to `sink` (an output_file, or any object with `write(std::string_view)`), which must
    /// outlive the writer. Call flush() before finishing the sink: the destructor does not flush.
    template <class Sink>
        requires requires(Sink& sink, std::string_view bytes) { sink.write(bytes); }
    explicit json_writer(Sink& sink)
        : sink_(&sink), write_([](void* target, std::string_view bytes) {
              static_cast<Sink*>(target)->write(bytes);
          }) {
        buffer_.reserve(flush_threshold + flush_threshold / 4);
    }

    json_writer(const json_writer&) = delete;
    json_writer& operator=(const json_writer&) = delete;

    /// Appends `text` verbatim (punctuation, keys known to need no escaping, nested JSON).
    STINT_DECL void raw(std::string_view text);

    /// Appends `s` as a quoted, escaped JSON string (see append_json_string).
    STINT_DECL void string(std::string_view s);

    /// Appends `s` escaped, without quotes: one part of a string written between raw("\"") calls,
    /// so that a long value need not be built first. A part that ends inside a UTF-8 sequence has
    /// that sequence replaced (write_json_string's rule, applied to each part alone).
    ///     out.raw("\""); for (const auto& f : frames) { out.string_part(f); out.raw(";"); } out.raw("\"");
    STINT_DECL void string_part(std::string_view s);

    /// Appends an integer in decimal.
    STINT_DECL void number(std::int64_t value);

    /// Appends an unsigned integer in decimal.
    STINT_DECL void number(std::uint64_t value);

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
    STINT_DECL void number(double value);

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
    STINT_DECL void flush();

    /// The text not yet handed to a sink: with no sink, all of it.
    std::string_view buffered() const noexcept {
        return std::string_view(buffer_.data(), buffer_.size());
    }

private:
    // Grows the buffer by `count` bytes and returns where they start: one capacity check.
    STINT_DECL char* extend(std::size_t count);

    // Ends a write begun with extend() at `end`, giving back the room not used.
    STINT_DECL void finish(char* end);

    void flush_if_full() {
        if (buffer_.size() >= flush_threshold) flush();
    }

    fmt::memory_buffer buffer_;
    void* sink_ = nullptr;
    void (*write_)(void*, std::string_view) = nullptr;
};

}  // namespace stint::detail

#if defined(STINT_HEADER_ONLY)
#include "stint/export/impl/json_writer.ipp"
#endif
