#pragma once
// What a configuration's policies mean for its sites, decided at compile time: which payload its
// records carry, the record_shapes limits, the native stack depth, the flop formula. The scopes in
// scope.hpp pick their type from these; nothing here runs while recording.

#include <cstddef>           // std::size_t
#include <initializer_list>  // std::initializer_list
#include <type_traits>       // std::conditional_t

#include "stint/capture/flop_formula.hpp"
#include "stint/config.hpp"
#include "stint/policies.hpp"
#include "stint/recording/site.hpp"

namespace stint::detail {

/// The largest of `values` (std::max of a list without <algorithm>, which this light header avoids).
constexpr std::size_t largest(std::initializer_list<std::size_t> values) noexcept {
    std::size_t most = 0;
    for (const std::size_t v : values) most = v > most ? v : most;
    return most;
}


template <class... Policies>
struct find_shapes_limits {
    using type = record_shapes;  // implied by another policy (with_flops): the defaults
};
template <class P, class... Rest>
struct find_shapes_limits<P, Rest...> {
    using type = std::conditional_t<same_policy<P, record_shapes>, P, typename find_shapes_limits<Rest...>::type>;
};

/// The record_shapes limits a configuration chose (record_shapes_limits<...>, or the defaults).
template <class Config>
using shapes_limits_t = typename Config::template apply<find_shapes_limits>::type;

/// Whether ops of Config capture their inputs.
template <class Config>
inline constexpr bool captures_inputs = Config::enabled && Config::template has<record_shapes>;

template <class P>
constexpr std::size_t policy_native_depth() noexcept {
    if constexpr (same_policy<P, with_stack<>>) {
        return P::native_depth;
    } else {
        return 0;
    }
}
template <class... Policies>
struct find_native_depth {
    static constexpr std::size_t value = largest({std::size_t{0}, policy_native_depth<Policies>()...});
};

/// Native frames the sites of Config capture (with_stack<native_frames<N>>), 0 for none.
template <class Config>
inline constexpr std::size_t native_stack_depth = Config::template apply<find_native_depth>::value;

/// The payload kind of a scope site (STINT_SCOPE) of Config.
template <class Config>
constexpr payload_kind scope_payload_kind() noexcept {
    return Config::enabled && native_stack_depth<Config> > 0 ? payload_kind::native_stack : payload_kind::none;
}

/// The payload kind of an op site of Config.
template <class Config>
constexpr payload_kind op_payload_kind() noexcept {
    const bool native = Config::enabled && native_stack_depth<Config> > 0;
    if constexpr (captures_inputs<Config>) {
        return native ? payload_kind::native_stack_inputs : payload_kind::inputs;
    } else {
        return native ? payload_kind::native_stack : payload_kind::none;
    }
}

/// The flop formula of an op site of Config: `formula` when the config has with_flops, else none.
template <class Config>
constexpr flop_formula op_flop_formula(flop_formula formula) noexcept {
    if constexpr (Config::enabled && Config::template has<with_flops>) {
        return formula;
    } else {
        return {};
    }
}

}  // namespace stint::detail
