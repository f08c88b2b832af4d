#pragma once
// Where a tensor's elements are (stint::tensor_address): what input_writer::tensor takes from traits
// and built-in captures (inputs.hpp, dlpack.hpp) to give the execution trace tensor and storage ids.

#include <cstddef>  // std::size_t

#include "stint/common/device.hpp"

namespace stint {

/// Where a tensor's elements are: what the execution trace makes its tensor and storage ids from, so
/// that a reader can tell which op produced what another consumed. Captured only while an execution
/// trace records. Give it to input_writer::tensor from your input_traits; stint's built-in captures
/// fill it from `data()` (or `data_handle()`, `data_ptr()`).
///
///     w.tensor("float", t.sizes(), t.strides(),
///              stint::tensor_address{.data = t.data(), .itemsize = 4, .storage = t.base()});
struct tensor_address {
    const void* data = nullptr;     ///< its first element; nullptr: no identity
    std::size_t itemsize = 0;       ///< bytes per element; 0: unknown
    stint::device device = {};      ///< where the memory is
    const void* storage = nullptr;  ///< the start of the allocation a view looks into (nullptr: data)
    const void* key = nullptr;      ///< the tensor's own identity when several share data (nullptr: data)
};

}  // namespace stint
