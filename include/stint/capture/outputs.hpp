#pragma once
// An op's outputs (stint::record_outputs): captured as inputs are, attached at drain to the innermost
// op open around the call, so that an execution trace can tell which op produced the tensors another
// consumed.

#include <cstddef>  // std::byte
#include <cstdint>  // std::uint32_t, std::uint64_t

#include "stint/capture/inputs.hpp"
#include "stint/policies.hpp"
#include "stint/recording/buffer.hpp"
#include "stint/recording/ticks.hpp"
#include "stint/recording/slow_path.hpp"
#include "stint/recording/state.hpp"
#include "stint/recording/site.hpp"

namespace stint::detail {

// The out-of-line part: encodes the values into a bounded buffer (record_shapes' default bounds) and
// appends one record at the thread's current depth; the drain gives it to the op around it.
template <class... Values>
STINT_DETAIL_NOINLINE void append_outputs(std::uint32_t state, const Values&... values) noexcept {
    const std::uint32_t depth = current_depth();
    if (depth == 0) return;  // no scope open on this thread: nothing to attach them to
    using limits = record_shapes;  // its default bounds
    alignas(8) std::byte buffer[limits::max_bytes];
    input_writer writer(buffer, limits::max_bytes, limits::max_inputs, limits::max_dims, limits::max_bytes / 4,
                        capture_state.concrete.load(std::memory_order_relaxed),
                        capture_state.identities.load(std::memory_order_relaxed));
    try {
        (writer.value(values), ...);
    } catch (...) {
        writer.mark_truncated();  // an accessor threw: keep what was captured
    }
    const std::uint64_t now = read_ticks();
    append_record_payload(&outputs_site, depth, now, now, state, writer.aux(),
                          payload_bytes{buffer, writer.size()});
}

}  // namespace stint::detail

namespace stint {

/// Records `values` as the outputs of the innermost op (STINT_OP) open on this thread, or of the
/// innermost scope when no op is open; captured as op inputs are (input_traits, record_shapes'
/// default bounds), tensors with their identity while an execution trace records. The trace shows
/// them as "Output Dims" / "Output type", the execution trace as the node's outputs. Costs one
/// relaxed load unless a session records, and one more unless that session keeps outputs (its
/// profiler's config has record_shapes, or an execution trace records); outside every scope it
/// does nothing. STINT_OUTPUTS is the same call, compiled out by STINT_DISABLE.
///
///     STINT_OP(shapes, "my::mul", a, b);
///     tensor c = a * b;
///     stint::record_outputs(c);
template <class... Values>
void record_outputs(const Values&... values) noexcept {
    const std::uint32_t state = detail::recording.value.load(std::memory_order_relaxed);
    if (!detail::is_recording_state(state) || !detail::capture_state.outputs.load(std::memory_order_relaxed)) {
        return;
    }
    detail::append_outputs(state, values...);
}

}  // namespace stint

#if defined(STINT_DISABLE)
#include "stint/detail/compiled_out.hpp"  // every macro compiled out, in one place
#else
/// stint::record_outputs(...); compiled out (arguments not evaluated) under STINT_DISABLE.
#define STINT_OUTPUTS(...) ::stint::record_outputs(__VA_ARGS__)
#endif
