#pragma once
// Warnings: one process-wide handler, replaceable, so tests and applications decide where stint's
// warnings go (torch uses Python's `warnings.warn` for the same texts).

#include <functional>   // std::function
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

struct warning_state;  // impl/warning.ipp: the handler, the keys warned once, and their locks

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
