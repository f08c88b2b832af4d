#pragma once
// The device part of a Chrome trace, in Kineto's shape (design §4): where device events are drawn,
// their args, the `ac2g` flows from each CUDA API call to the work it launched, the metadata of
// devices and streams, and the device collection's report.

#include <cstddef>        // std::size_t
#include <cstdint>        // std::int32_t, std::int64_t, std::uint64_t
#include <string>         // std::string
#include <string_view>    // std::string_view
#include <unordered_map>  // std::unordered_map
#include <unordered_set>  // std::unordered_set
#include <vector>         // std::vector

#include "stint/analysis/event_list.hpp"
#include "stint/detail/separate_compilation.hpp"
#include "stint/export/json_writer.hpp"

namespace stint::detail {

/// Kineto's tid offset of a stream's sync row (output_json.h, kSyncStreamTidOffset): "Stream Sync"
/// events are drawn there, so that they do not overlap the kernels of their stream.
inline constexpr std::uint64_t sync_row_tid_offset = 1'000'000;
/// CUPTI's stream id of a record that applies to no stream (CUPTI_SYNCHRONIZATION_INVALID_VALUE).
inline constexpr std::uint64_t cupti_no_stream = 0xFFFFFFFFU;
/// Kineto's process_sort_index of GPU n is n + this (kExceedMaxPid): GPUs below the host processes.
inline constexpr std::int64_t gpu_sort_index_base = 5'000'000;

/// Whether an event is drawn on its stream's sync row: a stream synchronisation (Kineto's rule).
STINT_DECL bool on_sync_row(const event_list& events, const event& e) noexcept;

/// The tid of a device track: its stream id; 1 for work on no stream, as Kineto writes it (its -1,
/// made positive).
inline std::uint64_t device_track_tid(const thread_info& track) noexcept {
    return track.os_tid == cupti_no_stream ? 1 : track.os_tid;
}

/// Writes the device events of one event list: built once per trace, then asked per event.
///
/// Device tracks go on `pid` = device index and `tid` = stream, as Kineto writes them. A host process
/// whose pid is below 16 (pid 1 in a container) then shares its pid with a GPU, and viewers merge the
/// two; Kineto has the same collision, and tools group device work by that pid, so it is kept.
///
///     device_trace device(events, pid);
///     device.write_metadata(out, "stint");  // inside traceEvents
///     device.write_args(out, kernel);       // after "args": {
///     device.write_flows(out, kernel);      // after the kernel's event
class device_trace {
public:
    /// `device_pid_base` is added to a device's index to make its pid (0: Kineto's pids), and
    /// `flow_id_base` to each ac2g flow's id: a job's trace gives each rank's their own.
    STINT_DECL device_trace(const event_list& events, std::uint64_t pid, std::uint64_t device_pid_base = 0,
                            std::uint64_t flow_id_base = 0);

    /// ", "pid": P, "tid": T, "ts": " of the row an event is drawn on.
    [[nodiscard]] const std::string& where(const event& e) const noexcept {
        return e.on_device() && on_sync_row(events_, e) ? sync_where_[e.thread] : where_[e.thread];
    }

    /// Kineto's metadata of the devices and streams that events were drawn on: per device
    /// process_name, process_labels "GPU <n>", process_sort_index n + 5000000; per stream thread_name
    /// "stream <id> " (Kineto's "stream {} {}" with an empty postfix) and thread_sort_index <id>; a
    /// sync row "stream <id> (sync)"; work on no stream "Device <n>" (sort index -1).
    STINT_DECL void write_metadata(json_writer& out, std::string_view process_name) const;

    /// The args of a device event or CUDA API call, in Kineto's names and order, written after
    /// "args": {. "External id" is the launcher's id, left out when none was recorded (Kineto PR
    /// #1001: an id of its own would link it to an unrelated op) and when it is 0, which the launcher
    /// does not write either.
    STINT_DECL void write_args(json_writer& out, const event& e) const;

    /// Kineto's `ac2g` flow from the API call that launched device event `e` to `e`: "s" on the call
    /// at its start, "f" with "bp": "e" on `e` at its start. Nothing when no recorded call shares its
    /// correlation.
    STINT_DECL void write_flows(json_writer& out, const event& e);

private:
    [[nodiscard]] std::int64_t device_pid(std::int32_t index) const noexcept {
        return static_cast<std::int64_t>(device_pid_base_) + index;
    }
    STINT_DECL static std::string where_text(std::int64_t pid, std::uint64_t tid);
    STINT_DECL static std::string where_text(std::uint64_t pid, std::uint64_t tid);

    STINT_DECL const device_properties* properties(std::int32_t index) const noexcept;

    STINT_DECL static void write_triple(json_writer& out, const std::int32_t (&values)[3]);

    STINT_DECL static void write_thread(json_writer& out, std::int64_t pid, std::uint64_t tid, const std::string& name,
                                        std::int64_t sort_index);

    const event_list& events_;
    std::uint64_t device_pid_base_ = 0;
    std::uint64_t flow_id_base_ = 0;
    std::vector<std::string> where_;       // per track: its pid and tid
    std::vector<std::string> sync_where_;  // per device track: its sync row's, when drawn
    std::vector<bool> drawn_;              // per track: device events drawn on it
    std::vector<bool> sync_drawn_;         // per track: stream synchronisations drawn on its sync row
    std::unordered_map<std::uint32_t, event_index> api_call_;  // correlation -> its API call
    std::unordered_set<std::uint32_t> flowed_;  // correlations whose id a flow has taken
    std::uint64_t max_correlation_ = 0;
    std::uint64_t next_flow_id_ = 1;
};

/// Kineto's "deviceProperties" entries (DeviceProperties.cpp keys), written inside the array.
STINT_DECL void write_device_properties(json_writer& out, const std::vector<device_properties>& devices);

/// The "device" object of the "stint" block: the collection's status and every loss counter by name.
STINT_DECL void write_device_report(json_writer& out, const device_report& report);

}  // namespace stint::detail

#if defined(STINT_HEADER_ONLY)
#include "stint/export/impl/device_trace.ipp"
#endif
