#pragma once
// Numbers as text, appended to a string: what fmt's "{}", "{:.Nf}" and "{:.Ng}" write, through std::to_chars,
// whose bodies are compiled into the C++ library. A program formats its numbers without instantiating a
// formatting engine of its own (fmt's type-erased one is some 60 KB of code in every program).

#include <array>         // std::array
#include <charconv>      // std::to_chars, std::chars_format
#include <concepts>      // std::integral
#include <cstddef>       // std::size_t
#include <string>        // std::string
#include <system_error>  // std::errc

namespace stint::detail {

/// `value` in decimal, as "{}" writes it.
template <std::integral T>
void append_integer(std::string& out, T value) {
    std::array<char, 24> text{};
    const auto written = std::to_chars(text.data(), text.data() + text.size(), value);
    out.append(text.data(), written.ptr);
}

/// `value` with `decimals` digits after the point, right-aligned in `width` characters: "{:W.Nf}",
/// printf's "%W.Nf" (exactly rounded). Beyond 1e300 it falls back to the shortest form.
inline void append_fixed(std::string& out, double value, int decimals, std::size_t width = 0) {
    std::array<char, 352> text{};  // a double's largest fixed form: 309 digits, a sign, a point, the decimals
    auto written = std::to_chars(text.data(), text.data() + text.size(), value, std::chars_format::fixed, decimals);
    if (written.ec != std::errc{}) written = std::to_chars(text.data(), text.data() + text.size(), value);
    const auto length = static_cast<std::size_t>(written.ptr - text.data());
    if (length < width) out.append(width - length, ' ');
    out.append(text.data(), length);
}

/// `value` with `precision` significant digits: "{:.Ng}", printf's "%.Ng".
inline void append_general(std::string& out, double value, int precision) {
    std::array<char, 64> text{};
    const auto written =
        std::to_chars(text.data(), text.data() + text.size(), value, std::chars_format::general, precision);
    out.append(text.data(), written.ptr);
}

}  // namespace stint::detail
