#pragma once
// Warnings: one process-wide handler, replaceable, so tests and applications decide where stint's
// warnings go (torch uses Python's `warnings.warn` for the same texts).

#include <cstdio>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <utility>

#include "stint/detail/deferred.hpp"
#include "stint/detail/export_macros.hpp"

namespace stint {

/// Receives the text of one warning (no prefix, no newline).
///
///     auto previous = stint::set_warning_handler([](std::string_view text) { log(text); });
///     ...
///     stint::set_warning_handler(std::move(previous));
using warning_handler = std::function<void(std::string_view)>;

/// The handler installed at start-up: writes `stint: warning: <text>\n` to stderr in one write.
///
///     stint::set_warning_handler(stint::default_warning_handler);  // restore the default
inline void default_warning_handler(std::string_view text) {
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
template <class = void>
struct basic_warning_state;
/// basic_warning_state's one form: a template, like the functions below, so that a file that never
/// warns does not compile the handler's shared_ptr and the set of keys.
using warning_state = basic_warning_state<>;

template <class Unused>
struct basic_warning_state {
    std::mutex mutex;  // handler, warned_keys
    // Held through a shared_ptr so a handler replaced while it runs stays alive until it returns.
    deferred_t<std::shared_ptr<const warning_handler>, Unused> handler =
        std::make_shared<const warning_handler>(&::stint::default_warning_handler);
    deferred_t<std::set<std::string, std::less<>>, Unused> warned_keys;
    // Serialises handler calls, so a handler need not be thread-safe. Recursive so a handler that
    // warns itself does not deadlock.
    std::recursive_mutex call_mutex;
};

template <class = void>
STINT_DETAIL_EXPORT warning_state& the_warning_state() {
    static warning_state* const instance = new warning_state();
    return *instance;
}

/// Sends `text` to the current handler. Calls are serialised; an empty handler drops the warning.
template <class = void>
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

/// Warns with `text` the first time `key` is seen in this process; later calls do nothing.
template <class = void>
void warn_once(std::string_view key, std::string_view text) {
    warning_state& state = the_warning_state();
    {
        std::lock_guard lock(state.mutex);
        if (!state.warned_keys.emplace(key).second) return;
    }
    warn(text);
}

/// Whether `warn_once(key, ...)` has already fired in this process (tests use it to stay
/// independent of the order in which test cases run).
template <class = void>
bool warned_once(std::string_view key) {
    warning_state& state = the_warning_state();
    std::lock_guard lock(state.mutex);
    return state.warned_keys.find(key) != state.warned_keys.end();
}

}  // namespace STINT_DETAIL_ABI_NAMESPACE
}  // namespace stint::detail

namespace stint {

/// Installs `handler` for every later warning of the process and returns the one it replaces.
/// An empty handler silences warnings. A running handler may warn or replace the handler itself.
///
///     std::vector<std::string> seen;
///     auto previous = stint::set_warning_handler([&](std::string_view t) { seen.emplace_back(t); });
///     stint::set_warning_handler(std::move(previous));
template <class = void>
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
