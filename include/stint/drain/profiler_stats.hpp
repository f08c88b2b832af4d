#pragma once
// stint::profiler_stats: a session's self-measurement and record accounting.

#include <cstdint>  // std::uint64_t
#include <string>   // std::string
#include <vector>   // std::vector

#include "stint/analysis/event.hpp"  // stint::memory_peak, stint::device_loss

namespace stint {

/// Self-measurement of a session, with one field for each of torch's profiler stats (durations of
/// the profiler's own phases) plus stint's record accounting.
struct profiler_stats {
    double profiling_window_duration_sec = 0;          ///< from enable to disable
    std::uint64_t number_of_events = 0;                ///< events in the event list
    double profiler_prepare_call_duration_us = 0;      ///< calibration and set-up before enabling
    double profiler_enable_call_duration_us = 0;       ///< opening the session
    double profiler_disable_call_duration_us = 0;      ///< closing the session
    double parse_kineto_call_duration_us = 0;          ///< taking the records out of the thread buffers
    /// Ordering and linking the tree; 0 until the event list is built (stop() builds it only when
    /// something needs it then; events() and the exporters that read it build it when first asked).
    double function_events_build_tree_call_duration_us = 0;
    std::uint64_t recorded = 0;                        ///< records kept
    std::uint64_t dropped = 0;                         ///< records lost to the budget, counted exactly
    /// Records of earlier sessions that reached their buffers after those sessions were drained (a
    /// thread preempted between a scope's end and its append), found during this one. Never silent:
    /// every export shows them.
    std::uint64_t late_records = 0;
    std::uint64_t overhead_events = 0;                 ///< stint's own events (cat "overhead"), not in recorded
    std::uint64_t truncated_names = 0;                 ///< runtime names cut to 4096 bytes
    std::uint64_t truncated_inputs = 0;                ///< ops whose input capture hit a bound
    std::uint64_t buffer_bytes = 0;                    ///< record buffers the session used (chunks of 1 to 64 KiB)
    /// The device collection (cuda_activities): "off", "active" or "unavailable: <reason>".
    std::string device_status = "off";
    std::uint64_t device_events = 0;                   ///< kernels, copies, memsets and syncs kept
    std::uint64_t device_api_calls = 0;                ///< CUDA runtime and driver calls kept
    stint::device_loss device_loss = {};               ///< what the device collection lost, by cause
    /// profile_memory: the highest live bytes of each device that had memory events, and what ran then.
    std::vector<memory_peak> memory_peaks;
    std::uint64_t memory_events = 0;                   ///< [memory] and [OutOfMemory] events kept
    std::uint64_t memory_dropped = 0;                  ///< memory events lost to the budget (also in dropped)
};

}  // namespace stint
