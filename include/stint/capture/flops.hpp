#pragma once
// Flop formulas (with_flops): torch's profiler formulas for the common ops, a registry for yours, and
// the evaluation that runs at drain from recorded shapes (never on the hot path).

#include <algorithm>      // std::max
#include <cstddef>        // std::size_t
#include <cstdint>        // std::int64_t
#include <functional>     // std::function
#include <mutex>          // std::mutex, std::lock_guard
#include <optional>       // std::optional, std::nullopt
#include <stdexcept>      // std::invalid_argument
#include <string>         // std::string
#include <string_view>    // std::string_view
#include <unordered_map>  // std::unordered_map
#include <utility>        // std::move
#include <vector>         // std::vector

#include "stint/capture/flop_formula.hpp"
#include "stint/capture/op_inputs.hpp"
#include "stint/detail/export_macros.hpp"

namespace stint {

namespace detail {

// A product that reports overflow or a negative factor instead of wrapping.
class checked_product {
public:
    checked_product& operator*=(std::int64_t x) noexcept {
        if (ok_ && (x < 0 || __builtin_mul_overflow(value_, x, &value_))) ok_ = false;
        return *this;
    }
    [[nodiscard]] std::int64_t get() const noexcept { return ok_ ? value_ : -1; }
    [[nodiscard]] bool ok() const noexcept { return ok_; }
    [[nodiscard]] std::int64_t raw() const noexcept { return value_; }

private:
    std::int64_t value_ = 1;
    bool ok_ = true;
};

inline std::int64_t gemm_flops(std::int64_t batch, std::int64_t m, std::int64_t k, std::int64_t n) noexcept {
    checked_product p;
    p *= 2;
    p *= batch;
    p *= m;
    p *= k;
    p *= n;
    return p.get();
}

// An int-list argument of a convolution: absent → d copies of `fallback`, one int → broadcast,
// d ints → as is; anything else → nullopt.
inline std::optional<std::vector<std::int64_t>> conv_arg(const op_inputs& in, std::size_t i, std::size_t d,
                                                         std::int64_t fallback) {
    const op_input* arg = in.get(i);
    if (arg == nullptr || arg->kind == input_kind::none) return std::vector<std::int64_t>(d, fallback);
    auto values = arg->int_list();
    if (!values) return std::nullopt;
    if (values->size() == 1 && d != 1) return std::vector<std::int64_t>(d, (*values)[0]);
    if (values->size() != d) return std::nullopt;
    return values;
}

inline std::int64_t conv_int_arg(const op_inputs& in, std::size_t i, std::int64_t fallback) {
    const op_input* arg = in.get(i);
    if (arg == nullptr || arg->kind == input_kind::none) return fallback;
    return arg->int_value().value_or(-1);
}

// torch's computeFlops for aten::conv2d, for any number of spatial dims:
// 2 * N * prod(out) * prod(kernel) * C_in * C_out / groups, out from stride, padding and dilation.
inline std::int64_t conv_flops(const op_inputs& in, std::size_t d, std::size_t stride_at, std::size_t padding_at,
                               std::size_t dilation_at, std::size_t groups_at) {
    const auto* x = in.shape(0);
    const auto* w = in.shape(1);
    if (x == nullptr || w == nullptr || x->size() != d + 2 || w->size() != d + 2) return -1;
    const auto stride = conv_arg(in, stride_at, d, 1);
    const auto padding = conv_arg(in, padding_at, d, 0);
    const auto dilation = conv_arg(in, dilation_at, d, 1);
    const std::int64_t groups = conv_int_arg(in, groups_at, 1);
    if (!stride || !padding || !dilation || groups <= 0) return -1;
    checked_product p;
    p *= 2;
    p *= (*x)[0];
    for (std::size_t i = 0; i < d; ++i) {
        const std::int64_t s = (*stride)[i];
        if (s <= 0) return -1;
        const std::int64_t out = ((*x)[2 + i] + 2 * (*padding)[i] - (*dilation)[i] * ((*w)[2 + i] - 1) - 1) / s + 1;
        if (out <= 0) return -1;
        p *= out;
    }
    for (std::size_t i = 0; i < d; ++i) p *= (*w)[2 + i];
    p *= (*x)[1];
    p *= (*w)[0];
    if (!p.ok()) return -1;
    return p.raw() / groups;
}

// torch's flop_counter for transposed convolutions: 2 * N * prod(input spatial) * prod(weight).
inline std::int64_t conv_transpose_flops(const op_inputs& in, std::size_t d) {
    const auto* x = in.shape(0);
    const auto* w = in.shape(1);
    if (x == nullptr || w == nullptr || x->size() != d + 2 || w->size() != d + 2) return -1;
    checked_product p;
    p *= 2;
    p *= (*x)[0];
    for (std::size_t i = 2; i < x->size(); ++i) p *= (*x)[i];
    for (std::int64_t v : *w) p *= v;
    return p.get();
}

inline std::int64_t elementwise_flops(const op_inputs& in) {
    const auto* x = in.shape(0);
    if (x == nullptr) return -1;
    checked_product p;
    for (std::int64_t v : *x) p *= v;
    return p.get();
}

}  // namespace detail

/// The built-in formulas, public so that your own formulas can build on them. Each takes an op's
/// inputs in aten's argument order and returns -1 when it cannot apply (a missing or non-tensor
/// input, a wrong rank, mismatched inner dims, an overflow).
namespace flop_formulas {

/// aten::mm(a [M, K], b [K, N]): 2 * M * K * N, as torch's profiler.
inline std::int64_t mm(const op_inputs& in) {
    const auto* a = in.shape(0);
    const auto* b = in.shape(1);
    if (a == nullptr || b == nullptr || a->size() != 2 || b->size() != 2 || (*a)[1] != (*b)[0]) return -1;
    return detail::gemm_flops(1, (*a)[0], (*a)[1], (*b)[1]);
}

/// aten::addmm(self, mat1 [M, K], mat2 [K, N]): 2 * M * K * N (alpha and beta ignored, as torch).
inline std::int64_t addmm(const op_inputs& in) {
    const auto* a = in.shape(1);
    const auto* b = in.shape(2);
    if (a == nullptr || b == nullptr || a->size() != 2 || b->size() != 2 || (*a)[1] != (*b)[0]) return -1;
    return detail::gemm_flops(1, (*a)[0], (*a)[1], (*b)[1]);
}

/// aten::bmm(a [B, M, K], b [B, K, N]): 2 * B * M * K * N.
inline std::int64_t bmm(const op_inputs& in) {
    const auto* a = in.shape(0);
    const auto* b = in.shape(1);
    if (a == nullptr || b == nullptr || a->size() != 3 || b->size() != 3 || (*a)[0] != (*b)[0] ||
        (*a)[2] != (*b)[1]) {
        return -1;
    }
    return detail::gemm_flops((*a)[0], (*a)[1], (*a)[2], (*b)[2]);
}

/// aten::baddbmm(self, batch1 [B, M, K], batch2 [B, K, N]): 2 * B * M * K * N.
inline std::int64_t baddbmm(const op_inputs& in) {
    const auto* a = in.shape(1);
    const auto* b = in.shape(2);
    if (a == nullptr || b == nullptr || a->size() != 3 || b->size() != 3 || (*a)[0] != (*b)[0] ||
        (*a)[2] != (*b)[1]) {
        return -1;
    }
    return detail::gemm_flops((*a)[0], (*a)[1], (*a)[2], (*b)[2]);
}

/// aten::matmul(a, b) with numpy's rules (a 1-D operand is a row or column vector, batch dims
/// broadcast): 2 * batch * M * K * N, what torch counts for the mm/bmm it decomposes into.
inline std::int64_t matmul(const op_inputs& in) {
    const auto* a = in.shape(0);
    const auto* b = in.shape(1);
    if (a == nullptr || b == nullptr || a->empty() || b->empty()) return -1;
    const std::int64_t m = a->size() >= 2 ? (*a)[a->size() - 2] : 1;
    const std::int64_t k = a->back();
    const std::int64_t k2 = b->size() >= 2 ? (*b)[b->size() - 2] : (*b)[0];
    const std::int64_t n = b->size() >= 2 ? b->back() : 1;
    if (k != k2) return -1;
    const std::size_t a_batch = a->size() > 2 ? a->size() - 2 : 0;
    const std::size_t b_batch = b->size() > 2 ? b->size() - 2 : 0;
    detail::checked_product batch;
    for (std::size_t i = 0; i < std::max(a_batch, b_batch); ++i) {
        // Align from the right, as broadcasting does.
        const std::int64_t da = i < a_batch ? (*a)[a_batch - 1 - i] : 1;
        const std::int64_t db = i < b_batch ? (*b)[b_batch - 1 - i] : 1;
        if (da != db && da != 1 && db != 1) return -1;
        batch *= std::max(da, db);
    }
    if (!batch.ok()) return -1;
    return detail::gemm_flops(batch.raw(), m, k, n);
}

/// aten::linear(input [..., K], weight [N, K], bias): 2 * prod(input) * N.
inline std::int64_t linear(const op_inputs& in) {
    const auto* x = in.shape(0);
    const auto* w = in.shape(1);
    if (x == nullptr || w == nullptr || x->empty() || w->size() != 2 || x->back() != (*w)[1]) return -1;
    detail::checked_product p;
    p *= 2;
    for (std::int64_t v : *x) p *= v;
    p *= (*w)[0];
    return p.get();
}

/// aten::conv1d/2d/3d(input [N, C_in, *spatial], weight [C_out, C_in / groups, *kernel], bias, stride,
/// padding, dilation, groups): torch's profiler formula for conv2d,
/// 2 * N * prod(out) * prod(kernel) * C_in * C_out / groups, extended to 1 and 3 spatial dims.
/// stride, padding and dilation may be one int or one per spatial dim; missing trailing arguments
/// take aten's defaults (1, 0, 1, groups 1).
inline std::int64_t conv1d(const op_inputs& in) { return detail::conv_flops(in, 1, 3, 4, 5, 6); }
inline std::int64_t conv2d(const op_inputs& in) { return detail::conv_flops(in, 2, 3, 4, 5, 6); }
inline std::int64_t conv3d(const op_inputs& in) { return detail::conv_flops(in, 3, 3, 4, 5, 6); }

/// aten::conv_transpose1d/2d/3d(input [N, C_in, *spatial], weight [C_in, C_out / groups, *kernel], ...):
/// torch's flop counter, 2 * N * prod(input spatial) * prod(weight).
inline std::int64_t conv_transpose1d(const op_inputs& in) { return detail::conv_transpose_flops(in, 1); }
inline std::int64_t conv_transpose2d(const op_inputs& in) { return detail::conv_transpose_flops(in, 2); }
inline std::int64_t conv_transpose3d(const op_inputs& in) { return detail::conv_transpose_flops(in, 3); }

/// aten::convolution(input, weight, bias, stride, padding, dilation, transposed, output_padding,
/// groups): the conv or transposed-conv formula above, by `transposed`.
inline std::int64_t convolution(const op_inputs& in) {
    const auto* w = in.shape(1);
    if (w == nullptr || w->size() < 3) return -1;
    const std::size_t d = w->size() - 2;
    const op_input* transposed = in.get(6);
    if (transposed != nullptr && transposed->int_value().value_or(0) != 0) return detail::conv_transpose_flops(in, d);
    return detail::conv_flops(in, d, 3, 4, 5, 8);
}

/// aten::add / aten::mul(self, other): one flop per element of self, as torch's profiler.
inline std::int64_t add(const op_inputs& in) { return detail::elementwise_flops(in); }
inline std::int64_t mul(const op_inputs& in) { return detail::elementwise_flops(in); }

}  // namespace flop_formulas

/// A formula as the registry holds it (anything callable, evaluated at analysis time).
using flop_callable = std::function<std::int64_t(const op_inputs&)>;

namespace detail {

struct builtin_flop_entry {
    std::string_view name;
    flop_function function;
};

inline constexpr builtin_flop_entry builtin_flop_formulas[] = {
    {"aten::mm", flop_formulas::mm},
    {"aten::addmm", flop_formulas::addmm},
    {"aten::bmm", flop_formulas::bmm},
    {"aten::baddbmm", flop_formulas::baddbmm},
    {"aten::matmul", flop_formulas::matmul},
    {"aten::linear", flop_formulas::linear},
    {"aten::conv1d", flop_formulas::conv1d},
    {"aten::conv2d", flop_formulas::conv2d},
    {"aten::conv3d", flop_formulas::conv3d},
    {"aten::conv_transpose1d", flop_formulas::conv_transpose1d},
    {"aten::conv_transpose2d", flop_formulas::conv_transpose2d},
    {"aten::conv_transpose3d", flop_formulas::conv_transpose3d},
    {"aten::convolution", flop_formulas::convolution},
    {"aten::add", flop_formulas::add},
    {"aten::mul", flop_formulas::mul},
};

inline flop_function builtin_flop_formula(std::string_view name) noexcept {
    for (const builtin_flop_entry& e : builtin_flop_formulas) {
        if (e.name == name) return e.function;
    }
    return nullptr;
}

/// User formulas by name. Touched only by registration and at drain, under its own lock.
class flop_registry {
public:
    void add(std::string name, flop_callable formula) {
        std::lock_guard lock(mutex_);
        formulas_[std::move(name)] = std::move(formula);
    }
    bool remove(const std::string& name) {
        std::lock_guard lock(mutex_);
        return formulas_.erase(name) != 0;
    }
    [[nodiscard]] flop_callable find(const std::string& name) const {
        std::lock_guard lock(mutex_);
        const auto it = formulas_.find(name);
        return it == formulas_.end() ? flop_callable{} : it->second;
    }

private:
    mutable std::mutex mutex_;
    std::unordered_map<std::string, flop_callable> formulas_;
};

/// One registry per process (see export_macros.hpp); leaked like the recording registry, so that a
/// drain during static destruction still finds it.
STINT_DETAIL_EXPORT inline flop_registry& the_flop_registry() {
    static flop_registry* const instance = new flop_registry();
    return *instance;
}

}  // namespace detail

/// Registers (or replaces) the formula for `name`: an op name (used by every with_flops STINT_OP of
/// that name) or a formula name sites give STINT_OP_FLOPS. A registered formula overrides a built-in
/// one of the same name. Thread-safe; takes effect for sessions drained afterwards. Throws
/// std::invalid_argument for an empty name or formula.
///
///     stint::register_flop_formula("my::gemv", [](const stint::op_inputs& in) -> std::int64_t {
///         const auto* a = in.shape(0);
///         return a && a->size() == 2 ? 2 * (*a)[0] * (*a)[1] : -1;
///     });
inline void register_flop_formula(std::string name, flop_callable formula) {
    if (name.empty()) throw std::invalid_argument("stint: register_flop_formula(): the name is empty");
    if (!formula) {
        throw std::invalid_argument("stint: register_flop_formula(\"" + name + "\"): the formula is empty");
    }
    detail::the_flop_registry().add(std::move(name), std::move(formula));
}

/// Removes a registered formula (built-in ones stay); returns whether one was registered.
///
///     stint::unregister_flop_formula("my::gemv");
inline bool unregister_flop_formula(const std::string& name) { return detail::the_flop_registry().remove(name); }

/// The formula stint uses for `name`: a registered one, else a built-in one, else an empty function.
///
///     if (auto f = stint::find_flop_formula("aten::mm")) fmt::print("{}\n", f(inputs));
[[nodiscard]] inline flop_callable find_flop_formula(std::string_view name) {
    std::string key(name);
    if (flop_callable f = detail::the_flop_registry().find(key)) return f;
    if (flop_function f = detail::builtin_flop_formula(name)) return f;
    return {};
}

/// Evaluates a site's formula on its inputs: -1 when there is no formula, it cannot apply, or it throws.
///
///     std::int64_t f = stint::estimate_flops("aten::mm", inputs);
[[nodiscard]] inline std::int64_t estimate_flops(const flop_formula& formula, const op_inputs& inputs) noexcept {
    try {
        if (formula.function != nullptr) return std::max<std::int64_t>(formula.function(inputs), -1);
        if (formula.name.empty()) return -1;
        const flop_callable f = find_flop_formula(formula.name);
        return f ? std::max<std::int64_t>(f(inputs), -1) : -1;
    } catch (...) {
        return -1;
    }
}

}  // namespace stint
