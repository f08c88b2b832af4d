#pragma once
// Policy tags: what a stint::config can add to the records of its sites (design §2). Each tag names
// what the user gets; an absent tag leaves no code, no branch and no byte in the record.
//
// A policy may carry constexpr parameters. Tags of one feature share a `policy_family` (the tag
// `config::has` answers for), and a tag may `imply` another, as with_flops implies record_shapes.

#include "stint/detail/require_cxx20.hpp"

#include <cstddef>  // std::size_t

namespace stint {

namespace detail {
struct record_shapes_family {};
struct with_stack_family {};
}  // namespace detail

/// Bounds of one op's input capture. The capture is encoded into a buffer of `MaxBytes` on the op
/// scope's stack frame and copied into the record at scope exit, so these bound both the stack and
/// the record; an input that does not fit marks the record truncated ("Inputs truncated" in traces).
///
///     using small = stint::config<stint::record_shapes_limits<8, 8, 256>>;  // 8 inputs, 8 dims, 256 B
///     STINT_OP(small, "my::op", a, b);
///
/// - `MaxInputs`: inputs kept per op (also tensors kept per tensor list);
/// - `MaxDims`: integers kept per tensor shape, per tensor stride and per scalar list;
/// - `MaxBytes`: encoded bytes per op (dtype names and strings count too), at least 64.
template <std::size_t MaxInputs, std::size_t MaxDims, std::size_t MaxBytes>
struct record_shapes_limits {
    static_assert(MaxInputs >= 1 && MaxInputs <= 4096, "stint: record_shapes_limits: MaxInputs must be 1..4096");
    static_assert(MaxDims >= 1 && MaxDims <= 255, "stint: record_shapes_limits: MaxDims must be 1..255");
    static_assert(MaxBytes >= 64 && MaxBytes <= 65536, "stint: record_shapes_limits: MaxBytes must be 64..65536");
    using policy_family = detail::record_shapes_family;
    static constexpr std::size_t max_inputs = MaxInputs;
    static constexpr std::size_t max_dims = MaxDims;
    static constexpr std::size_t max_bytes = MaxBytes;
};

/// Records each op's inputs (STINT_OP's arguments): kind, dtype, dims, strides and scalar values,
/// shown as "Input Dims", "Input type", "Input Strides" and "Concrete Inputs" in traces and used by
/// `key_averages({.group_by_input_shape = true})`. Costs an encode of the inputs at op entry and
/// their bytes in the record (three rank-2 tensors: 75 bytes, about 3x a timing-only op at the minimum,
/// 3.5x at the median; bench/scope_bench.cpp). Limits: 32 inputs, 16 integers per shape or list, 512
/// bytes per op; choose others with `record_shapes_limits`.
///
///     using shapes = stint::config<stint::record_shapes>;
///     STINT_OP(shapes, "aten::mm", a, b);
struct record_shapes : record_shapes_limits<32, 16, 512> {};

/// Estimates each op's floating-point operations from its recorded inputs, at analysis time (never
/// on the hot path): `event::flops`, the table's "Total MFLOPs" column. Implies `record_shapes` (as
/// torch turns shapes on with flops), and costs nothing beyond it. Formulas: torch's profiler ones by
/// op name (aten::mm, addmm, bmm, baddbmm, matmul, conv1d/2d/3d and transposed, linear, add, mul),
/// `stint::register_flop_formula`, or one named at the site with STINT_OP_FLOPS.
///
///     using flops = stint::config<stint::with_flops>;
///     STINT_OP(flops, "aten::mm", a, b);  // 2 * M * K * N flops
struct with_flops {
    using implies = record_shapes;  // also what makes it a policy_tag (config.hpp)
};

/// with_stack's mode: the chain of enclosing stint scopes, each as its site's source location.
struct scopes {
    static constexpr std::size_t native_depth = 0;
};

/// with_stack's mode: scopes, and for the config's own sites (STINT_OP, and STINT_SCOPE when it is
/// STINT_CONFIG) up to `Depth` native return addresses, symbolised (demangled) when the session is
/// drained, never while recording.
template <std::size_t Depth>
struct native_frames {
    static_assert(Depth >= 1 && Depth <= 128, "stint: native_frames<Depth>: Depth must be 1..128");
    static constexpr std::size_t native_depth = Depth;
};

/// native_frames of a depth that shows a typical call path: 32 frames.
using native = native_frames<32>;

/// Gives every event a stack, innermost frame first (`event_list::stack`): its site's
/// `file(line): function`, then each enclosing scope's (a name for scopes named at run time). Built
/// when the session is drained from the sites and the scope tree: costs nothing while recording.
/// Enables `profiler::export_stacks` (flame graphs), the table's "Source Location" column,
/// `key_averages({.group_by_stack_n = n})` and the trace's "Call stack" arg. `with_stack<native>`
/// stacks native frames instead for the config's own sites: a `backtrace()` of up to 32 frames at
/// scope entry (about a microsecond) and 8 bytes per frame in the record.
///
///     using stacks = stint::config<stint::with_stack<>>;
///     stint::profiler<stacks> prof;  ...  prof.export_stacks("cpu.stacks");
template <class Mode = scopes>
struct with_stack {
    using policy_family = detail::with_stack_family;
    static constexpr std::size_t native_depth = Mode::native_depth;
};

/// Gives each op the module path it ran in (`event_args::module_hierarchy`, the trace's "Module
/// Hierarchy": `TOP(Net)::forward.encoder(Encoder)::forward.`) from the STINT_MODULE scopes around it.
/// Built when the session is drained: costs nothing while recording (the module scopes are ordinary
/// scopes).
///
///     using modules = stint::config<stint::with_modules>;
struct with_modules {
    using policy_family = with_modules;  // a policy_tag (config.hpp)
};

/// Records memory allocations and frees into a session (torch's profile_memory): every
/// stint::report_alloc / report_free / report_oom (memory/report.hpp) and the adapters that call them
/// (tracking_allocator, tracking_resource, STINT_TRACK_GLOBAL_NEW) become "[memory]" and "[OutOfMemory]"
/// instants on the reporting thread, charged to the ops open there (`event_list::memory_usage_of`).
/// Without a live session of such a config each report costs one relaxed load.
///
///     using mem = stint::config<stint::profile_memory>;
///     stint::profiler<mem> prof;
struct profile_memory {
    using policy_family = profile_memory;  // a policy_tag (config.hpp)
};

}  // namespace stint
