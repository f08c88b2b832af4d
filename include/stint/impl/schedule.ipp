#pragma once
// The bodies of schedule.hpp: making a step schedule, and the warnings of a schedule's transitions.

#include "stint/schedule.hpp"

#include <limits>  // std::numeric_limits
#include <ostream>  // std::ostream
#include <stdexcept>  // std::invalid_argument

#include "stint/common/warning.hpp"

namespace stint {

std::ostream& operator<<(std::ostream& out, profiler_action action) { return out << to_string(action); }

schedule_fn::schedule_fn(schedule_options options) : options_(options) {
    const bool valid = options.wait >= 0 && options.warmup >= 0 && options.active > 0 && options.repeat >= 0 &&
                       options.skip_first >= 0;
    if (!valid) throw std::invalid_argument(describe(options, "need wait >= 0, warmup >= 0, active > 0, "
                                                              "repeat >= 0, skip_first >= 0"));
    // torch has unbounded integers; here the cycle length must be representable.
    constexpr std::int64_t max = std::numeric_limits<std::int64_t>::max();
    if (options.wait > max - options.warmup || options.active > max - options.wait - options.warmup)
        throw std::invalid_argument(describe(options, "wait + warmup + active must fit in std::int64_t"));
    if (options.warmup == 0) {
        detail::warn_once(warmup_warning_key, "Profiler won't be using warmup, this can skew profiler results");
    }
}

std::string schedule_fn::describe(const schedule_options& o, std::string_view need) {
    return fmt::format(
        "stint: schedule(): invalid arguments (skip_first={}, wait={}, warmup={}, active={}, repeat={}): {}",
        o.skip_first, o.wait, o.warmup, o.active, o.repeat, need);
}

void schedule_checker::observe(profiler_action prev, profiler_action next) {
    const std::optional<std::size_t> which = incorrect_transition(prev, next);
    if (!which) return;
    const unsigned bit = 1U << *which;
    if ((reported_ & bit) != 0) return;
    reported_ |= bit;
    detail::warn(messages_[*which]);
}

}  // namespace stint
