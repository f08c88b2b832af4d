#pragma once
// Joins a session's device activity to its CPU events (design §8): each API call and each piece of device
// work goes to the scope whose external correlation id CUPTI reported for it, the scope's record found
// through the device-link record the scope appended after its own.

#include <cstdint>
#include <unordered_map>

#include "stint/analysis/event_tree.hpp"
#include "stint/detail/deferred.hpp"
#include "stint/device/device_capture.hpp"
#include "stint/recording/clock.hpp"

namespace stint::detail {

/// The window and clock the join needs from the drain.
struct device_join_window {
    std::uint64_t from_ticks = 0;  ///< the session's start
    std::uint64_t until_ticks = 0; ///< its stop
    tick_calibration calibration;
};

/// Adds `capture`'s activities to `builder`. `links` maps external correlation ids to the scope events
/// (as added) that pushed them; `thread_of_tid` finds or adds the CPU thread of an OS thread id.
template <class ThreadOf>
void join_device_activity(deferred_t<event_list_builder, ThreadOf>& builder, device_capture& capture,
                          const deferred_t<std::unordered_map<std::uint64_t, event_index>, ThreadOf>& links,
                          const device_join_window& window, ThreadOf&& thread_of_tid) {
    device_report& report = capture.report;
    device_loss& loss = report.loss;
    builder.begin_run();  // device events and API calls are a run of their own, linked by correlation
    // API calls by correlation id, to check that device work does not start before its launch.
    deferred_t<std::unordered_map<std::uint32_t, std::uint64_t>, ThreadOf> launch_ticks;
    for (const device_activity& a : capture.activities) {
        if ((a.kind == event_kind::cuda_runtime || a.kind == event_kind::cuda_driver) && a.args.correlation != 0) {
            auto [it, added] = launch_ticks.try_emplace(a.args.correlation, a.start_ticks);
            if (!added && a.start_ticks < it->second) it->second = a.start_ticks;
        }
    }
    const auto to_ns = [&](std::uint64_t ticks) { return window.calibration.to_ns_since_anchor(ticks); };
    for (const device_activity& a : capture.activities) {
        if (a.end_ticks < window.from_ticks || a.start_ticks > window.until_ticks) {
            ++loss.out_of_window_records;
            continue;
        }
        const bool api = a.kind == event_kind::cuda_runtime || a.kind == event_kind::cuda_driver;
        if (api && capture.own_thread != 0 && a.thread == capture.own_thread &&
            a.start_ticks >= capture.own_from_ticks && a.end_ticks <= capture.own_until_ticks) {
            continue;  // stint's own synchronisation at stop
        }
        event_index launcher = no_index;
        if (a.external_id != 0) {
            if (auto found = links.find(a.external_id); found != links.end()) launcher = found->second;
        }
        const std::int64_t start = to_ns(a.start_ticks);
        const std::int64_t end = to_ns(a.end_ticks);
        event_index i = no_index;
        if (a.device >= 0) {
            const std::uint32_t track = builder.device_track({device_type::cuda, a.device}, a.stream);
            i = builder.add_device_event(a.kind, a.name, track, start, end, a.args);
            if (auto launch = launch_ticks.find(a.args.correlation);
                launch != launch_ticks.end() && a.start_ticks < launch->second) {
                ++loss.gpu_before_launch;
            }
        } else if (api) {
            i = builder.add_api_call(a.kind, a.name, thread_of_tid(a.thread), start, end, a.args);
        } else {
            // A CPU-side overhead of the collector (a buffer flush): top-level on its thread.
            builder.set_launcher(builder.add_copy(event_kind::overhead, a.name, thread_of_tid(a.thread), start, end),
                                 no_index);
            continue;
        }
        if (launcher == no_index) {
            ++loss.unlinked_records;
        }
        builder.set_launcher(i, launcher);
    }
    builder.set_device_report(report);
}

}  // namespace stint::detail
