#pragma once
// with_modules at drain: each op's "Module Hierarchy" from the module scopes around it, in torch's
// form: `TOP(C)::forward.A0(A)::forward.SELF(A)::forward_impl_.` (the outermost module as TOP, then
// `attribute(Type)::method.` per module call, SELF for a call on the enclosing module's object).

#include <string_view>  // std::string_view
#include <vector>       // std::vector

#include "stint/analysis/detail/event_store.hpp"
#include "stint/analysis/event.hpp"
#include "stint/detail/separate_compilation.hpp"

namespace stint::detail {

/// One module call's parts, from its event name `attribute(Type)::method` (or `SELF::method`).
struct module_call {
    std::string_view attribute;
    std::string_view type;  // empty for SELF: the enclosing module's
    std::string_view method;
};

STINT_DECL module_call parse_module_call(std::string_view name);

/// Sets `event_args::module_hierarchy` of every cpu_op inside at least one module scope, adding
/// args to ops that have none. Events must be ordered parents first.
STINT_DECL void assign_module_hierarchy(event_store& events, std::vector<event_args>& args);

}  // namespace stint::detail

#if defined(STINT_HEADER_ONLY)
#include "stint/analysis/detail/impl/module_hierarchy.ipp"
#endif
