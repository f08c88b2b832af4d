#pragma once
// Call-site descriptors: everything about a site that is the same for every event it records lives
// here, in read-only data, and a record points to it instead of copying it (design §1 step 1).

#include <cstdint>
#include <string_view>

#include "stint/analysis/event.hpp"

namespace stint::detail {

/// What follows a record's fixed 24 bytes. Records are self-describing through their site, so one
/// session drains sites compiled with different configs.
enum class payload_kind : std::uint8_t {
    none,          ///< timing only
    runtime_name,  ///< a copied name (STINT_SCOPE_NAMED, record_function)
};

/// Where a site is in the source. (std::source_location is unusable with clang 14 and libstdc++ 12;
/// the builtins behind it work in both compilers.)
struct source_location {
    const char* file = "";
    const char* function = "";
    std::uint32_t line = 0;
};

/// A static call site. `static constexpr` at every STINT_* macro.
struct site {
    std::string_view name;
    event_kind kind = event_kind::user_annotation;
    payload_kind payload = payload_kind::none;
    source_location location = {};
};

/// Site used by record_function and STINT_SCOPE_NAMED: the name travels in the payload.
inline constexpr site runtime_named_site{"", event_kind::user_annotation, payload_kind::runtime_name, {}};

}  // namespace stint::detail
