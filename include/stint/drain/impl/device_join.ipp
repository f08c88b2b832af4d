#pragma once
// The body of drain/device_join.hpp: device activity joined to the scopes that launched it.

#include "stint/drain/device_join.hpp"

namespace stint::detail {

void join_device_activity(event_list_builder& builder, device_capture& capture,
                          const std::unordered_map<std::uint64_t, event_index>& links,
                          const device_join_window& window, thread_of_tid_ref thread_of_tid) {
    device_report& report = capture.report;
    device_loss& loss = report.loss;
    builder.begin_run();  // device events and API calls are a run of their own, linked by correlation
    // API calls by correlation id, to check that device work does not start before its launch.
    std::unordered_map<std::uint32_t, std::uint64_t> launch_ticks;
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
