#pragma once
// The bodies of common/warning.hpp: the default handler, the process-wide state and the warn calls.
#include "stint/common/warning.hpp"

#include <cstdio>   // std::fwrite, stderr
#include <utility>  // std::exchange, std::move

namespace stint {

void default_warning_handler(std::string_view text) {
    std::string line;
    line.reserve(text.size() + 24);
    line.append("stint: warning: ").append(text).push_back('\n');
    std::fwrite(line.data(), 1, line.size(), stderr);
}

}  // namespace stint

namespace stint::detail {
inline namespace STINT_DETAIL_ABI_NAMESPACE {

warning_state& the_warning_state() {
    static warning_state* const instance = new warning_state();
    return *instance;
}

void warn(std::string_view text) {
    warning_state& state = the_warning_state();
    std::shared_ptr<const warning_handler> handler;
    {
        std::lock_guard lock(state.mutex);
        handler = state.handler;
    }
    if (!handler || !*handler) return;
    std::lock_guard call_lock(state.call_mutex);
    (*handler)(text);
}

void warn_once(std::string_view key, std::string_view text) {
    warning_state& state = the_warning_state();
    {
        std::lock_guard lock(state.mutex);
        if (!state.warned_keys.emplace(key).second) return;
    }
    warn(text);
}

bool warned_once(std::string_view key) {
    warning_state& state = the_warning_state();
    std::lock_guard lock(state.mutex);
    return state.warned_keys.find(key) != state.warned_keys.end();
}

}  // namespace STINT_DETAIL_ABI_NAMESPACE
}  // namespace stint::detail

namespace stint {

warning_handler set_warning_handler(warning_handler handler) {
    auto next = std::make_shared<const warning_handler>(std::move(handler));
    detail::warning_state& state = detail::the_warning_state();
    std::shared_ptr<const warning_handler> previous;
    {
        std::lock_guard lock(state.mutex);
        previous = std::exchange(state.handler, std::move(next));
    }
    return previous ? *previous : warning_handler{};
}

}  // namespace stint
