// The public header of a small "framework" (a shared library built with hidden visibility): it
// includes only stint's annotation header, as a framework's headers should, and records its ops as
// cpu_op with their input shapes.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include <stint/annotate.hpp>

namespace framework {

/// A tensor as the framework has it: stint captures it through tensor_like (sizes() and dtype()).
struct tensor {
    std::vector<std::int64_t> shape;
    [[nodiscard]] const std::vector<std::int64_t>& sizes() const { return shape; }
    [[nodiscard]] std::string_view dtype() const { return "float"; }
};

using profiled = stint::config<stint::record_shapes>;

/// An op defined in the header: users' files that call it record it too.
inline tensor add(const tensor& a, const tensor& b) {
    STINT_OP(profiled, "framework::add", a, b);
    return a;
}

}  // namespace framework

extern "C" {
/// linear = matmul then add, each an op, nested under "framework::linear".
__attribute__((visibility("default"))) void framework_linear(std::int64_t rows, std::int64_t cols);
/// Runs framework_linear on a worker thread of the library's own, named "framework worker".
__attribute__((visibility("default"))) void framework_linear_on_worker();
}
