#pragma once
// stint::cuda_activities: what the GPU did under each op, from CUPTI's activity API (design §2, §3). The
// policy and its device backend only: a file that names the policy includes this header (it alone brings
// CUDA's headers, so a program without the policy compiles with no toolkit), and the file that runs the
// profiler includes <stint/stint.hpp> too.

#include <cstdint>  // std::uint64_t

#include "stint/device/cupti_collector.hpp"
#include "stint/device/device_capture.hpp"
#include "stint/common/activities.hpp"

namespace stint {

namespace detail {
/// cuda_activities' device backend: the process's CUPTI collector.
struct cupti_backend {
    static constexpr bool enabled = true;
    static bool push_external_id(std::uint64_t id) noexcept { return the_cupti_collector().push_external_id(id); }
    static void pop_external_id() noexcept { the_cupti_collector().pop_external_id(); }
    static bool start(const device_session_options& options) { return the_cupti_collector().start(options); }
    static device_capture stop(bool sync) { return the_cupti_collector().stop(sync); }
    /// The capture of a session whose device part could not start: no activity, the reason.
    static device_capture unavailable() {
        device_capture capture;
        capture.report = the_cupti_collector().report();
        return capture;
    }
};
}  // namespace detail

/// Records what CUDA devices did during a session: kernels, copies, memsets and synchronisations on
/// their streams, and the CUDA runtime and driver calls that launched them, each linked to the op or
/// scope (of this config) that was innermost on the launching thread. Like torch's ProfilerActivity.CUDA
/// through Kineto: device events in events() (`event::device`, `event_list::kernels(op)`), "Self CUDA" and
/// "CUDA total" in the table, Kineto's trace shape with `ac2g` flows.
///
/// libcupti is loaded at run time (never linked); where it, a driver or a device is missing, sessions
/// record the CPU only, say why once on stderr, and every trace says why under "stint"."device". While no
/// device session is live a scope costs what a timing-only one does; while one is, each scope pushes and
/// pops an external correlation id (two CUPTI calls) and appends a 24-byte link record.
///
///     using gpu = stint::config<stint::cuda_activities>;
///     stint::profiler<gpu> prof;
///     prof.start();
///     { STINT_OP(gpu, "my::gemm"); launch_gemm(stream); }
///     prof.stop();   // synchronises the devices first (profiler_options::sync_device_on_stop)
struct cuda_activities {
    using device_backend = detail::cupti_backend;
};

/// What this process can profile (torch's supported_activities()): the CPU, and CUDA when CUPTI loads, is
/// CUPTI 13, and a driver with a device is present. The first call loads CUPTI.
inline activity_set supported_activities() {
    activity_set set{activity::cpu};
    if (detail::the_cupti_collector().available()) set.insert(activity::cuda);
    return set;
}

}  // namespace stint
