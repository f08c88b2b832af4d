#pragma once
// The text of a mirrored op's range when its inputs were captured, shared by the range mirrors
// (emit_nvtx, emit_itt): torch's "aten::mm, sizes = [[64, 32], [32, 16]]" (a non-tensor input is []).

#include <cstddef>      // std::size_t, std::byte
#include <cstdint>      // std::uint32_t
#include <iterator>     // std::back_inserter
#include <span>         // std::span
#include <string_view>  // std::string_view

#include <fmt/format.h>  // fmt::memory_buffer, fmt::format_to

#include "stint/capture/detail/input_decoding.hpp"
#include "stint/recording/slow_path.hpp"

namespace stint::detail {

/// Writes `name, sizes = [...]` for the captured `inputs` (as capture/detail/input_encoding.hpp writes
/// them) into `text` and returns true, or returns false with `text` untouched when there are none (the
/// range then has the name alone). Allocates: callers catch and fall back to the name.
inline bool format_op_range(fmt::memory_buffer& text, std::string_view name, payload_bytes inputs, std::uint32_t aux) {
    const op_inputs decoded =
        decode_inputs(name, std::span<const std::byte>(static_cast<const std::byte*>(inputs.data), inputs.size), aux);
    if (decoded.empty()) return false;
    fmt::format_to(std::back_inserter(text), "{}, sizes = [", name);
    for (std::size_t i = 0; i < decoded.size(); ++i) {
        const op_input& in = decoded[i];
        text.append(std::string_view(i == 0 ? "[" : ", ["));
        if (in.kind == input_kind::tensor) {
            for (std::size_t d = 0; d < in.dims.size(); ++d) {
                if (d != 0) text.append(std::string_view(", "));
                fmt::format_to(std::back_inserter(text), "{}", in.dims[d]);
            }
        }
        text.push_back(']');
    }
    text.push_back(']');
    return true;
}

}  // namespace stint::detail
