#pragma once
// Warnings: one process-wide handler, replaceable, so tests and applications decide where stint's
// warnings go (torch uses Python's `warnings.warn` for the same texts).

#include <functional>   // std::function
#include <memory>       // std::shared_ptr
#include <mutex>        // std::mutex, std::recursive_mutex
#include <set>          // std::set
#include <string>       // std::string
#include <string_view>  // std::string_view

#include "stint/detail/export_macros.hpp"
#include "stint/detail/separate_compilation.hpp"

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
STINT_DECL void default_warning_handler(std::string_view text);

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

STINT_DECL STINT_DETAIL_EXPORT warning_state& the_warning_state();

/// Sends `text` to the current handler. Calls are serialised; an empty handler drops the warning.
STINT_DECL void warn(std::string_view text);

/// Warns with `text` the first time `key` is seen in this process; later calls do nothing.
STINT_DECL void warn_once(std::string_view key, std::string_view text);

/// Whether `warn_once(key, ...)` has already fired in this process (tests use it to stay
/// independent of the order in which test cases run).
STINT_DECL bool warned_once(std::string_view key);

}  // namespace STINT_DETAIL_ABI_NAMESPACE
}  // namespace stint::detail

namespace stint {

/// Installs `handler` for every later warning of the process and returns the one it replaces.
/// An empty handler silences warnings. A running handler may warn or replace the handler itself.
///
///     std::vector<std::string> seen;
///     auto previous = stint::set_warning_handler([&](std::string_view t) { seen.emplace_back(t); });
///     stint::set_warning_handler(std::move(previous));
STINT_DECL warning_handler set_warning_handler(warning_handler handler);

}  // namespace stint

#if defined(STINT_HEADER_ONLY)
#include "stint/common/impl/warning.ipp"
#endif
