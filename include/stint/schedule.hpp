#pragma once
// Step schedules: what the profiler does at each step (torch.profiler.schedule and ProfilerAction),
// the warnings for a custom schedule's impossible transitions, and the table that turns a
// transition into session operations (torch.profiler.profile.action_map).

#include <array>  // std::array
#include <cstddef>  // std::size_t
#include <cstdint>  // std::int64_t
#include <initializer_list>  // std::initializer_list
#include <iosfwd>  // std::ostream
#include <optional>  // std::optional
#include <span>  // std::span
#include <string>  // std::string
#include <string_view>  // std::string_view

#include <fmt/core.h>  // fmt::formatter, fmt::formatter<std::string_view>

#include "stint/detail/separate_compilation.hpp"

namespace stint {

/// What the profiler does during one step; the values are torch's `ProfilerAction` values.
///
///     auto fn = stint::schedule({.wait = 1, .warmup = 1, .active = 2});
///     assert(fn(3) == stint::profiler_action::record_and_save);
enum class profiler_action { none = 0, warmup = 1, record = 2, record_and_save = 3 };

/// torch's name of the action: "NONE", "WARMUP", "RECORD", "RECORD_AND_SAVE" ("UNKNOWN" for a
/// value outside the enumeration).
///
///     fmt::print("{}\n", stint::to_string(stint::profiler_action::warmup));  // WARMUP
constexpr std::string_view to_string(profiler_action action) noexcept {
    switch (action) {
        case profiler_action::none: return "NONE";
        case profiler_action::warmup: return "WARMUP";
        case profiler_action::record: return "RECORD";
        case profiler_action::record_and_save: return "RECORD_AND_SAVE";
    }
    return "UNKNOWN";
}

/// Writes `to_string(action)`.
STINT_DECL std::ostream& operator<<(std::ostream& out, profiler_action action);

/// The parameters of `stint::schedule`, named as torch names them.
///
///     stint::schedule_options opts{.skip_first = 3, .wait = 2, .warmup = 1, .active = 4, .repeat = 2};
struct schedule_options {
    std::int64_t skip_first = 0;  ///< steps ignored before the first cycle
    std::int64_t wait = 0;        ///< steps of each cycle spent idle
    std::int64_t warmup = 0;      ///< steps of each cycle tracing without keeping the results
    std::int64_t active = 0;      ///< steps of each cycle recorded; the last one saves (must be > 0)
    std::int64_t repeat = 0;      ///< number of cycles; 0 repeats until the profiler stops
};

/// A step schedule with exactly torch.profiler.schedule's sequence: `skip_first` steps of NONE, then
/// cycles of `wait` NONE, `warmup` WARMUP and `active` RECORD steps whose last is RECORD_AND_SAVE,
/// `repeat` times (0: forever), then NONE. Made by `stint::schedule`.
///
///     stint::schedule_fn fn = stint::schedule({.wait = 1, .warmup = 1, .active = 2, .repeat = 1});
///     fn(0);  // NONE    fn(1);  // WARMUP    fn(2);  // RECORD    fn(3);  // RECORD_AND_SAVE
class schedule_fn {
public:
    /// Throws std::invalid_argument unless wait, warmup, repeat, skip_first >= 0 and active > 0.
    /// warmup == 0 warns once per process that the results may be skewed.
    STINT_DECL explicit schedule_fn(schedule_options options);

    /// The action for `step` (0-based, the profiler's step number). Negative steps give NONE.
    constexpr profiler_action operator()(std::int64_t step) const noexcept {
        if (step < options_.skip_first) return profiler_action::none;  // also every negative step
        step -= options_.skip_first;
        const std::int64_t cycle = options_.wait + options_.warmup + options_.active;
        if (options_.repeat > 0 && step / cycle >= options_.repeat) return profiler_action::none;
        const std::int64_t in_cycle = step % cycle;
        if (in_cycle < options_.wait) return profiler_action::none;
        if (in_cycle < options_.wait + options_.warmup) return profiler_action::warmup;
        return in_cycle < cycle - 1 ? profiler_action::record : profiler_action::record_and_save;
    }

    /// The parameters this schedule was made from.
    constexpr const schedule_options& options() const noexcept { return options_; }

    /// The `detail::warn_once` key of the warmup == 0 warning.
    static constexpr std::string_view warmup_warning_key = "stint.schedule.no_warmup";

private:
    STINT_DECL static std::string describe(const schedule_options& o, std::string_view need);

    schedule_options options_;
};

/// Makes the schedule torch.profiler.schedule makes from the same arguments.
///
///     auto fn = stint::schedule({.skip_first = 3, .wait = 2, .warmup = 1, .active = 4, .repeat = 2});
///     fn(5);   // WARMUP     fn(9);  // RECORD_AND_SAVE     fn(17);  // NONE (both cycles done)
inline schedule_fn schedule(schedule_options options) { return schedule_fn(options); }

/// Watches the transitions of a schedule (any callable, a user's own included) and warns, as torch
/// does, about those a profiler cannot honour: "Incorrect schedule: WARMUP followed by NONE",
/// "... RECORD followed by NONE", "... RECORD followed by WARMUP". Each is reported once per checker
/// (torch's Python warnings show once per process), so a bad custom schedule does not flood the log.
/// One checker per profiler; not thread-safe.
///
///     stint::schedule_checker checker;
///     checker.observe(stint::profiler_action::record, stint::profiler_action::none);  // warns
class schedule_checker {
public:
    /// Warns if `prev` -> `next` is one of the incorrect transitions and has not been reported yet.
    STINT_DECL void observe(profiler_action prev, profiler_action next);

private:
    static constexpr std::optional<std::size_t> incorrect_transition(profiler_action prev,
                                                                     profiler_action next) noexcept {
        if (prev == profiler_action::warmup && next == profiler_action::none) return 0;
        if (prev == profiler_action::record && next == profiler_action::none) return 1;
        if (prev == profiler_action::record && next == profiler_action::warmup) return 2;
        return std::nullopt;
    }

