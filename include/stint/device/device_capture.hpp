#pragma once
// What a device collector hands the drain at stop: the session's device activity, decoded from the
// collector's own format (CUPTI records) into plain values, and the collection's report. No CUDA type
// appears here: the drain and every analysis compile without the toolkit.

#include <cstddef>      // std::size_t
#include <cstdint>      // std::uint64_t, std::uint32_t, std::int32_t
#include <deque>        // std::deque
#include <map>          // std::map
#include <string>       // std::string
#include <string_view>  // std::string_view
#include <vector>       // std::vector

#include "stint/analysis/event.hpp"
#include "stint/common/event_kind.hpp"

namespace stint::detail {

/// What a device session asks of the collector.
struct device_session_options {
    std::size_t budget_bytes = std::size_t{128} << 20;  ///< CUPTI buffers held at once
    std::size_t buffer_bytes = std::size_t{4} << 20;    ///< one buffer (CUPTI advises 1 to 10 MiB)
    bool sync_events = false;  ///< CUPTI's synchronization records (torch: enable_cuda_sync_events)
    bool teardown = true;      ///< cuptiFinalize after a session that synchronised the devices at stop
};

/// One decoded activity record: device work (kernel, copy, memset, sync), an API call or an overhead.
struct device_activity {
    event_kind kind = event_kind::kernel;
    std::uint64_t start_ticks = 0;  ///< on stint's tick clock (the collector maps its clock to it)
    std::uint64_t end_ticks = 0;
    std::int32_t device = -1;       ///< device work: the device index; else -1
    std::uint32_t stream = 0;       ///< device work: the stream
    std::uint64_t thread = 0;       ///< API calls and thread overheads: the OS thread id (gettid)
    std::string_view name;          ///< final display name; storage owned by the capture or static
    std::uint64_t external_id = 0;  ///< the scope's external correlation id, when the collector found one
    device_args args;
};

/// A session's device activity and what the collection reported about itself.
struct device_capture {
    std::vector<device_activity> activities;
    std::deque<std::string> names;  ///< storage for activities' names (a deque never moves them)
    device_report report;
    /// The ticks of the stopping thread's own device synchronisation (sync_device_on_stop): its API
    /// calls in that span are stint's, not the program's, and are left out.
    std::uint64_t own_thread = 0;
    std::uint64_t own_from_ticks = 0;
    std::uint64_t own_until_ticks = 0;
    /// Each record kind's size as the loaded library laid it out (the step between two records in a
    /// buffer, the smallest seen), by CUpti_ActivityKind: the GPU check compares it with the headers'.
    std::map<std::uint32_t, std::size_t> record_strides;

    std::string_view keep(std::string text) { return names.emplace_back(std::move(text)); }
};

}  // namespace stint::detail
