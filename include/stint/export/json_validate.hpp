#pragma once

#include <charconv>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>

#include <fmt/format.h>

#include "stint/detail/deferred.hpp"
#include "stint/export/utf8.hpp"

namespace stint::detail {

template <class = void>
class basic_json_validator;
/// basic_json_validator's one form (a template only so that a file that does not use it does not compile it).
using json_validator = basic_json_validator<>;

/// Strict RFC 8259 checker behind validate_json(): one recursive-descent pass, no allocation unless
/// the text is invalid.
template <class Unused>
class basic_json_validator {
    template <class T>
    using later = deferred_t<T, Unused>;  // checked when used (detail/deferred.hpp)

public:
    /// Containers nested deeper than this are rejected, which also bounds the recursion.
    static constexpr int max_depth = 512;

    explicit basic_json_validator(std::string_view text) noexcept : text_(text) {}

    /// nullopt when the text is exactly one valid JSON value, else the first problem and its offset.
    later<std::optional<std::string>> run() {
        if (!value(0)) return std::move(error_);
        skip_whitespace();
        if (at_ < text_.size()) return reason("expected end of input", at_);
        return std::nullopt;
    }

private:
    bool fail(std::string_view what, std::size_t offset) {
        error_ = reason(what, offset);
        return false;
    }

    static std::string reason(later<std::string_view> what, std::size_t offset) {
        return fmt::format("{} at offset {}", what, offset);
    }

    bool at(char c) const noexcept { return at_ < text_.size() && text_[at_] == c; }

    bool at_digit() const noexcept {
        return at_ < text_.size() && text_[at_] >= '0' && text_[at_] <= '9';
    }

    void skip_whitespace() noexcept {
        while (at_ < text_.size()) {
            const char c = text_[at_];
            if (c != ' ' && c != '\t' && c != '\n' && c != '\r') return;
            ++at_;
        }
    }

    bool value(int depth) {
        skip_whitespace();
        if (at_ == text_.size()) return fail("expected value", at_);
        switch (text_[at_]) {
            case '{': return object(depth + 1);
            case '[': return array(depth + 1);
            case '"': return string();
            case 't': return literal("true");
            case 'f': return literal("false");
            case 'n': return literal("null");
            default:
                if (at('-') || at_digit()) return number();
                return fail("expected value", at_);
        }
    }

    bool object(int depth) {
        if (depth > max_depth) return fail("nesting deeper than 512", at_);
        ++at_;
        skip_whitespace();
        if (at('}')) {
            ++at_;
            return true;
        }
        for (;;) {
            skip_whitespace();
            if (!at('"')) return fail("expected string key", at_);
            if (!string()) return false;
            skip_whitespace();
            if (!at(':')) return fail("expected ':'", at_);
            ++at_;
            if (!value(depth)) return false;
            skip_whitespace();
            if (at(',')) {
                ++at_;
            } else if (at('}')) {
                ++at_;
                return true;
            } else {
                return fail("expected ',' or '}'", at_);
            }
        }
    }

    bool array(int depth) {
        if (depth > max_depth) return fail("nesting deeper than 512", at_);
        ++at_;
        skip_whitespace();
        if (at(']')) {
            ++at_;
            return true;
        }
        for (;;) {
            if (!value(depth)) return false;
            skip_whitespace();
            if (at(',')) {
                ++at_;
            } else if (at(']')) {
                ++at_;
                return true;
            } else {
                return fail("expected ',' or ']'", at_);
            }
        }
    }

    bool literal(std::string_view word) {
        if (text_.substr(at_, word.size()) != word) return fail("invalid literal", at_);
        at_ += word.size();
        return true;
    }

    bool number() {
        const std::size_t start = at_;
        if (at('-')) ++at_;
        if (at('0')) {
            ++at_;
            if (at_digit()) return fail("leading zero in number", start);
        } else if (at_digit()) {
            while (at_digit()) ++at_;
        } else {
            return fail("invalid number", start);
        }
        if (at('.')) {
            ++at_;
            if (!at_digit()) return fail("invalid number", start);
            while (at_digit()) ++at_;
        }
        if (at('e') || at('E')) {
            ++at_;
            if (at('+') || at('-')) ++at_;
            if (!at_digit()) return fail("invalid number", start);
            while (at_digit()) ++at_;
        }
        if (overflows_double(text_.substr(start, at_ - start))) {
            return fail("number out of range of a double", start);
        }
        return true;
    }

