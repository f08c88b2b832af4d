#pragma once
// How a site names the formula that estimates its flops (with_flops). Kept apart from the formulas
// themselves (flops.hpp) because every site descriptor holds one.

#include "stint/detail/require_cxx20.hpp"

#include <concepts>     // std::convertible_to
#include <cstdint>      // std::int64_t
#include <string_view>  // std::string_view

namespace stint {

class op_inputs;

/// A flop formula: an op's captured inputs to its floating-point operation count, or a negative
/// value when the formula cannot apply (a missing input, a wrong rank). Runs at analysis time.
///
///     std::int64_t my_gemv(const stint::op_inputs& in) {
///         const auto* a = in.shape(0);  // nullptr unless input 0 is a tensor
///         return a && a->size() == 2 ? 2 * (*a)[0] * (*a)[1] : -1;
///     }
using flop_function = std::int64_t (*)(const op_inputs&);

/// The formula of a site: a name looked up at analysis time (a built-in one such as "aten::mm", or
/// one given to `stint::register_flop_formula`), or a function. Empty: the site has no flops.
///
///     STINT_OP_FLOPS(cfg, "my::gemm", "aten::mm", a, b);   // torch's mm formula for a custom op
///     STINT_OP_FLOPS(cfg, "my::gemv", my_gemv, a, x);       // a function (or a captureless lambda)
struct flop_formula {
    std::string_view name{};
    flop_function function = nullptr;

    constexpr flop_formula() = default;
    constexpr flop_formula(const char* formula_name) noexcept : name(formula_name) {}  // NOLINT: implicit on purpose
    constexpr flop_formula(std::string_view formula_name) noexcept : name(formula_name) {}
    template <class F>
        requires(std::convertible_to<F, flop_function> && !std::convertible_to<F, std::string_view>)
    constexpr flop_formula(F f) noexcept : function(f) {}

    [[nodiscard]] constexpr bool empty() const noexcept { return name.empty() && function == nullptr; }
};

}  // namespace stint
