#pragma once
// The bodies of common/warning.hpp: the default handler, the process-wide state and the warn calls.
#include "stint/common/warning.hpp"

#include <cstdio>      // std::fwrite, stderr
#include <functional>  // std::less
#include <memory>      // std::shared_ptr, std::make_shared
#include <mutex>       // std::mutex, std::recursive_mutex, std::lock_guard
#include <set>         // std::set
#include <utility>     // std::exchange, std::move

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

/// The process-wide warning state. Leaked on purpose: threads and static destructors may still warn
/// while other statics are being destroyed.
struct warning_state {
    std::mutex mutex;  // handler, warned_keys
    // Held through a shared_ptr so a handler replaced while it runs stays alive until it returns.
    std::shared_ptr<const warning_handler> handler =
        std::make_shared<const warning_handler>(&::stint::default_warning_handler);
    std::set<std::string, std::less<>> warned_keys;
    // Serialises handler calls, so a handler need not be thread-safe. Recursive so a handler that
    // warns itself does not deadlock.
    std::recursive_mutex call_mutex;
};

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
