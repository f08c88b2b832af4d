#pragma once

#include <cstddef>      // std::size_t
#include <optional>     // std::optional
#include <string>       // std::string
#include <string_view>  // std::string_view

#include "stint/detail/separate_compilation.hpp"

namespace stint::detail {

/// Strict RFC 8259 checker behind validate_json(): one recursive-descent pass, no allocation unless
/// the text is invalid.
class json_validator {
public:
    /// Containers nested deeper than this are rejected, which also bounds the recursion.
    static constexpr int max_depth = 512;

    explicit json_validator(std::string_view text) noexcept : text_(text) {}

    /// nullopt when the text is exactly one valid JSON value, else the first problem and its offset.
    STINT_DECL std::optional<std::string> run();

private:
    STINT_DECL bool fail(std::string_view what, std::size_t offset);

    STINT_DECL static std::string reason(std::string_view what, std::size_t offset);

    bool at(char c) const noexcept { return at_ < text_.size() && text_[at_] == c; }

    bool at_digit() const noexcept {
        return at_ < text_.size() && text_[at_] >= '0' && text_[at_] <= '9';
    }

    STINT_DECL void skip_whitespace() noexcept;

    STINT_DECL bool value(int depth);

    STINT_DECL bool object(int depth);

    STINT_DECL bool array(int depth);

    STINT_DECL bool literal(std::string_view word);

    STINT_DECL bool number();

    // RFC 8259 lets a reader limit numbers to a double's range, and readers differ past it (Python
    // reads 1e400 as inf, nlohmann-json refuses it), so a number whose magnitude rounds past the
    // largest finite double is refused; one that underflows to zero is kept, as every reader takes it.
    STINT_DECL static bool overflows_double(std::string_view number) noexcept;

    // Four hex digits at at_, consumed; nullopt (nothing consumed) if they are not there.
    STINT_DECL std::optional<unsigned> hex4() noexcept;

    STINT_DECL bool escape();

    STINT_DECL bool string();

    std::string_view text_;
    std::size_t at_ = 0;
    std::string error_;
};

/// Checks that `text` is exactly one JSON value (RFC 8259, UTF-8, nesting at most 512 deep, every
/// number within a double's range).
/// Returns nullopt when it is, else a short reason with its byte offset.
///     validate_json("[1, 2]")   // nullopt
///     validate_json("[1 2]")    // "expected ',' or ']' at offset 3"
STINT_DECL std::optional<std::string> validate_json(std::string_view text);

}  // namespace stint::detail

#if defined(STINT_HEADER_ONLY)
#include "stint/export/impl/json_validate.ipp"
#endif
