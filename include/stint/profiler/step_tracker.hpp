#pragma once
// One global step count for the process, advanced by several requesters (the profiler's step(), an
// optimizer hook, a data loader) without double counting: torch's KinetoStepTracker.

#include <algorithm>
#include <cstdint>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "stint/detail/deferred.hpp"
#include "stint/detail/export_macros.hpp"
#include "stint/profiler/warning.hpp"

namespace stint::detail {
inline namespace STINT_DETAIL_ABI_NAMESPACE {

using step_count_entry = std::pair<std::string, std::int64_t>;

/// The process-wide step counts. Leaked on purpose, like the registry: a requester may step while
/// static destructors run.
struct step_tracker_state {
    std::mutex mutex;  // everything below
    std::int64_t current_step = 0;
    // Kept in insertion order because the warning prints it the way a Python dict prints. A handful
    // of requesters, so a linear search beats a map.
    std::vector<step_count_entry> counts;
};

STINT_DETAIL_EXPORT inline step_tracker_state& the_step_tracker_state() {
    static step_tracker_state* const instance = new step_tracker_state();
    return *instance;
}

/// Appends `text` as Python's repr() of a str writes it: single quotes unless the text holds a
/// single quote and no double quote; backslash, the quote, \t \n \r and other control bytes escaped.
/// Bytes >= 0x80 pass through (a UTF-8 name prints as Python prints the decoded str).
template <class Unused = void>
void append_python_repr(deferred_t<std::string, Unused>& out, std::string_view text) {
    const bool use_double = text.find('\'') != std::string_view::npos && text.find('"') == std::string_view::npos;
    const char quote = use_double ? '"' : '\'';
    out.push_back(quote);
    for (const char c : text) {
        const auto byte = static_cast<unsigned char>(c);
        if (c == quote || c == '\\') {
            out.push_back('\\');
            out.push_back(c);
        } else if (c == '\t') {
            out.append("\\t");
        } else if (c == '\n') {
            out.append("\\n");
        } else if (c == '\r') {
            out.append("\\r");
        } else if (byte < 0x20 || byte == 0x7f) {
            out.append(fmt::format("\\x{:02x}", byte));
        } else {
            out.push_back(c);
        }
    }
    out.push_back(quote);
}

/// `{'ProfilerStep': 3, 'yet_another_step': 5}`: the counts as Python prints a dict.
template <class Unused = void>
std::string format_step_dict(deferred_t<std::span<const step_count_entry>, Unused> counts) {
    deferred_t<std::string, Unused> out = "{";
    bool first = true;
    for (const auto& [name, count] : counts) {
        if (!first) out.append(", ");
        first = false;
        append_python_repr(out, name);
        out.append(": ").append(std::to_string(count));
    }
    out.push_back('}');
    return out;
}

/// torch's warning when the global step jumps by more than one; `current_step` is the value before
/// the jump, `counts` the counts after it.
template <class Unused = void>
std::string step_jump_warning(std::int64_t current_step, deferred_t<std::span<const step_count_entry>, Unused> counts) {
    return fmt::format("Profiler step count has increased more than 1 - current_step = {} step dict = {}",
                       current_step, format_step_dict(counts));
}

}  // namespace STINT_DETAIL_ABI_NAMESPACE
}  // namespace stint::detail

namespace stint {

template <class = void>
class basic_step_tracker;
/// basic_step_tracker's one form (a template only so that a file that does not use it does not compile it).
using step_tracker = basic_step_tracker<>;

/// The process's global step: each requester keeps its own count, and the global step is the largest
/// of them, so a loop whose profiler and optimizer both step advances it once per iteration.
/// All members are static and thread-safe.
///
///     stint::step_tracker::increment_step("optimizer");   // optimizer hook
///     prof.step();                                         // steps "ProfilerStep" too: no double count
///     std::int64_t now = stint::step_tracker::current_step();
template <class Unused>
class basic_step_tracker {
    // Named through Unused (detail/deferred.hpp): a file that never steps does not instantiate the
    // bodies' vector and string code.
    using state_type = detail::deferred_t<detail::step_tracker_state, Unused>;

public:
    basic_step_tracker() = delete;

    /// The requester name the profiler's step() uses (torch's PROFILER_STEP_NAME).
    static constexpr std::string_view profiler_step_name = "ProfilerStep";

    /// Sets `requester`'s count to the current global step (adding it if new) and returns that value.
    ///
    ///     stint::step_tracker::init_step_count("data_loader");
    static std::int64_t init_step_count(std::string_view requester) {
        state_type& state = detail::the_step_tracker_state();
        std::lock_guard lock(state.mutex);
        return init_locked(state, requester);
    }

    /// Forgets `requester`; true iff it was known. A later increment starts it from the global step.
    ///
    ///     bool was_known = stint::step_tracker::erase_step_count("data_loader");
    static bool erase_step_count(std::string_view requester) {
        state_type& state = detail::the_step_tracker_state();
        std::lock_guard lock(state.mutex);
        auto it = std::find_if(state.counts.begin(), state.counts.end(),
                               [&](const auto& e) { return e.first == requester; });
        if (it == state.counts.end()) return false;
        state.counts.erase(it);  // erase keeps the others' order, as dict.pop does
        return true;
    }

    /// Adds one to `requester`'s count (starting it at the global step if unknown) and returns the
    /// global step, which rises only when the largest count does. A rise of more than one warns with
    /// torch's text (every count is at most the global step, so with these operations it cannot).
    ///
    ///     std::int64_t global = stint::step_tracker::increment_step("optimizer");
    static std::int64_t increment_step(std::string_view requester) {
        state_type& state = detail::the_step_tracker_state();
        std::string warning;
        std::int64_t result = 0;
        {
            std::lock_guard lock(state.mutex);
            detail::step_count_entry* entry = find(state, requester);
            if (entry == nullptr) {
                init_locked(state, requester);
                entry = &state.counts.back();
            }
            ++entry->second;
            std::int64_t highest = entry->second;
            for (const auto& e : state.counts) highest = std::max(highest, e.second);
            if (highest > state.current_step) {
                if (highest - state.current_step > 1) warning = detail::step_jump_warning(state.current_step, state.counts);
                state.current_step = highest;
            }
            result = state.current_step;
        }
        // Outside the lock: a handler may call back into the tracker.
        if (!warning.empty()) detail::warn(warning);
        return result;
    }

    /// The global step.
    ///
    ///     std::int64_t now = stint::step_tracker::current_step();
    static std::int64_t current_step() {
        state_type& state = detail::the_step_tracker_state();
        std::lock_guard lock(state.mutex);
        return state.current_step;
    }

private:
    static detail::step_count_entry* find(state_type& state, std::string_view requester) {
        auto it = std::find_if(state.counts.begin(), state.counts.end(),
                               [&](const auto& e) { return e.first == requester; });
        return it == state.counts.end() ? nullptr : &*it;
    }

    static std::int64_t init_locked(state_type& state, std::string_view requester) {
        if (detail::step_count_entry* entry = find(state, requester)) {
            entry->second = state.current_step;  // an existing key keeps its place, as in a dict
        } else {
            state.counts.emplace_back(std::string(requester), state.current_step);
        }
        return state.current_step;
    }
};

}  // namespace stint
