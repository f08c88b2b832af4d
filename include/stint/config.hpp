#pragma once
// Compile-time configuration (design §2): a config is a list of policy tags; absent features leave
// no code, no branch and no bytes in the record.

#include <concepts>
#include <type_traits>

namespace stint {

/// A recording configuration made of policy tags.
///
///     using timing_only = stint::config<>;
///     stint::profiler<timing_only> prof;
template <class... Policies>
struct config {
    static constexpr bool enabled = true;
    /// Whether the policy P was chosen.
    template <class P>
    static constexpr bool has = (std::is_same_v<P, Policies> || ...);
};

/// The configuration that records nothing: scopes and ops built with it compile to nothing and a
/// profiler of it is a no-op.
struct disabled {
    static constexpr bool enabled = false;
    template <class P>
    static constexpr bool has = false;
};

/// What every configuration type provides.
template <class T>
concept configuration = requires {
    { T::enabled } -> std::convertible_to<bool>;
};

}  // namespace stint
