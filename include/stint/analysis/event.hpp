#pragma once
// One finished event, as every analysis and exporter reads it (design §1 step 5).

#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "stint/common/event_kind.hpp"
#include "stint/common/source_location.hpp"

namespace stint {

/// Index into an event_list; `no_index` means "none" (no parent, no child, no args).
using event_index = std::uint32_t;
inline constexpr event_index no_index = std::numeric_limits<event_index>::max();

/// What one captured op input was (record_shapes); decides how the trace shows it.
enum class input_kind : std::uint8_t {
    none,         ///< absent (an empty std::optional, an undefined tensor): type "", value ""
    tensor,       ///< dims, strides and dtype name
    tensor_list,  ///< a container of tensors: type "TensorList", nested dims
    scalar,       ///< a number, bool or enum: type "Scalar", dims []
    scalar_list,  ///< a list of numbers: type "ScalarList", value "[64, 32]"
    string,       ///< text: type "String", the text as its value (torch shows no positional strings)
    other,        ///< captured as present but opaque: type "", value ""
};

/// Captured inputs and framework annotations of one op (filled by capture policies). The vectors
/// that describe inputs have one entry per input, in argument order.
struct event_args {
    std::vector<std::vector<std::int64_t>> input_dims;     ///< "Input Dims" ([] for a non-tensor, as
                                                           ///< torch's key_averages shapes)
    std::vector<std::string> input_types;                  ///< "Input type"
    std::vector<std::vector<std::int64_t>> input_strides;  ///< "Input Strides" ([] when unknown)
    std::vector<std::string> concrete_inputs;              ///< "Concrete Inputs"; empty when concrete
                                                           ///< capture was off
    std::vector<input_kind> input_kinds;                   ///< what each input was
    /// Per input: the dims and strides of each tensor of a TensorList input (empty for the others);
    /// the trace nests them inside "Input Dims" / "Input Strides".
    std::vector<std::vector<std::vector<std::int64_t>>> tensor_list_dims;
    std::vector<std::vector<std::vector<std::int64_t>>> tensor_list_strides;
    std::string module_hierarchy;                          ///< "Module Hierarchy"
    std::string record_args;                               ///< record_function's args string
    bool truncated = false;                                ///< capture hit a bound ("Inputs truncated")
};

/// A finished event. Times are nanoseconds since the session's base time; the `*_us`
/// accessors give microseconds as doubles, the unit torch's FunctionEvent uses.
struct event {
    std::string_view name;             ///< static site name or a copy owned by the event_list
    std::uint64_t id = 0;              ///< "Record function id": unique, non-negative, per session
    std::uint32_t thread = 0;          ///< index into event_list::threads()
    event_kind kind = event_kind::user_annotation;
    std::uint16_t depth = 0;           ///< nesting depth on its thread, 0 for top level; stays at 65535 deeper
    std::int64_t start_ns = 0;
    std::int64_t end_ns = 0;
    std::int64_t self_ns = 0;          ///< duration minus the durations of direct children
    event_index parent = no_index;
    event_index first_child = no_index;
    event_index next_sibling = no_index;
    event_index args = no_index;       ///< into event_list::args_table(), when inputs were captured
    event_index stack = no_index;      ///< the stack's node (event_list::stack), when stacks were captured
    std::int64_t flops = -1;           ///< -1: no flop estimate for this event
    /// The site's source location (static data of the instrumented code), or nullptr for names
    /// made at run time (record_function, STINT_SCOPE_NAMED) and hand-built events.
    const source_location* location = nullptr;

    [[nodiscard]] std::int64_t duration_ns() const noexcept { return end_ns - start_ns; }
    [[nodiscard]] double start_us() const noexcept { return static_cast<double>(start_ns) / 1e3; }
    [[nodiscard]] double end_us() const noexcept { return static_cast<double>(end_ns) / 1e3; }
    /// torch: FunctionEvent.cpu_time_total (µs).
    [[nodiscard]] double cpu_time_total() const noexcept { return static_cast<double>(duration_ns()) / 1e3; }
    /// torch: FunctionEvent.self_cpu_time_total (µs).
    [[nodiscard]] double self_cpu_time_total() const noexcept { return static_cast<double>(self_ns) / 1e3; }
    [[nodiscard]] bool is_top_level() const noexcept { return parent == no_index; }
};

/// A thread that recorded into the session.
struct thread_info {
    std::uint64_t os_tid = 0;    ///< the kernel's thread id (gettid), as Kineto exports it
    std::string name;            ///< pthread name at registration, or stint::set_thread_name's
    std::uint64_t recorded = 0;  ///< records kept for this thread in the session
    std::uint64_t dropped = 0;   ///< records lost to the buffer budget, counted exactly
};

}  // namespace stint
