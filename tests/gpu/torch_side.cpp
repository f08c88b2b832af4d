// The stint side of tests/gpu/torch_check.py: a shared library that Python loads with ctypes, so that a
// stint session and torch.profiler (Kineto) run in one process, on the same torch workload. A C
// interface only; built here with the rest of the GPU check (tests/gpu/make_bin_dir.sh).

#include <algorithm>
#include <cstdio>
#include <memory>
#include <string>
#include <string_view>

#include "stint/device/cuda_activities.hpp"
#include "stint/stint.hpp"

using gpu = stint::config<stint::cuda_activities>;

namespace {
std::unique_ptr<stint::profiler<gpu>> session;  // one at a time, driven from Python's one thread
}  // namespace

extern "C" {

/// Starts a session: device only (`with_cpu` 0, what torch.profiler(activities=[CUDA]) collects) or CPU
/// and device. 1 when the device collection is live, 0 when the session records the CPU only.
__attribute__((visibility("default"))) int stint_torch_side_start(int with_cpu) {
    stint::profiler_options<gpu> options;
    options.activities = with_cpu != 0 ? stint::activity_set{stint::activity::cpu, stint::activity::cuda}
                                       : stint::activity_set{stint::activity::cuda};
    session = std::make_unique<stint::profiler<gpu>>(options);
    session->start();
    return stint::detail::device_correlating.load(std::memory_order_acquire) ? 1 : 0;
}

/// Stops it: the number of kernels whose name contains `needle` (all kernels in `*all`), and the device
/// status, NUL-terminated, in `status` (at most `size` bytes).
__attribute__((visibility("default"))) long long stint_torch_side_stop(const char* needle, long long* all,
                                                                        char* status, int size) {
    if (!session) return -1;
    session->stop();
    long long matching = 0;
    long long kernels = 0;
    for (const stint::event& e : session->events()) {
        if (e.kind != stint::event_kind::kernel) continue;
        ++kernels;
        if (e.name.find(needle) != std::string_view::npos) ++matching;
    }
    *all = kernels;
    std::snprintf(status, static_cast<std::size_t>(std::max(size, 1)), "%s", session->stats().device_status.c_str());
    session.reset();
    return matching;
}

}  // extern "C"
