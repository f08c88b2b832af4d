#pragma once
// Call-site descriptors: everything about a site that is the same for every event it records lives
// here, in read-only data, and a record points to it instead of copying it (design §1 step 1).

#include <cstdint>      // std::uint8_t
#include <string_view>  // std::string_view

#include "stint/common/event_kind.hpp"
#include "stint/common/source_location.hpp"
#include "stint/capture/flop_formula.hpp"

namespace stint::detail {

/// What follows a record's fixed 24 bytes. Records are self-describing through their site, so one
/// session drains sites compiled with different configs.
enum class payload_kind : std::uint8_t {
    none,                ///< timing only
    runtime_name,        ///< a copied name (STINT_SCOPE_NAMED, record_function)
    inputs,              ///< captured op inputs (record_shapes; capture/detail/input_encoding.hpp)
    runtime_name_inputs, ///< a copied name, then captured inputs (record_function with args): the
                         ///< header's aux is the name's length; at the name's 8-byte-padded end,
                         ///< u32 inputs aux, u32 inputs bytes, the inputs
    native_stack,        ///< native return addresses (with_stack<native>; capture/native_stack.hpp)
    native_stack_inputs, ///< native return addresses, then captured inputs
    device_link,         ///< no payload and no event: the record's begin field is the external correlation id
                         ///< that the thread's previous scope record pushed to a device collector
    memory,              ///< an allocation, free or OOM (profile_memory; memory/report.hpp's memory_payload)
    outputs,             ///< stint::record_outputs: values encoded as inputs are; no event of its own, the
                         ///< drain gives them to the innermost op around the record
    point,               ///< a flow's or async span's point (begin and end ticks equal): a u64 id, then a
                         ///< runtime name when the header's aux (its length) is not 0
    args,                ///< stint::add_args (annotations/event_args.hpp): no event of its own, the drain
                         ///< gives them to the innermost event around the record
    counter,             ///< a counter's sample (begin and end ticks equal): its value in 8 bytes, an int64 or
                         ///< a double as the header's aux says (annotations/detail/counter_record.hpp)
};

/// Whether records of this kind carry a payload after their 24 bytes.
constexpr bool has_payload(payload_kind kind) noexcept {
    return kind != payload_kind::none && kind != payload_kind::device_link;
}

using stint::source_location;

/// A static call site. `static constexpr` at every STINT_* macro.
struct site {
    std::string_view name;
    event_kind kind = event_kind::user_annotation;
    payload_kind payload = payload_kind::none;
    source_location location = {};
    flop_formula flops = {};  ///< with_flops: how the op's flops are estimated at drain; empty: none
};

/// Site used by record_function and STINT_SCOPE_NAMED: the name travels in the payload.
inline constexpr site runtime_named_site{"", event_kind::user_annotation, payload_kind::runtime_name, {}};
/// Site used by stint::begin_event for an op whose name is copied (copy_name).
inline constexpr site runtime_named_op_site{"", event_kind::cpu_op, payload_kind::runtime_name, {}};
/// Site used by stint::module_scope: a module call named at run time.
inline constexpr site runtime_named_module_site{"", event_kind::module, payload_kind::runtime_name, {}};
/// Site of the record a scope appends after its own when it pushed an external correlation id to a device
/// collector (device/device_link.hpp): the drain links the device work launched under that id to the scope.
inline constexpr site device_link_site{"[stint] device link", event_kind::overhead, payload_kind::device_link, {}};
/// Site used by record_function with an args string.
inline constexpr site runtime_named_args_site{"", event_kind::user_annotation, payload_kind::runtime_name_inputs, {}};
/// Sites of the points of flows (annotations/flow.hpp) and async spans (annotations/async_scope.hpp).
inline constexpr site flow_begin_site{"flow", event_kind::flow_begin, payload_kind::point, {}};
inline constexpr site flow_end_site{"flow", event_kind::flow_end, payload_kind::point, {}};
inline constexpr site async_begin_site{"", event_kind::async_begin, payload_kind::point, {}};  // runtime names
inline constexpr site async_end_site{"", event_kind::async_end, payload_kind::point, {}};
/// Site of the record stint::add_args appends.
inline constexpr site args_site{"[stint] args", event_kind::overhead, payload_kind::args, {}};
/// Site of the record stint::record_outputs appends.
inline constexpr site outputs_site{"[stint] outputs", event_kind::overhead, payload_kind::outputs, {}};

}  // namespace stint::detail