    static constexpr std::array<std::string_view, 3> messages_{
        "Incorrect schedule: WARMUP followed by NONE",
        "Incorrect schedule: RECORD followed by NONE",
        "Incorrect schedule: RECORD followed by WARMUP",
    };

    unsigned reported_ = 0;  // bit i: messages_[i] already reported
};

}  // namespace stint

namespace stint::detail {

/// One thing the profiler does to its trace session (torch's prepare_trace, start_trace,
/// stop_trace, _trace_ready).
enum class session_op { prepare_trace, start_trace, stop_trace, trace_ready };

constexpr std::string_view to_string(session_op op) noexcept {
    switch (op) {
        case session_op::prepare_trace: return "prepare_trace";
        case session_op::start_trace: return "start_trace";
        case session_op::stop_trace: return "stop_trace";
        case session_op::trace_ready: return "trace_ready";
    }
    return "unknown";
}

/// Up to four session operations, in order; a value, no allocation.
class session_ops {
public:
    static constexpr std::size_t capacity = 4;

    constexpr session_ops() noexcept = default;
    constexpr session_ops(std::initializer_list<session_op> ops) noexcept {
        for (session_op op : ops) {
            if (size_ == capacity) break;  // the table below never holds more
            ops_[size_++] = op;
        }
    }

    constexpr std::size_t size() const noexcept { return size_; }
    constexpr bool empty() const noexcept { return size_ == 0; }
    constexpr const session_op* begin() const noexcept { return ops_.data(); }
    constexpr const session_op* end() const noexcept { return ops_.data() + size_; }
    constexpr session_op operator[](std::size_t i) const noexcept { return ops_[i]; }
    /// A view valid while this object lives.
    constexpr std::span<const session_op> span() const noexcept { return {ops_.data(), size_}; }

    friend constexpr bool operator==(const session_ops& a, const session_ops& b) noexcept {
        if (a.size_ != b.size_) return false;
        for (std::size_t i = 0; i < a.size_; ++i) {
            if (a.ops_[i] != b.ops_[i]) return false;
        }
        return true;
    }

private:
    std::array<session_op, capacity> ops_{};
    std::size_t size_ = 0;
};

/// What the profiler does, in order, when the action changes from `prev` to `next` at a step;
/// `next == std::nullopt` is the profiler stopping. torch's action_map entry for entry; the warnings
/// of its incorrect transitions come from `schedule_checker`. Pairs absent from torch's map (NONE
/// then stop, values outside the enumeration) do nothing.
///
///     transition_actions(profiler_action::warmup, profiler_action::record);  // {start_trace}
constexpr session_ops transition_actions(profiler_action prev, std::optional<profiler_action> next) noexcept {
    using a = profiler_action;
    using s = session_op;
    if (!next) {
        switch (prev) {
            case a::warmup: return {s::start_trace, s::stop_trace};
            case a::record:
            case a::record_and_save: return {s::stop_trace, s::trace_ready};
            case a::none: return {};
        }
        return {};
    }
    switch (prev) {
        case a::none:
            switch (*next) {
                case a::none: return {};
                case a::warmup: return {s::prepare_trace};
                case a::record:
                case a::record_and_save: return {s::prepare_trace, s::start_trace};
            }
            return {};
        case a::warmup:
            switch (*next) {
                // A warmup that is never recorded is still started and stopped, to close the session.
                case a::none: return {s::start_trace, s::stop_trace};
                case a::warmup: return {};
                case a::record:
                case a::record_and_save: return {s::start_trace};
            }
            return {};
        case a::record:
            switch (*next) {
                // torch stops without trace_ready here: the window never reached RECORD_AND_SAVE.
                case a::none:
                case a::warmup: return {s::stop_trace};
                case a::record:
                case a::record_and_save: return {};
            }
            return {};
        case a::record_and_save:
            switch (*next) {
                case a::none: return {s::stop_trace, s::trace_ready};
                case a::warmup: return {s::stop_trace, s::trace_ready, s::prepare_trace};
                case a::record:
                case a::record_and_save: return {s::stop_trace, s::trace_ready, s::prepare_trace, s::start_trace};
            }
            return {};
    }
    return {};
}

}  // namespace stint::detail

/// `fmt::format("{}", action)` gives `to_string(action)`; string format specs apply.
template <>
struct fmt::formatter<stint::profiler_action> : fmt::formatter<std::string_view> {
    template <typename FormatContext>
    auto format(stint::profiler_action action, FormatContext& ctx) const {
        return fmt::formatter<std::string_view>::format(stint::to_string(action), ctx);
    }
};

#if defined(STINT_HEADER_ONLY)
#include "stint/impl/schedule.ipp"
#endif
