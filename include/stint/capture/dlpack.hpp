#pragma once
// DLPack tensors as op inputs, with no trait to write: a `DLTensor` (dlpack/dlpack.h: data, device, ndim,
// dtype {code, bits, lanes}, shape, strides, byte_offset) or anything holding one as `dl_tensor`
// (`DLManagedTensor`, `DLManagedTensorVersioned`), by value, reference or pointer. They are recognised
// by their members, so stint includes no DLPack header and the support is there whichever header came
// first (or a framework's own copy of the struct).
//
//     DLTensor t = ...;               // float32, shape {64, 32}, strides null
//     STINT_OP(cfg, "my::gemm", t);   // Input type "float", Input Dims [64, 32], strides [32, 1]

#include <array>        // std::array
#include <concepts>     // std::convertible_to
#include <cstddef>      // std::size_t
#include <cstdint>      // std::int64_t, std::uint8_t, std::uint16_t, std::uintptr_t
#include <span>         // std::span
#include <string_view>  // std::string_view
#include <type_traits>  // std::remove_cvref_t, std::remove_pointer_t

#include "stint/capture/tensor_address.hpp"
#include "stint/common/device.hpp"

namespace stint::detail {

/// A DLTensor, by its members (dlpack.h's names and types).
template <class T>
concept dlpack_tensor = requires(const T& t) {
    { t.data } -> std::convertible_to<const void*>;
    { t.device.device_type } -> std::convertible_to<int>;
    { t.device.device_id } -> std::convertible_to<int>;
    { t.ndim } -> std::convertible_to<int>;
    { t.dtype.code } -> std::convertible_to<std::uint8_t>;
    { t.dtype.bits } -> std::convertible_to<std::uint8_t>;
    { t.dtype.lanes } -> std::convertible_to<std::uint16_t>;
    { t.shape } -> std::convertible_to<const std::int64_t*>;
    { t.strides } -> std::convertible_to<const std::int64_t*>;
    { t.byte_offset } -> std::convertible_to<std::uint64_t>;
};

/// A DLManagedTensor (or DLPack 1.0's DLManagedTensorVersioned): a DLTensor as `dl_tensor`.
template <class T>
concept dlpack_managed_tensor = requires(const T& t) { requires dlpack_tensor<std::remove_cvref_t<decltype(t.dl_tensor)>>; };

template <class T>
concept dlpack_input = dlpack_tensor<T> || dlpack_managed_tensor<T>;

/// What an unreadable DLTensor (ndim < 0, or a null shape with ndim > 0) records as its input type.
inline constexpr std::string_view invalid_dlpack_tensor = "invalid DLTensor";

/// torch's name of a DLPack dtype (the TypeMeta name torch's profiler writes: "float", "c10::Half",
/// "long int"), or "" for one torch has no type for (vector lanes, opaque handles, odd widths).
constexpr std::string_view dlpack_dtype_name(std::uint8_t code, std::uint8_t bits, std::uint16_t lanes) noexcept {
    if (lanes != 1) return "";
    switch (code) {
        case 0:  // kDLInt
            return bits == 8 ? "signed char" : bits == 16 ? "short int" : bits == 32 ? "int" : bits == 64 ? "long int" : "";
        case 1:  // kDLUInt
            return bits == 8    ? "unsigned char"
                   : bits == 16 ? "short unsigned int"
                   : bits == 32 ? "unsigned int"
                   : bits == 64 ? "long unsigned int"
                                : "";
        case 2:  // kDLFloat
            return bits == 16 ? "c10::Half" : bits == 32 ? "float" : bits == 64 ? "double" : "";
        case 4:  // kDLBfloat
            return bits == 16 ? "c10::BFloat16" : "";
        case 5:  // kDLComplex
            return bits == 32    ? "c10::complex<c10::Half>"
                   : bits == 64  ? "c10::complex<float>"
                   : bits == 128 ? "c10::complex<double>"
                                 : "";
        case 6:  // kDLBool (DLPack 0.8)
            return bits == 8 ? "bool" : "";
        default: return "";
    }
}

/// The name of a dtype torch has no name for: "DLDataType(code, bits, lanes)", into `out`.
inline std::string_view dlpack_dtype_fallback(std::array<char, 48>& out, unsigned code, unsigned bits,
                                              unsigned lanes) noexcept {
    constexpr std::string_view head = "DLDataType(";
    char* p = out.data();
    for (char c : head) *p++ = c;
    const unsigned fields[3] = {code, bits, lanes};
    for (int i = 0; i < 3; ++i) {
        if (i != 0) {
            *p++ = ',';
            *p++ = ' ';
        }
        char digits[10];  // at most 5 each (code and bits are 8-bit, lanes 16-bit): the array has room
        int n = 0;
        unsigned v = fields[i];
        do {
            digits[n++] = static_cast<char>('0' + v % 10);
            v /= 10;
        } while (v != 0 && n < 10);
        while (n > 0) *p++ = digits[--n];
    }
    *p++ = ')';
    // From a const char*: a string_view made from a char* makes gcc check that char* is a contiguous
    // iterator (its iterator-pair constructor), 5 % of <iostream>'s cost in every file; the standard
    // headers checked const char* already (design §15).
    const char* const text = out.data();
    return {text, static_cast<std::size_t>(p - text)};
}

/// Where a DLPack device's memory is, as stint names devices: the host (kDLCPU, and pinned host memory:
/// kDLCUDAHost, kDLROCMHost, as torch makes them CPU tensors) or a CUDA device (kDLCUDA, kDLCUDAManaged;
/// kDLROCM too, as torch's ROCm builds name HIP devices "cuda"). False for devices stint has no type for.
constexpr bool dlpack_device(int type, int id, stint::device& out) noexcept {
    switch (type) {
        case 1:   // kDLCPU
        case 3:   // kDLCUDAHost
        case 11:  // kDLROCMHost
            out = {device_type::cpu, -1};
            return true;
        case 2:   // kDLCUDA
        case 10:  // kDLROCM
        case 13:  // kDLCUDAManaged
            out = {device_type::cuda, id};
            return true;
        default: return false;
    }
}

/// Captures a DLTensor through `w` (stint::input_writer; a template so this header needs none of it):
/// dims, strides (row-major ones when `strides` is null, as DLPack defines), torch's dtype name and,
/// while an execution trace records, its identity: data + byte_offset in the allocation at data.
template <class Writer, class T>
void capture_dlpack(Writer& w, const T& in) noexcept {
    if constexpr (dlpack_managed_tensor<T>) {
        capture_dlpack(w, in.dl_tensor);
    } else {
        // std::span<const std::int64_t>, named through `in`'s shape: a span built in a template's body
        // but of no template parameter would be compiled in every file that includes this header (its
        // constructors' concepts).
        using int64s = std::span<std::remove_pointer_t<decltype(static_cast<const std::int64_t*>(in.shape))>>;
        const int ndim = static_cast<int>(in.ndim);
        const std::int64_t* shape = in.shape;
        if (ndim < 0 || (ndim > 0 && shape == nullptr)) {
            w.tensor(invalid_dlpack_tensor, int64s{});
            return;
        }
        const int64s dims(shape, static_cast<std::size_t>(ndim));
        const auto code = static_cast<std::uint8_t>(in.dtype.code);
        const auto bits = static_cast<std::uint8_t>(in.dtype.bits);
        const auto lanes = static_cast<std::uint16_t>(in.dtype.lanes);
        std::array<char, 48> fallback;
        std::string_view dtype = dlpack_dtype_name(code, bits, lanes);
        if (dtype.empty()) dtype = dlpack_dtype_fallback(fallback, code, bits, lanes);

        tensor_address address;
        if (w.identities() && in.data != nullptr &&
            dlpack_device(static_cast<int>(in.device.device_type), static_cast<int>(in.device.device_id),
                          address.device)) {
            const auto base = reinterpret_cast<std::uintptr_t>(static_cast<const void*>(in.data));
            address.data = reinterpret_cast<const void*>(base + static_cast<std::uintptr_t>(in.byte_offset));
            address.storage = static_cast<const void*>(in.data);
            address.itemsize = (static_cast<std::size_t>(bits) * lanes + 7) / 8;
        }

        const std::int64_t* strides = in.strides;
        if (strides != nullptr) {
            w.tensor(dtype, dims, int64s(strides, dims.size()), address);
            return;
        }
        // Compact and row-major. Shapes of more dims than this keep no strides (the writer keeps 255
        // dims at most; real tensors have a handful).
        constexpr std::size_t max_computed = 32;
        if (dims.size() > max_computed) {
            w.tensor(dtype, dims, address);
            return;
        }
        std::array<std::int64_t, max_computed> row_major;
        std::int64_t step = 1;
        for (std::size_t i = dims.size(); i-- > 0;) {
            row_major[i] = step;
            step *= dims[i];
        }
        w.tensor(dtype, dims, int64s(row_major.data(), dims.size()), address);
    }
}

}  // namespace stint::detail
