#pragma once
// The seam for mirroring scopes into another tool's ranges (stint::emit_nvtx, annotations/nvtx.hpp): a
// config's policies may name a range mirror; every scope and op of such a config is then also one of
// the tool's ranges, pushed before stint reads its begin tick and popped after its end tick, so the
// mirror's cost is not charged to stint's times (design §12). Without one, scopes contain no mirror
// code and no tool's header is included.

#include <cstdint>      // std::uint32_t
#include <string_view>  // std::string_view (a mirror's push_named, in a doc comment only)

#include "stint/recording/site.hpp"
#include "stint/recording/slow_path.hpp"

namespace stint::detail {

/// The range mirror of configs that mirror nothing.
struct no_range_mirror {
    static constexpr bool enabled = false;
};

/// The first policy's `range_mirror`, or no_range_mirror. A mirror has
/// `static void push(const site&)`, `push_named(std::string_view)`,
/// `push_op(const site&, payload_bytes inputs, std::uint32_t aux)` (captured inputs, as
/// capture/detail/input_encoding.hpp writes them) and `pop()`, all noexcept.
template <class... Policies>
struct find_range_mirror {
    using type = no_range_mirror;
};
template <class Policy, class... Rest>
struct find_range_mirror<Policy, Rest...> {
    using type = typename find_range_mirror<Rest...>::type;
};
template <class Policy, class... Rest>
    requires requires { typename Policy::range_mirror; }
struct find_range_mirror<Policy, Rest...> {
    using type = typename Policy::range_mirror;
};

/// The range mirror of a configuration.
template <class Config>
using range_mirror_t = typename Config::template apply<find_range_mirror>::type;

template <class Config>
inline constexpr bool has_range_mirror = Config::enabled && range_mirror_t<Config>::enabled;

/// Pops the mirror's range when it is destroyed, if one was pushed: a member declared before the
/// scope it wraps, so that it is constructed first and destroyed last.
template <class Mirror>
struct mirror_pop {
    bool pushed = false;
    mirror_pop() noexcept = default;
    explicit mirror_pop(const site& where) noexcept : pushed(true) { Mirror::push(where); }
    ~mirror_pop() {
        if (pushed) Mirror::pop();
    }
    mirror_pop(const mirror_pop&) = delete;
    mirror_pop& operator=(const mirror_pop&) = delete;
};

/// A scope (`Inner`: a timer, a linked or capturing scope) that is also one of Mirror's ranges.
template <class Mirror, class Inner>
class mirrored_scope {
public:
    explicit mirrored_scope(const site& where) noexcept : range_(where), inner_(where) {}

private:
    mirror_pop<Mirror> range_;
    Inner inner_;
};

/// An op that captures inputs (`Inner` is its capturing_scope) and is also one of Mirror's ranges: the
/// range is pushed once the inputs are encoded, so that its message can carry their shapes, and before
/// the op's begin tick. Without a session (nothing captured), it is pushed with the op's name alone.
template <class Mirror, class Inner>
class mirrored_op_scope {
public:
    explicit mirrored_op_scope(const site& where) noexcept : where_(&where), inner_(where) {}

    template <class Produce>
    void capture(Produce& inputs) noexcept {
        inner_.capture(inputs, [this](payload_bytes encoded, std::uint32_t aux) noexcept {
            Mirror::push_op(*where_, encoded, aux);
            range_.pushed = true;
        });
        if (!range_.pushed) {
            Mirror::push(*where_);
            range_.pushed = true;
        }
    }

private:
    const site* where_;
    mirror_pop<Mirror> range_;
    Inner inner_;
};

}  // namespace stint::detail
