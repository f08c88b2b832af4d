#pragma once
// What a Perfetto trace carries besides the events, and the file writer's declaration: apart from the
// writer's class, so that what fills it (a flight recorder's window) or names the writer (the profiler's
// export_perfetto_trace) need not include it.

#include <cstdint>   // std::uint64_t, std::int64_t
#include <optional>  // std::optional
#include <string>    // std::string
#include <vector>    // std::vector

#include "stint/detail/separate_compilation.hpp"

namespace stint {
class event_list;  // analysis/event_list.hpp
}  // namespace stint

namespace stint::detail {

/// What a Perfetto trace carries besides the events.
struct perfetto_trace_info {
    std::uint64_t pid = 0;
    std::uint64_t truncated_names = 0;
    /// A flight recorder's dump (profiler/flight_recorder.hpp): records overwritten before the window,
    /// in total and per thread, with the time (ns on the trace's clock) from which each thread is complete.
    struct overwritten_thread {
        std::uint64_t os_tid = 0;
        std::uint64_t overwritten = 0;
        std::int64_t complete_from_ns = 0;
    };
    std::optional<std::uint64_t> overwritten{};
    std::vector<overwritten_thread> overwritten_threads{};
};

/// Writes the trace to `path` (gzip when it ends in ".gz") through a temporary file renamed into
/// place; throws std::system_error naming the path and the OS reason (export/impl/perfetto_trace.ipp).
STINT_DECL void write_perfetto_trace_file(const std::string& path, const event_list& events,
                                          const perfetto_trace_info& info);

}  // namespace stint::detail

#if defined(STINT_HEADER_ONLY)
#include "stint/export/perfetto_trace.hpp"  // the writer's body
#endif
