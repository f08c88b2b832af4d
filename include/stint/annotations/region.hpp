#pragma once
// Framework regions: STINT_REGION(kind, "name") records "name (label)" while a session records, as
// torch's dynamo_timed regions show as "inner_fn (dynamo_timed)", and always counts the region in
// its kind's cumulative counters (count, total time), which the framework reads without a session.

#include <atomic>       // std::memory_order_relaxed
#include <concepts>     // std::convertible_to
#include <cstdint>      // std::uint64_t, std::uint32_t
#include <string_view>  // std::string_view

#include "stint/recording/buffer.hpp"
#include "stint/recording/open_scopes.hpp"
#include "stint/recording/ticks.hpp"
#include "stint/config.hpp"
#include "stint/annotations/detail/region_counter.hpp"
#include "stint/recording/slow_path.hpp"
#include "stint/recording/state.hpp"
#include "stint/scope.hpp"
#include "stint/recording/site.hpp"

namespace stint {

/// A region kind: a tag type whose `label` names it in events.
///
///     struct dynamo_timed { static constexpr std::string_view label = "dynamo_timed"; };
///     void inner_fn() { STINT_REGION(dynamo_timed, "inner_fn"); ... }   // "inner_fn (dynamo_timed)"
template <class Kind>
concept region_kind = requires {
    { Kind::label } -> std::convertible_to<std::string_view>;
};

}  // namespace stint

namespace stint::detail {

/// Times one region: its counters always, a record only when `Records` and a session records.
/// Two tick reads and two relaxed atomic adds without a session; one 24-byte append more with one.
template <bool Records>
class region_timer {
public:
    STINT_DETAIL_ALWAYS_INLINE explicit region_timer(region_counter& counter) noexcept
        : counter_(counter), state_(Records ? recording.value.load(std::memory_order_relaxed) : 0) {
        // relaxed: a stale false only sends this thread to link_region, which links once.
        if (!counter.linked.load(std::memory_order_relaxed)) [[unlikely]] link_region(counter);
        if constexpr (Records) {
            if (is_recording_state(state_)) enter_recorded_scope();
        }
        begin_ = read_ticks();
        if constexpr (Records) note_scope_entered(state_, counter_.where, begin_);
    }
    STINT_DETAIL_ALWAYS_INLINE ~region_timer() {
        const std::uint64_t end = read_ticks();
        counter_.add(end - begin_);
        if constexpr (Records) {
            if (is_recording_state(state_)) append_scope_record(counter_.where, begin_, end, state_);
        }
    }
    region_timer(const region_timer&) = delete;
    region_timer& operator=(const region_timer&) = delete;

private:
    region_counter& counter_;
    std::uint32_t state_;
    std::uint64_t begin_ = 0;
};

}  // namespace stint::detail


#if defined(STINT_DISABLE)
#include "stint/detail/compiled_out.hpp"  // every macro compiled out, in one place
#else
/// Times the rest of the block as a region of `kind` named by a string literal: the event is
/// "name (label)" (a user_annotation) while a session records, and the kind's counters
/// (stint::region_counters<kind>()) count it always. With `STINT_CONFIG` set to stint::disabled the
/// event is left out and the counters stay: they are the framework's own metrics.
///
///     struct dynamo_timed { static constexpr std::string_view label = "dynamo_timed"; };
///     void compile(Graph& g) { STINT_REGION(dynamo_timed, "call_user_compiler"); ... }
#define STINT_REGION(kind, name) STINT_DETAIL_REGION(kind, name, __COUNTER__)
#define STINT_DETAIL_REGION(kind, literal, id)                                                                \
    static_assert(::stint::region_kind<kind>,                                                                \
                  "stint: STINT_REGION's kind needs `static constexpr std::string_view label`");           \
    static constexpr auto STINT_DETAIL_CAT(stint_region_name_, id) =                                         \
        ::stint::detail::make_region_name<kind>(literal);                                                     \
    static constexpr ::stint::detail::site STINT_DETAIL_CAT(stint_site_, id) {                               \
        STINT_DETAIL_CAT(stint_region_name_, id).event_name(), ::stint::event_kind::user_annotation,         \
            ::stint::detail::payload_kind::none,                                                             \
            ::stint::detail::source_location{__builtin_FILE(), __builtin_FUNCTION(), __builtin_LINE()}       \
    };                                                                                                       \
    static constinit ::stint::detail::region_counter STINT_DETAIL_CAT(stint_region_counter_, id) {          \
        &STINT_DETAIL_CAT(stint_site_, id), STINT_DETAIL_CAT(stint_region_name_, id).name(),                 \
            &::stint::detail::region_list<kind>::head                                                        \
    };                                                                                                       \
    ::stint::detail::region_timer<STINT_CONFIG::enabled> STINT_DETAIL_CAT(stint_scope_, id) {                 \
        STINT_DETAIL_CAT(stint_region_counter_, id)                                                          \
    }
#endif
