#pragma once
// What produced an event: vocabulary shared by the recording engine (sites) and the analysis (events).

#include "stint/detail/require_cxx20.hpp"

#include <cstdint>
#include <string_view>

namespace stint {

/// What produced an event; decides the Chrome trace `cat` and which table rows it feeds.
enum class event_kind : std::uint8_t {
    user_annotation,  ///< STINT_SCOPE, STINT_SCOPE_NAMED, record_function, ProfilerStep#N
    cpu_op,           ///< STINT_OP
    instant,          ///< STINT_INSTANT (zero duration)
    module,           ///< STINT_MODULE, stint::module_scope: one call of a model module's method
    overhead,         ///< stint's own work during a session (registering a thread, taking a buffer chunk)
};

/// Chrome trace category of a kind, as Kineto names it.
constexpr std::string_view category_name(event_kind kind) noexcept {
    switch (kind) {
        case event_kind::user_annotation: return "user_annotation";
        case event_kind::cpu_op: return "cpu_op";
        case event_kind::instant: return "cpu_instant_event";
        case event_kind::module: return "user_annotation";
        case event_kind::overhead: return "overhead";
    }
    return "unknown";
}

}  // namespace stint
