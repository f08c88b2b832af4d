#pragma once
// One op's captured inputs, decoded from its record at drain: what flop formulas read (and what the
// trace's "Input Dims" / "Input type" / "Concrete Inputs" are formatted from).

#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "stint/analysis/event.hpp"

namespace stint {

/// The C++ type a captured scalar or scalar list had.
enum class scalar_type : std::uint8_t {
    integer,           ///< signed integers, chars and enums with a signed underlying type
    unsigned_integer,  ///< unsigned integers (stored bit-for-bit in `integers`)
    real,              ///< float, double, long double (kept as double)
    boolean,           ///< bool (0 or 1 in `integers`)
};

/// One captured input.
///
///     const stint::op_input& w = in[1];
///     if (w.kind == stint::input_kind::tensor && w.dims.size() == 4) { ... }
struct op_input {
    input_kind kind = input_kind::none;
    scalar_type values_type = scalar_type::integer;  ///< scalar and scalar_list
    std::string dtype;                  ///< tensor: its dtype name ("float")
    std::vector<std::int64_t> dims;     ///< tensor: its sizes
    std::vector<std::int64_t> strides;  ///< tensor: its strides; empty when the type has none
    std::vector<op_input> tensors;      ///< tensor_list: its tensors (or none entries)
    std::vector<std::int64_t> integers; ///< scalar/scalar_list of integer, unsigned or bool values
    std::vector<double> reals;          ///< scalar/scalar_list of real values
    std::string text;                   ///< string
    bool cut = false;                   ///< dims, list elements or text were cut at a bound

    /// The value of an integer (or bool) scalar; nullopt for anything else, or an unsigned value
    /// beyond int64.
    [[nodiscard]] std::optional<std::int64_t> int_value() const {
        if (kind != input_kind::scalar || values_type == scalar_type::real || integers.size() != 1) return std::nullopt;
        if (values_type == scalar_type::unsigned_integer && integers[0] < 0) return std::nullopt;
        return integers[0];
    }
    /// The values of an integer list, or of one integer scalar as a list of one; nullopt otherwise
    /// (a cut list included: its values are incomplete).
    [[nodiscard]] std::optional<std::vector<std::int64_t>> int_list() const {
        if (kind == input_kind::scalar) {
            const auto v = int_value();
            if (!v) return std::nullopt;
            return std::vector<std::int64_t>{*v};
        }
        if (kind != input_kind::scalar_list || cut || values_type == scalar_type::real) return std::nullopt;
        for (std::int64_t v : integers) {
            if (values_type == scalar_type::unsigned_integer && v < 0) return std::nullopt;
        }
        return integers;
    }
};

/// All captured inputs of one op, in argument order, and the op's name.
///
///     std::int64_t flops(const stint::op_inputs& in) {
///         const std::vector<std::int64_t>* x = in.shape(0);
///         return x ? 2 * x->back() : -1;
///     }
class op_inputs {
public:
    op_inputs() = default;
    op_inputs(std::string_view op_name, std::vector<op_input> inputs, bool truncated = false)
        : op_name_(op_name), inputs_(std::move(inputs)), truncated_(truncated) {}

    [[nodiscard]] std::string_view op_name() const noexcept { return op_name_; }
    [[nodiscard]] std::size_t size() const noexcept { return inputs_.size(); }
    [[nodiscard]] bool empty() const noexcept { return inputs_.empty(); }
    [[nodiscard]] const op_input& operator[](std::size_t i) const { return inputs_[i]; }
    [[nodiscard]] auto begin() const noexcept { return inputs_.begin(); }
    [[nodiscard]] auto end() const noexcept { return inputs_.end(); }
    /// Input i, or nullptr past the end.
    [[nodiscard]] const op_input* get(std::size_t i) const noexcept { return i < inputs_.size() ? &inputs_[i] : nullptr; }
    /// The dims of input i when it is a tensor whose dims were kept whole; nullptr otherwise.
    [[nodiscard]] const std::vector<std::int64_t>* shape(std::size_t i) const noexcept {
        const op_input* in = get(i);
        return in != nullptr && in->kind == input_kind::tensor && !in->cut ? &in->dims : nullptr;
    }
    /// Whether the capture hit a bound (some inputs or values are missing).
    [[nodiscard]] bool truncated() const noexcept { return truncated_; }
    [[nodiscard]] std::vector<op_input>& mutable_inputs() noexcept { return inputs_; }
    void set_op_name(std::string_view name) noexcept { op_name_ = name; }
    void set_truncated(bool truncated) noexcept { truncated_ = truncated; }

private:
    std::string_view op_name_;
    std::vector<op_input> inputs_;
    bool truncated_ = false;
};

}  // namespace stint
