#pragma once
// with_modules at drain: each op's "Module Hierarchy" from the module scopes around it, in torch's
// form: `TOP(C)::forward.A0(A)::forward.SELF(A)::forward_impl_.` (the outermost module as TOP, then
// `attribute(Type)::method.` per module call, SELF for a call on the enclosing module's object).

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "stint/analysis/detail/event_store.hpp"
#include "stint/analysis/event.hpp"
#include "stint/detail/deferred.hpp"

namespace stint::detail {

/// One module call's parts, from its event name `attribute(Type)::method` (or `SELF::method`).
struct module_call {
    std::string_view attribute;
    std::string_view type;  // empty for SELF: the enclosing module's
    std::string_view method;
};

template <class = void>
module_call parse_module_call(std::string_view name) {
    if (name.starts_with("SELF::")) return {"SELF", {}, name.substr(6)};
    const std::size_t open = name.find('(');
    const std::size_t close = name.rfind(")::");
    if (open == std::string_view::npos || close == std::string_view::npos || close < open) return {name, {}, {}};
    return {name.substr(0, open), name.substr(open + 1, close - open - 1), name.substr(close + 3)};
}

/// Sets `event_args::module_hierarchy` of every cpu_op inside at least one module scope, adding
/// args to ops that have none. Events must be ordered parents first.
// Its arguments and locals are deferred_t<T, Unused> (exactly T; stint/detail/deferred.hpp): the body
// is checked only when a list with modules is built.
template <class Unused = void>
void assign_module_hierarchy(deferred_t<event_store, Unused>& events,
                             deferred_t<std::vector<event_args>, Unused>& args) {
    struct path {
        std::string text;       // "TOP(C)::forward.A0(A)::forward."
        std::string_view type;  // the innermost module's type, for SELF
    };
    deferred_t<std::vector<path>, Unused> paths;  // the paths module calls opened
    deferred_t<std::vector<event_index>, Unused> path_of(events.size(), no_index);  // per event: the path around it
    for (event_index i = 0; i < events.size(); ++i) {
        const event_row& e = events.row(i);
        const event_index outer = e.parent == no_index ? no_index : path_of[e.parent];
        if (e.kind == event_kind::module) {
            const module_call call = parse_module_call(events.name(i).text);
            path p;
            if (outer != no_index) p = paths[outer];
            const std::string_view type = call.type.empty() ? p.type : call.type;
            const std::string_view attribute = outer == no_index ? std::string_view("TOP") : call.attribute;
            p.text.append(attribute).append("(").append(type).append(")::").append(call.method).append(".");
            p.type = type;
            paths.push_back(std::move(p));
            path_of[i] = static_cast<event_index>(paths.size() - 1);
            continue;
        }
        path_of[i] = outer;
        if (e.kind != event_kind::cpu_op || outer == no_index) continue;
        event_extra& x = events.extra_to_write(i);
        if (x.args == no_index) {
            x.args = static_cast<event_index>(args.size());
            args.emplace_back();
        }
        args[x.args].module_hierarchy = paths[outer].text;
    }
}

}  // namespace stint::detail
