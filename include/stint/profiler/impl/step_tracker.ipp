#pragma once
// The bodies of profiler/step_tracker.hpp: the process's step counts and torch's step-jump warning.
#include "stint/profiler/step_tracker.hpp"

#include <algorithm>  // std::find_if, std::max

#include <fmt/format.h>  // fmt::format

namespace stint::detail {
inline namespace STINT_DETAIL_ABI_NAMESPACE {

step_tracker_state& the_step_tracker_state() {
    static step_tracker_state* const instance = new step_tracker_state();
    return *instance;
}

void set_step_observer(void (*observer)(std::int64_t global_step)) noexcept {
    the_step_tracker_state().observer.store(observer, std::memory_order_release);  // pairs with increment_step
}

void append_python_repr(std::string& out, std::string_view text) {
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

std::string format_step_dict(std::span<const step_count_entry> counts) {
    std::string out = "{";
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

std::string step_jump_warning(std::int64_t current_step, std::span<const step_count_entry> counts) {
    return fmt::format("Profiler step count has increased more than 1 - current_step = {} step dict = {}",
                       current_step, format_step_dict(counts));
}

}  // namespace STINT_DETAIL_ABI_NAMESPACE
}  // namespace stint::detail

namespace stint {

std::int64_t step_tracker::init_step_count(std::string_view requester) {
    detail::step_tracker_state& state = detail::the_step_tracker_state();
    std::lock_guard lock(state.mutex);
    return init_locked(state, requester);
}

bool step_tracker::erase_step_count(std::string_view requester) {
    detail::step_tracker_state& state = detail::the_step_tracker_state();
    std::lock_guard lock(state.mutex);
    auto it = std::find_if(state.counts.begin(), state.counts.end(),
                           [&](const auto& e) { return e.first == requester; });
    if (it == state.counts.end()) return false;
    state.counts.erase(it);  // erase keeps the others' order, as dict.pop does
    return true;
}

std::int64_t step_tracker::increment_step(std::string_view requester) {
    detail::step_tracker_state& state = detail::the_step_tracker_state();
    std::string warning;
    std::int64_t result = 0;
    bool rose = false;
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
            rose = true;
        }
        result = state.current_step;
    }
    // Outside the lock: a handler may call back into the tracker.
    if (!warning.empty()) detail::warn(warning);
    if (rose) {
        // acquire: pairs with the release in set_step_observer(), so the observer's state is whole.
        if (auto* observer = state.observer.load(std::memory_order_acquire)) observer(result);
    }
    return result;
}

std::int64_t step_tracker::current_step() {
    detail::step_tracker_state& state = detail::the_step_tracker_state();
    std::lock_guard lock(state.mutex);
    return state.current_step;
}

detail::step_count_entry* step_tracker::find(detail::step_tracker_state& state, std::string_view requester) {
    auto it = std::find_if(state.counts.begin(), state.counts.end(),
                           [&](const auto& e) { return e.first == requester; });
    return it == state.counts.end() ? nullptr : &*it;
}

std::int64_t step_tracker::init_locked(detail::step_tracker_state& state, std::string_view requester) {
    if (detail::step_count_entry* entry = find(state, requester)) {
        entry->second = state.current_step;  // an existing key keeps its place, as in a dict
    } else {
        state.counts.emplace_back(std::string(requester), state.current_step);
    }
    return state.current_step;
}

}  // namespace stint
