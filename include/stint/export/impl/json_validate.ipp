#pragma once
// The bodies of json_validate.hpp: json_validator's recursive descent and validate_json.

#include "stint/export/json_validate.hpp"

#include <charconv>      // std::from_chars
#include <system_error>  // std::errc
#include <utility>       // std::move

#include <fmt/format.h>  // fmt::format

#include "stint/common/utf8.hpp"

namespace stint::detail {

std::optional<std::string> json_validator::run() {
    if (!value(0)) return std::move(error_);
    skip_whitespace();
    if (at_ < text_.size()) return reason("expected end of input", at_);
    return std::nullopt;
}

bool json_validator::fail(std::string_view what, std::size_t offset) {
    error_ = reason(what, offset);
    return false;
}

std::string json_validator::reason(std::string_view what, std::size_t offset) {
    return fmt::format("{} at offset {}", what, offset);
}

void json_validator::skip_whitespace() noexcept {
    while (at_ < text_.size()) {
        const char c = text_[at_];
        if (c != ' ' && c != '\t' && c != '\n' && c != '\r') return;
        ++at_;
    }
}

bool json_validator::value(int depth) {
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

bool json_validator::object(int depth) {
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

bool json_validator::array(int depth) {
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

bool json_validator::literal(std::string_view word) {
    if (text_.substr(at_, word.size()) != word) return fail("invalid literal", at_);
    at_ += word.size();
    return true;
}

bool json_validator::number() {
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

bool json_validator::overflows_double(std::string_view number) noexcept {
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

std::optional<unsigned> json_validator::hex4() noexcept {
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

bool json_validator::escape() {
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

bool json_validator::string() {
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

std::optional<std::string> validate_json(std::string_view text) {
    return json_validator(text).run();
}

}  // namespace stint::detail
