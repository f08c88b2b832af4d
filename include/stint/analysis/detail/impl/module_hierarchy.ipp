#pragma once
// The bodies of analysis/detail/module_hierarchy.hpp: parsing module calls and building each op's path.

#include "stint/analysis/detail/module_hierarchy.hpp"

#include <cstddef>  // std::size_t
#include <string>   // std::string
#include <utility>  // std::move

namespace stint::detail {

module_call parse_module_call(std::string_view name) {
    if (name.starts_with("SELF::")) return {"SELF", {}, name.substr(6)};
    const std::size_t open = name.find('(');
    const std::size_t close = name.rfind(")::");
    if (open == std::string_view::npos || close == std::string_view::npos || close < open) return {name, {}, {}};
    return {name.substr(0, open), name.substr(open + 1, close - open - 1), name.substr(close + 3)};
}

void assign_module_hierarchy(event_store& events, std::vector<event_args>& args) {
    struct path {
        std::string text;       // "TOP(C)::forward.A0(A)::forward."
        std::string_view type;  // the innermost module's type, for SELF
    };
    std::vector<path> paths;  // the paths module calls opened
    std::vector<event_index> path_of(events.size(), no_index);  // per event: the path around it
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
