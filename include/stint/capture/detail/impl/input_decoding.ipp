#pragma once
// The bodies of capture/detail/input_decoding.hpp: captured inputs read back, and formatted as torch does.

#include "stint/capture/detail/input_decoding.hpp"

#include <cmath>  // std::fpclassify, std::isinf, std::isnan, std::signbit
#include <utility>  // std::move

#include "stint/common/number_text.hpp"

namespace stint::detail {

void wire_reader::int64s(std::vector<std::int64_t>& out, std::size_t n) {
    if (!has(n * 8)) return;
    out.resize(n);
    if (n != 0) std::memcpy(out.data(), at_, n * 8);
    at_ += n * 8;
}

void wire_reader::int32s(std::vector<std::int64_t>& out, std::size_t n) {
    if (!has(n * 4)) return;
    out.resize(n);
    for (std::size_t i = 0; i < n; ++i) {
        std::int32_t v = 0;
        std::memcpy(&v, at_ + i * 4, 4);
        out[i] = v;
    }
    at_ += n * 4;
}

tensor_identity read_identity(wire_reader& in, std::uint8_t flags) {
    const auto head = in.read<wire_identity>();
    tensor_identity id;
    id.key = id.storage = head.data;
    if ((flags & wire_has_storage) != 0) id.storage = in.read<std::uint64_t>();
    if ((flags & wire_has_key) != 0) id.key = in.read<std::uint64_t>();
    id.itemsize = head.itemsize;
    id.device = {static_cast<device_type>(head.device_type), head.device_index};
    // In elements, as torch's storage_offset; a data pointer below its storage gives 0.
    if (head.itemsize != 0 && head.data >= id.storage) {
        id.offset = static_cast<std::int64_t>((head.data - id.storage) / head.itemsize);
    }
    return id;
}

bool decode_entry(wire_reader& in, op_input& out, bool in_list) {
    const auto tag = static_cast<wire_tag>(in.u8());
    if (!in.ok()) return false;
    switch (tag) {
        case wire_tag::none: out.kind = input_kind::none; return true;
        case wire_tag::other:
        case wire_tag::dropped: out.kind = input_kind::other; return true;
        case wire_tag::tensor: {
            const std::uint8_t flags = in.u8();
            const std::uint8_t rank = in.u8();
            const std::uint8_t dtype_len = in.u8();
            out.kind = input_kind::tensor;
            out.dtype.assign(in.text(dtype_len));
            if ((flags & wire_narrow) != 0) {
                in.int32s(out.dims, rank);
                if ((flags & wire_has_strides) != 0) in.int32s(out.strides, rank);
            } else {
                in.int64s(out.dims, rank);
                if ((flags & wire_has_strides) != 0) in.int64s(out.strides, rank);
            }
            out.cut = (flags & wire_cut) != 0;
            if ((flags & wire_has_identity) != 0) out.identity = read_identity(in, flags);
            return in.ok();
        }
        case wire_tag::tensor_list: {
            if (in_list) return false;
            const std::uint8_t flags = in.u8();
            const std::uint16_t count = in.u16();
            out.kind = input_kind::tensor_list;
            out.cut = (flags & wire_cut) != 0;
            out.tensors.resize(count);
            for (op_input& t : out.tensors) {
                if (!decode_entry(in, t, true)) return false;
            }
            return true;
        }
        case wire_tag::int64:
        case wire_tag::uint64:
            out.kind = input_kind::scalar;
            out.values_type = tag == wire_tag::int64 ? scalar_type::integer : scalar_type::unsigned_integer;
            out.integers.push_back(in.read<std::int64_t>());
            return in.ok();
        case wire_tag::real:
            out.kind = input_kind::scalar;
            out.values_type = scalar_type::real;
            out.reals.push_back(in.read<double>());
            return in.ok();
        case wire_tag::boolean:
            out.kind = input_kind::scalar;
            out.values_type = scalar_type::boolean;
            out.integers.push_back(in.u8() != 0 ? 1 : 0);
            return in.ok();
        case wire_tag::int_list:
        case wire_tag::uint_list:
        case wire_tag::real_list:
        case wire_tag::bool_list: {
            const std::uint8_t flags = in.u8();
            const std::uint8_t count = in.u8();
            out.kind = input_kind::scalar_list;
            out.cut = (flags & wire_cut) != 0;
            if (tag == wire_tag::real_list) {
                out.values_type = scalar_type::real;
                for (std::size_t i = 0; i < count && in.ok(); ++i) out.reals.push_back(in.read<double>());
            } else if (tag == wire_tag::bool_list) {
                out.values_type = scalar_type::boolean;
                for (std::size_t i = 0; i < count && in.ok(); ++i) out.integers.push_back(in.u8() != 0 ? 1 : 0);
            } else {
                out.values_type = tag == wire_tag::int_list ? scalar_type::integer : scalar_type::unsigned_integer;
                in.int64s(out.integers, count);
            }
            return in.ok();
        }
        case wire_tag::string: {
            const std::uint8_t flags = in.u8();
            const std::uint16_t len = in.u16();
            out.kind = input_kind::string;
            out.cut = (flags & wire_cut) != 0;
            out.text.assign(in.text(len));
            return in.ok();
        }
    }
    return false;
}

op_inputs decode_inputs(std::string_view op_name, std::span<const std::byte> bytes, std::uint32_t aux) {
    op_inputs result;
    result.set_op_name(op_name);
    result.set_truncated((aux & inputs_aux_truncated) != 0);
    wire_reader in(bytes);
    const std::uint32_t count = aux & inputs_aux_count_mask;
    auto& inputs = result.mutable_inputs();  // std::vector<op_input>&
    inputs.reserve(count);
    for (std::uint32_t i = 0; i < count; ++i) {
        op_input entry;
        if (!decode_entry(in, entry, false)) {
            result.set_truncated(true);
            break;
        }
        inputs.push_back(std::move(entry));
    }
    return result;
}

void append_real(std::string& out, double d) {
    const int c = std::fpclassify(d);
    if ((c == FP_NORMAL || c == FP_ZERO) && d > -9.2e18 && d < 9.2e18) {
        const auto i = static_cast<std::int64_t>(d);
        if (static_cast<double>(i) == d) {
            append_integer(out, i);
            out += '.';
            return;
        }
    }
    if (std::isnan(d)) {
        out += std::signbit(d) ? "-nan" : "nan";
        return;
    }
    if (std::isinf(d)) {
        out += d < 0 ? "-inf" : "inf";
        return;
    }
    append_general(out, d, 17);
}

void append_scalar_value(std::string& out, const op_input& in, std::size_t i) {
    switch (in.values_type) {
        case scalar_type::integer: append_integer(out, in.integers[i]); return;
        case scalar_type::unsigned_integer: append_integer(out, static_cast<std::uint64_t>(in.integers[i])); return;
        case scalar_type::boolean: out += in.integers[i] != 0 ? "True" : "False"; return;
        case scalar_type::real: append_real(out, in.reals[i]); return;
    }
}

std::string concrete_text(const op_input& in) {
    std::string out;
    switch (in.kind) {
        case input_kind::scalar:
            if (!in.integers.empty() || !in.reals.empty()) append_scalar_value(out, in, 0);
            break;
        case input_kind::scalar_list: {
            out += '[';
            const std::size_t n = in.values_type == scalar_type::real ? in.reals.size() : in.integers.size();
            for (std::size_t i = 0; i < n; ++i) {
                if (i != 0) out += ", ";
                append_scalar_value(out, in, i);
            }
            if (in.cut) out += n == 0 ? "..." : ", ...";
            out += ']';
            break;
        }
        case input_kind::string: out = in.text; break;
        case input_kind::none:
        case input_kind::tensor:
        case input_kind::tensor_list:
        case input_kind::other: break;
    }
    return out;
}

std::string type_text(const op_input& in) {
    switch (in.kind) {
        case input_kind::tensor: return in.dtype;
        case input_kind::tensor_list: return "TensorList";
        case input_kind::scalar: return "Scalar";
        case input_kind::scalar_list: return "ScalarList";
        case input_kind::string: return "String";
        case input_kind::none:
        case input_kind::other: break;
    }
    return {};
}

void inputs_to_args(const op_inputs& inputs, bool concrete, event_args& args) {
    const std::size_t n = inputs.size();
    args.input_dims.resize(n);
    args.input_strides.resize(n);
    args.input_types.resize(n);
    args.input_kinds.resize(n);
    args.tensor_list_dims.resize(n);
    args.tensor_list_strides.resize(n);
    if (concrete) args.concrete_inputs.resize(n);
    for (std::size_t i = 0; i < n; ++i) {
        const op_input& in = inputs[i];
        args.input_kinds[i] = in.kind;
        args.input_types[i] = type_text(in);
        if (in.kind == input_kind::tensor) {
            args.input_dims[i] = in.dims;
            args.input_strides[i] = in.strides;
        } else if (in.kind == input_kind::tensor_list) {
            for (const op_input& t : in.tensors) {
                args.tensor_list_dims[i].push_back(t.dims);
                args.tensor_list_strides[i].push_back(t.strides);
            }
        }
        if (concrete) args.concrete_inputs[i] = concrete_text(in);
    }
    args.truncated = args.truncated || inputs.truncated();
}

}  // namespace stint::detail
