#pragma once
// One op's captured inputs, decoded from its record at drain: what flop formulas read (and what the
// trace's "Input Dims" / "Input type" / "Concrete Inputs" are formatted from).

#include <cstddef>      // std::size_t
#include <cstdint>      // std::int64_t
#include <string_view>  // std::string_view
#include <utility>      // std::move
#include <vector>       // std::vector

#include "stint/analysis/event.hpp"

namespace stint {

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