    // RFC 8259 lets a reader limit numbers to a double's range, and readers differ past it (Python
    // reads 1e400 as inf, nlohmann-json refuses it), so a number whose magnitude rounds past the
    // largest finite double is refused; one that underflows to zero is kept, as every reader takes it.
    static bool overflows_double(std::string_view number) noexcept {
        double value = 0;
        const auto parsed = std::from_chars(number.data(), number.data() + number.size(), value);
        if (parsed.ec != std::errc::result_out_of_range) return false;
        // Out of range either way: overflow when the value's decimal exponent is positive.
        std::size_t i = number.starts_with('-') ? 1 : 0;
        long long exponent = 0;  // the value is 0.d... x 10^exponent (d its first nonzero digit)
        while (i < number.size() && number[i] == '0') ++i;
        for (; i < number.size() && number[i] >= '0' && number[i] <= '9'; ++i) ++exponent;
        if (i < number.size() && number[i] == '.') {
            ++i;
            if (exponent == 0) {
                for (; i < number.size() && number[i] == '0'; ++i) --exponent;
            }
            while (i < number.size() && number[i] >= '0' && number[i] <= '9') ++i;
        }
        if (i < number.size() && (number[i] == 'e' || number[i] == 'E')) {
            ++i;
            const bool negative = number[i] == '-';
            if (number[i] == '+' || number[i] == '-') ++i;
            long long written = 0;  // saturated: any exponent past 1e9 is out of range alike
            for (; i < number.size(); ++i) {
                written = written * 10 + (number[i] - '0');
                if (written > 1'000'000'000) written = 1'000'000'000;
            }
            exponent += negative ? -written : written;
        }
        return exponent > 0;
    }

    // Four hex digits at at_, consumed; nullopt (nothing consumed) if they are not there.
    later<std::optional<unsigned>> hex4() noexcept {
        if (text_.size() - at_ < 4) return std::nullopt;
        unsigned code = 0;
        for (std::size_t i = 0; i < 4; ++i) {
            const char c = text_[at_ + i];
            unsigned digit = 0;
            if (c >= '0' && c <= '9') digit = static_cast<unsigned>(c - '0');
            else if (c >= 'a' && c <= 'f') digit = static_cast<unsigned>(c - 'a' + 10);
            else if (c >= 'A' && c <= 'F') digit = static_cast<unsigned>(c - 'A' + 10);
            else return std::nullopt;
            code = code * 16 + digit;
        }
        at_ += 4;
        return code;
    }

    bool escape() {
        const std::size_t start = at_;  // the backslash
        ++at_;
        if (at_ == text_.size()) return fail("unterminated string", at_);
        const char c = text_[at_++];
        switch (c) {
            case '"': case '\\': case '/': case 'b': case 'f': case 'n': case 'r': case 't':
                return true;
            case 'u': break;
            default: return fail("invalid escape", start);
        }
        const auto code = hex4();
        if (!code) return fail("invalid \\u escape", start);
        if (*code >= 0xDC00 && *code <= 0xDFFF) return fail("unpaired surrogate", start);
        if (*code < 0xD800 || *code > 0xDBFF) return true;
        // A high surrogate must be followed by an escaped low one.
        if (!at('\\') || text_.substr(at_ + 1, 1) != "u") return fail("unpaired surrogate", start);
        at_ += 2;
        const auto low = hex4();
        if (!low) return fail("invalid \\u escape", at_ - 2);
        if (*low < 0xDC00 || *low > 0xDFFF) return fail("unpaired surrogate", start);
        return true;
    }

    bool string() {
        ++at_;  // the opening quote
        const auto* const bytes = reinterpret_cast<const unsigned char*>(text_.data());
        while (at_ < text_.size()) {
            const unsigned char c = bytes[at_];
            if (c == '"') {
                ++at_;
                return true;
            }
            if (c == '\\') {
                if (!escape()) return false;
            } else if (c < 0x20) {
                return fail("control character in string", at_);
            } else {
                const int length = utf8_sequence(bytes + at_, bytes + text_.size());
                if (length < 0) return fail("invalid UTF-8 in string", at_);
                at_ += static_cast<std::size_t>(length);
            }
        }
        return fail("unterminated string", at_);
    }

    std::string_view text_;
    std::size_t at_ = 0;
    std::string error_;
};

/// Checks that `text` is exactly one JSON value (RFC 8259, UTF-8, nesting at most 512 deep, every
/// number within a double's range).
/// Returns nullopt when it is, else a short reason with its byte offset.
///     validate_json("[1, 2]")   // nullopt
///     validate_json("[1 2]")    // "expected ',' or ']' at offset 3"
template <class = void>
std::optional<std::string> validate_json(std::string_view text) {
    return json_validator(text).run();
}

}  // namespace stint::detail
