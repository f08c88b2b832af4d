#pragma once
// The flight recorder that records now, as a process-wide slot (a dump asked from outside reaches it), and
// the trace formats a dump writes, by a path's ending: what the profiler's core and the on-demand server
// need of the flight recorder without its code (profiler/flight_recorder.hpp).

#include <mutex>        // std::mutex
#include <optional>     // std::optional
#include <string>       // std::string
#include <string_view>  // std::string_view

#include "stint/detail/export_macros.hpp"
#include "stint/detail/separate_compilation.hpp"
#include "stint/profiler/flight_recorder_options.hpp"

namespace stint::detail {

/// The flight recorder that records now, for a dump asked from outside the program (a "dump" request to
/// on_demand.hpp's socket). A profiler sets itself here when its flight recorder starts and clears itself
/// before it stops, outside its own lock: a dump holds this one's lock, then the profiler's.
class running_flight_recorder {
public:
    using dump_function = flight_dump (*)(void* profiler, const std::string& path);

    STINT_DECL void set(void* profiler, dump_function dumper);
    /// Waits for a dump of `profiler` in progress.
    STINT_DECL void clear(const void* profiler) noexcept;
    /// Dumps the running flight recorder to `path`; nullopt when none records.
    STINT_DECL std::optional<flight_dump> dump(const std::string& path);

private:
    std::mutex mutex_;
    void* profiler_ = nullptr;
    dump_function dump_ = nullptr;
};
inline namespace STINT_DETAIL_ABI_NAMESPACE {
/// One per process, whichever shared object runs the profiler (export_macros.hpp); never destroyed, as a
/// profiler may stop during exit.
STINT_DECL STINT_DETAIL_EXPORT running_flight_recorder& the_running_flight_recorder();
}  // namespace STINT_DETAIL_ABI_NAMESPACE

/// The kinds of trace a dump writes, by the path's ending.
enum class dump_format { chrome, perfetto };
STINT_DECL std::optional<dump_format> dump_format_of(std::string_view path) noexcept;
STINT_DECL void require_dump_format(std::string_view call, std::string_view path);

}  // namespace stint::detail

#if defined(STINT_HEADER_ONLY)
#include "stint/profiler/impl/running_flight_recorder.ipp"
#endif
