#pragma once
// Reading captured inputs back at drain: the wire format of input_encoding.hpp to stint::op_inputs,
// and op_inputs to the event_args the trace and tables show, formatted as torch formats them.

#include <cstddef>  // std::byte, std::size_t
#include <cstdint>  // std::int64_t, std::uint8_t, std::uint16_t, std::uint32_t
#include <cstring>  // std::memcpy
#include <span>  // std::span
#include <string>  // std::string
#include <string_view>  // std::string_view
#include <vector>  // std::vector

#include "stint/analysis/event.hpp"
#include "stint/capture/detail/input_encoding.hpp"
#include "stint/capture/op_inputs.hpp"
#include "stint/detail/separate_compilation.hpp"

namespace stint::detail {

// A bounds-checked reader: a malformed stream stops the decode instead of reading past the payload.
class wire_reader {
public:
    explicit wire_reader(std::span<const std::byte> bytes) noexcept : at_(bytes.data()), end_(bytes.data() + bytes.size()) {}
    [[nodiscard]] bool ok() const noexcept { return ok_; }
    [[nodiscard]] bool has(std::size_t n) noexcept {
        if (static_cast<std::size_t>(end_ - at_) < n) ok_ = false;
        return ok_;
    }
    std::uint8_t u8() noexcept {
        if (!has(1)) return 0;
        return static_cast<std::uint8_t>(*at_++);
    }
    std::uint16_t u16() noexcept { return read<std::uint16_t>(); }
    template <class T>
    T read() noexcept {
        T v{};
        if (!has(sizeof(T))) return v;
        std::memcpy(&v, at_, sizeof(T));
        at_ += sizeof(T);
        return v;
    }
    std::string_view text(std::size_t n) noexcept {
        if (!has(n)) return {};
        std::string_view s(reinterpret_cast<const char*>(at_), n);
        at_ += n;
        return s;
    }
    STINT_DECL void int64s(std::vector<std::int64_t>& out, std::size_t n);
    STINT_DECL void int32s(std::vector<std::int64_t>& out, std::size_t n);

private:
    const std::byte* at_;
    const std::byte* end_;
    bool ok_ = true;
};

// A tensor entry's identity (wire_has_identity): storage and key default to the data pointer.
STINT_DECL tensor_identity read_identity(wire_reader& in, std::uint8_t flags);

STINT_DECL bool decode_entry(wire_reader& in, op_input& out, bool in_list);

/// Decodes an inputs payload; a malformed tail (never written by stint) ends the list and marks it
/// truncated.
STINT_DECL op_inputs decode_inputs(std::string_view op_name, std::span<const std::byte> bytes, std::uint32_t aux);

/// A double as torch's IValue prints it: integral values as "2.", others with 17 significant digits
/// ("0.10000000000000001", "1.0000000000000001e-05"), and "inf", "-inf", "nan".
STINT_DECL void append_real(std::string& out, double d);

STINT_DECL void append_scalar_value(std::string& out, const op_input& in, std::size_t i);

/// The "Concrete Inputs" text of one input: a scalar's value, a list as "[64, 32]" (", ..." when
/// cut), a string's text, "" for tensors and absent inputs.
STINT_DECL std::string concrete_text(const op_input& in);

/// The "Input type" text of one input.
STINT_DECL std::string type_text(const op_input& in);

/// Fills `args` from decoded inputs; `concrete`: whether concrete values were captured.
STINT_DECL void inputs_to_args(const op_inputs& inputs, bool concrete, event_args& args);

}  // namespace stint::detail

#if defined(STINT_HEADER_ONLY)
#include "stint/capture/detail/impl/input_decoding.ipp"
#endif
