#pragma once
// One global step count for the process, advanced by several requesters (the profiler's step(), an
// optimizer hook, a data loader) without double counting: torch's KinetoStepTracker.

#include <atomic>       // std::atomic
#include <cstdint>      // std::int64_t
#include <mutex>        // std::mutex
#include <span>         // std::span
#include <string>       // std::string
#include <string_view>  // std::string_view
#include <utility>      // std::pair
#include <vector>       // std::vector

#include "stint/detail/export_macros.hpp"
#include "stint/detail/separate_compilation.hpp"
#include "stint/common/warning.hpp"

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
    /// Called with the new global step each time it rises, on the thread that raised it, outside the
    /// lock: a steps capture (on_demand_server.hpp) starts and stops there, at a step boundary, as
    /// Kineto's on-demand iterations do. Null (the usual case): one acquire load per step, nothing more.
    /// acquire in increment_step() pairs with the release in set_step_observer().
    std::atomic<void (*)(std::int64_t)> observer{nullptr};
};

STINT_DECL STINT_DETAIL_EXPORT step_tracker_state& the_step_tracker_state();

/// Installs the function called at each rise of the global step (null: none). One observer per
/// process: the on-demand server's.
STINT_DECL void set_step_observer(void (*observer)(std::int64_t global_step)) noexcept;

/// Appends `text` as Python's repr() of a str writes it: single quotes unless the text holds a
/// single quote and no double quote; backslash, the quote, \t \n \r and other control bytes escaped.
/// Bytes >= 0x80 pass through (a UTF-8 name prints as Python prints the decoded str).
STINT_DECL void append_python_repr(std::string& out, std::string_view text);

/// `{'ProfilerStep': 3, 'yet_another_step': 5}`: the counts as Python prints a dict.
STINT_DECL std::string format_step_dict(std::span<const step_count_entry> counts);

/// torch's warning when the global step jumps by more than one; `current_step` is the value before
/// the jump, `counts` the counts after it.
STINT_DECL std::string step_jump_warning(std::int64_t current_step, std::span<const step_count_entry> counts);

}  // namespace STINT_DETAIL_ABI_NAMESPACE
}  // namespace stint::detail

namespace stint {

/// The process's global step: each requester keeps its own count, and the global step is the largest
/// of them, so a loop whose profiler and optimizer both step advances it once per iteration.
/// All members are static and thread-safe.
///
///     stint::step_tracker::increment_step("optimizer");   // optimizer hook
///     prof.step();                                         // steps "ProfilerStep" too: no double count
///     std::int64_t now = stint::step_tracker::current_step();
class step_tracker {
public:
    step_tracker() = delete;

    /// The requester name the profiler's step() uses (torch's PROFILER_STEP_NAME).
    static constexpr std::string_view profiler_step_name = "ProfilerStep";

    /// Sets `requester`'s count to the current global step (adding it if new) and returns that value.
    ///
    ///     stint::step_tracker::init_step_count("data_loader");
    STINT_DECL static std::int64_t init_step_count(std::string_view requester);

    /// Forgets `requester`; true iff it was known. A later increment starts it from the global step.
    ///
    ///     bool was_known = stint::step_tracker::erase_step_count("data_loader");
    STINT_DECL static bool erase_step_count(std::string_view requester);

    /// Adds one to `requester`'s count (starting it at the global step if unknown) and returns the
    /// global step, which rises only when the largest count does. A rise of more than one warns with
    /// torch's text (every count is at most the global step, so with these operations it cannot).
    ///
    ///     std::int64_t global = stint::step_tracker::increment_step("optimizer");
    STINT_DECL static std::int64_t increment_step(std::string_view requester);

    /// The global step.
    ///
    ///     std::int64_t now = stint::step_tracker::current_step();
    STINT_DECL static std::int64_t current_step();

private:
    STINT_DECL static detail::step_count_entry* find(detail::step_tracker_state& state, std::string_view requester);
    STINT_DECL static std::int64_t init_locked(detail::step_tracker_state& state, std::string_view requester);
};

}  // namespace stint

#if defined(STINT_HEADER_ONLY)
#include "stint/profiler/impl/step_tracker.ipp"
#endif
