#pragma once
// Compile-time configuration (design §2): a config is a list of policy tags; absent features leave
// no code, no branch and no bytes in the record.

#include "stint/detail/require_cxx20.hpp"

#include <concepts>     // std::convertible_to
#include <type_traits>  // std::is_same_v

namespace stint {

namespace detail {

// The tag a policy answers `has` for: its `policy_family` when it declares one (record_shapes and
// record_shapes_limits<...> are one feature), else the tag itself.
template <class P>
struct policy_family {
    using type = P;
};
template <class P>
    requires requires { typename P::policy_family; }
struct policy_family<P> {
    using type = typename P::policy_family;
};

template <class P, class Q>
inline constexpr bool same_policy = std::is_same_v<typename policy_family<P>::type, typename policy_family<Q>::type>;

// Whether the chosen policy T provides P: it is P, or it implies P (with_flops implies record_shapes).
template <class T, class P>
constexpr bool provides() {
    if constexpr (same_policy<T, P>) {
        return true;
    } else if constexpr (requires { typename T::implies; }) {
        return same_policy<typename T::implies, P>;
    } else {
        return false;
    }
}

}  // namespace detail

/// One of stint's policy tags (policies.hpp, and emit_nvtx, emit_itt, cuda_activities): a type that
/// declares what stint reads from a policy (its family, what it implies, its range mirror or device
/// backend). Anything else in a config would be silently ignored, so config refuses it.
template <class P>
concept policy_tag = requires { typename P::policy_family; } || requires { typename P::implies; } ||
                     requires { typename P::range_mirror; } || requires { typename P::device_backend; };

/// A recording configuration made of policy tags (see policies.hpp).
///
///     using timing_only = stint::config<>;
///     using shapes_and_flops = stint::config<stint::with_flops>;  // with_flops implies record_shapes
///     stint::profiler<shapes_and_flops> prof;
template <class... Policies>
struct config {
    // The compiler's note names the rejected type ("'int' does not satisfy 'policy_tag'").
    static_assert((policy_tag<Policies> && ...),
                  "stint: config<...> takes stint's policy tags only (record_shapes, with_flops, with_stack<>, "
                  "with_modules, profile_memory, emit_nvtx, emit_itt, cuda_activities); a type of your own, even "
                  "one named like a tag, would record nothing. Fix: use the stint:: tag");
    static constexpr bool enabled = true;
    /// Whether the policy P was chosen, or is implied by one that was.
    template <class P>
    static constexpr bool has = (detail::provides<Policies, P>() || ...);
    /// `F<Policies...>`: lets a feature find its own tag (and its parameters) among the policies.
    template <template <class...> class F>
    using apply = F<Policies...>;
};

/// The configuration that records nothing: scopes and ops built with it compile to nothing and a
/// profiler of it is a no-op.
struct disabled {
    static constexpr bool enabled = false;
    template <class P>
    static constexpr bool has = false;
    template <template <class...> class F>
    using apply = F<>;
};

/// What every configuration type provides.
template <class T>
concept configuration = requires {
    { T::enabled } -> std::convertible_to<bool>;
};

}  // namespace stint
