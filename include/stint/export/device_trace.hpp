#pragma once
// The device part of a Chrome trace, in Kineto's shape (design §4): where device events are drawn,
// their args, the `ac2g` flows from each CUDA API call to the work it launched, the metadata of
// devices and streams, and the device collection's report.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "stint/analysis/event_list.hpp"
#include "stint/detail/deferred.hpp"
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
template <class = void>
bool on_sync_row(const event_list& events, const event& e) noexcept {
    if (e.kind != event_kind::cuda_sync) return false;
    const device_args* args = events.device_args_of(e);
    return args != nullptr && args->sync_type == 3 && events.threads()[e.thread].os_tid != cupti_no_stream;
}

/// The tid of a device track: its stream id; 1 for work on no stream, as Kineto writes it (its -1,
/// made positive).
template <class = void>
std::uint64_t device_track_tid(const thread_info& track) noexcept {
    return track.os_tid == cupti_no_stream ? 1 : track.os_tid;
}

template <class = void>
class basic_device_trace;
/// basic_device_trace's one form (a template only so that a file that does not use it does not compile it).
using device_trace = basic_device_trace<>;

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
template <class Unused>
class basic_device_trace {
    template <class T>
    using later = deferred_t<T, Unused>;  // checked when used (detail/deferred.hpp)

public:
    /// `device_pid_base` is added to a device's index to make its pid (0: Kineto's pids), and
    /// `flow_id_base` to each ac2g flow's id: a job's trace gives each rank's their own.
    basic_device_trace(const later<event_list>& events, std::uint64_t pid, std::uint64_t device_pid_base = 0,
                 std::uint64_t flow_id_base = 0)
        : events_(events), device_pid_base_(device_pid_base), flow_id_base_(flow_id_base) {
        const std::size_t tracks = events.threads().size();
        where_.reserve(tracks);
        for (const thread_info& t : events.threads()) {
            if (t.is_device_track()) {
                where_.push_back(where_text(device_pid(t.device.index), device_track_tid(t)));
            } else {
                where_.push_back(where_text(pid, t.os_tid));
            }
        }
        sync_where_.resize(tracks);
        drawn_.assign(tracks, false);
        sync_drawn_.assign(tracks, false);
        if (!events.has_device_events()) return;
        for (const event& e : events) {
            if (!e.on_device()) continue;
            if (on_sync_row(events, e)) {
                sync_drawn_[e.thread] = true;
            } else {
                drawn_[e.thread] = true;
            }
        }
        for (std::size_t t = 0; t < tracks; ++t) {
            const thread_info& track = events.threads()[t];
            if (!sync_drawn_[t]) continue;
            sync_where_[t] = where_text(device_pid(track.device.index), track.os_tid + sync_row_tid_offset);
        }
        // The API call of each correlation; the runtime call where the driver call it made shares it.
        for (const event& e : events) {
            const device_args* args = events.device_args_of(e);
            if (args == nullptr) continue;
            max_correlation_ = std::max<std::uint64_t>(max_correlation_, args->correlation);
            if (e.kind != event_kind::cuda_runtime && e.kind != event_kind::cuda_driver) continue;
            if (args->correlation == 0) continue;  // CUPTI's ids start at 1; 0 links nothing
            const auto [at, added] = api_call_.try_emplace(args->correlation, events.index_of(e));
            if (!added && e.kind == event_kind::cuda_runtime && events[at->second].kind != event_kind::cuda_runtime) {
                at->second = events.index_of(e);
            }
        }
        next_flow_id_ = max_correlation_ + 1;
    }

    /// ", "pid": P, "tid": T, "ts": " of the row an event is drawn on.
    [[nodiscard]] const std::string& where(const event& e) const noexcept {
        return e.on_device() && on_sync_row(events_, e) ? sync_where_[e.thread] : where_[e.thread];
    }

    /// Kineto's metadata of the devices and streams that events were drawn on: per device
    /// process_name, process_labels "GPU <n>", process_sort_index n + 5000000; per stream thread_name
    /// "stream <id> " (Kineto's "stream {} {}" with an empty postfix) and thread_sort_index <id>; a
    /// sync row "stream <id> (sync)"; work on no stream "Device <n>" (sort index -1).
    template <class Writer>
    void write_metadata(Writer& out, std::string_view process_name) const {
        later<std::vector<std::int32_t>> devices;
        for (std::size_t t = 0; t < drawn_.size(); ++t) {
            if (!drawn_[t] && !sync_drawn_[t]) continue;
            const std::int32_t index = events_.threads()[t].device.index;
            if (std::find(devices.begin(), devices.end(), index) == devices.end()) devices.push_back(index);
        }
        for (const later<std::int32_t> index : devices) {
            const auto process = [&](std::string_view name) {
                out.raw(",\n    {\"name\": \"");
                out.raw(name);
                out.raw("\", \"ph\": \"M\", \"ts\": 0, \"pid\": ");
                out.number(device_pid(index));
                out.raw(", \"tid\": 0, \"args\": {");
            };
            process("process_name");
            out.raw("\"name\": ");
            out.string(process_name);
            out.raw("}}");
            process("process_labels");
            out.raw("\"labels\": ");
            out.string(fmt::format("GPU {}", index));
            out.raw("}}");
            process("process_sort_index");
            out.raw("\"sort_index\": ");
            out.number(gpu_sort_index_base + index);
            out.raw("}}");
        }
        for (std::size_t t = 0; t < drawn_.size(); ++t) {
            const later<thread_info>& track = events_.threads()[t];
            if (drawn_[t]) {
                if (track.os_tid == cupti_no_stream) {
                    write_thread(out, device_pid(track.device.index), 1, fmt::format("Device {}", track.device.index),
                                 -1);
                } else {
                    write_thread(out, device_pid(track.device.index), track.os_tid,
                                 fmt::format("stream {} ", track.os_tid),
                                 static_cast<std::int64_t>(track.os_tid));
                }
            }
            if (sync_drawn_[t]) {
                write_thread(out, device_pid(track.device.index), track.os_tid + sync_row_tid_offset,
                             fmt::format("stream {} (sync)", track.os_tid), static_cast<std::int64_t>(track.os_tid));
            }
        }
    }

    /// The args of a device event or CUDA API call, in Kineto's names and order, written after
    /// "args": {. "External id" is the launcher's id, left out when none was recorded (Kineto PR
    /// #1001: an id of its own would link it to an unrelated op) and when it is 0, which the launcher
    /// does not write either.
    template <class Writer>
    void write_args(Writer& out, const event& e) const {
        const device_args none{};
        const device_args* found = events_.device_args_of(e);
        const device_args& a = found != nullptr ? *found : none;
        bool first = true;
        const auto key = [&](std::string_view name) {
            out.raw(first ? "\"" : ", \"");
            first = false;
            out.raw(name);
            out.raw("\": ");
        };
        if (const std::optional<event> launcher = events_.launcher(e); launcher && launcher->id != 0) {
            key("External id");
            out.number(launcher->id);
        }
        if (!e.on_device()) {  // a CUDA API call
            key("cbid");
            out.number(a.cbid);
            key("correlation");
            out.number(a.correlation);
            return;
        }
        const std::int64_t stream = e.stream == cupti_no_stream ? -1 : static_cast<std::int64_t>(e.stream);
        if (e.kind == event_kind::cuda_sync) {  // Kineto's CudaSyncActivity order
            key("cuda_sync_kind");
            out.string(sync_type_name(a.sync_type));
            key("stream");
            out.number(stream);
            key("correlation");
            out.number(a.correlation);
            key("device");
            out.number(e.device.index);
            key("context");
            out.number(a.context);
            return;
        }
        if (e.kind == event_kind::gpu_memcpy && a.peer) {
            // Kineto's peer copy: source, executing and destination device; stint keeps the context
            // of the executing one only.
            key("fromDevice");
            out.number(a.src_device);
            key("inDevice");
            out.number(e.device.index);
            key("toDevice");
            out.number(a.dst_device);
            key("inContext");
            out.number(a.context);
        } else {
            key("device");
            out.number(e.device.index);
            key("context");
            out.number(a.context);
        }
        key("stream");
        out.number(stream);
        key("correlation");
        out.number(a.correlation);
        if (e.kind == event_kind::kernel) {
            key("registers per thread");
            out.number(a.registers_per_thread);
            key("shared memory");
            out.number(std::uint64_t{a.static_shared_memory} + a.dynamic_shared_memory);
            if (const device_properties* props = properties(e.device.index)) {
                // Kineto's: grid blocks over the SM count, and that times threads per block over a warp.
                const double blocks = static_cast<double>(a.grid[0]) * a.grid[1] * a.grid[2] / props->multiprocessors;
                const double warp = props->warp_size != 0 ? props->warp_size : 32.0;
                key("blocks per SM");
                out.number(blocks);
                key("warps per SM");
                out.number(blocks * (static_cast<double>(a.block[0]) * a.block[1] * a.block[2]) / warp);
            }
            key("grid");
            write_triple(out, a.grid);
            key("block");
            write_triple(out, a.block);
        } else {
            key("bytes");
            out.number(a.bytes);
            if (e.duration_ns() > 0) {
                // Kineto's: bytes per nanosecond, which is GB/s.
                key("memory bandwidth (GB/s)");
                out.number(static_cast<double>(a.bytes) / static_cast<double>(e.duration_ns()));
            }
        }
        if (a.graph_id != 0) {
            key("graph id");
            out.number(a.graph_id);
            key("graph node id");
            out.number(a.graph_node_id);
        }
    }

    /// Kineto's `ac2g` flow from the API call that launched device event `e` to `e`: "s" on the call
    /// at its start, "f" with "bp": "e" on `e` at its start. Nothing when no recorded call shares its
    /// correlation.
    template <class Writer>
    void write_flows(Writer& out, const event& e) {
        const device_args* args = events_.device_args_of(e);
        if (args == nullptr || args->correlation == 0) return;
        const auto call = api_call_.find(args->correlation);
        if (call == api_call_.end()) return;
        // A flow's id is the correlation, as Kineto writes it. A CUDA graph launch gives all its kernels
        // one correlation, and viewers join an "s" and an "f" by id, so only the first event of a
        // correlation takes it; the others take ids above every correlation in the list, which no
        // Kineto-style id can collide with.
        const std::uint64_t id =
            flow_id_base_ + (flowed_.insert(args->correlation).second ? args->correlation : next_flow_id_++);
        const event& launch = events_[call->second];
        out.raw(",\n    {\"ph\": \"s\", \"id\": ");
        out.number(id);
        out.raw(", \"cat\": \"ac2g\", \"name\": \"ac2g\"");
        out.raw(where_[launch.thread]);
        out.microseconds(launch.start_ns);
        out.raw("},\n    {\"ph\": \"f\", \"id\": ");
        out.number(id);
        out.raw(", \"cat\": \"ac2g\", \"name\": \"ac2g\", \"bp\": \"e\"");
        out.raw(where(e));
        out.microseconds(e.start_ns);
        out.raw("}");
    }

private:
    [[nodiscard]] std::int64_t device_pid(std::int32_t index) const noexcept {
        return static_cast<std::int64_t>(device_pid_base_) + index;
    }
    template <class Pid>
    static std::string where_text(Pid pid, std::uint64_t tid) {
        return fmt::format(", \"pid\": {}, \"tid\": {}, \"ts\": ", pid, tid);
    }

    const device_properties* properties(std::int32_t index) const noexcept {
        for (const device_properties& p : events_.device().devices) {
            if (p.id == index && p.multiprocessors != 0) return &p;
        }
        return nullptr;
    }

    template <class Writer>
    static void write_triple(Writer& out, const std::int32_t (&values)[3]) {
        out.raw("[");
        out.number(values[0]);
        out.raw(", ");
        out.number(values[1]);
        out.raw(", ");
        out.number(values[2]);
        out.raw("]");
    }

    template <class Writer>
    static void write_thread(Writer& out, std::int64_t pid, std::uint64_t tid, const std::string& name,
                             std::int64_t sort_index) {
        out.raw(",\n    {\"name\": \"thread_name\", \"ph\": \"M\", \"ts\": 0, \"pid\": ");
        out.number(pid);
        out.raw(", \"tid\": ");
        out.number(tid);
        out.raw(", \"args\": {\"name\": ");
        out.string(name);
        out.raw("}},\n    {\"name\": \"thread_sort_index\", \"ph\": \"M\", \"ts\": 0, \"pid\": ");
        out.number(pid);
        out.raw(", \"tid\": ");
        out.number(tid);
        out.raw(", \"args\": {\"sort_index\": ");
        out.number(sort_index);
        out.raw("}}");
    }

    const later<event_list>& events_;
    std::uint64_t device_pid_base_ = 0;
    std::uint64_t flow_id_base_ = 0;
    later<std::vector<std::string>> where_;       // per track: its pid and tid
    later<std::vector<std::string>> sync_where_;  // per device track: its sync row's, when drawn
    later<std::vector<bool>> drawn_;              // per track: device events drawn on it
    later<std::vector<bool>> sync_drawn_;         // per track: stream synchronisations drawn on its sync row
    later<std::unordered_map<std::uint32_t, event_index>> api_call_;  // correlation -> its API call
    later<std::unordered_set<std::uint32_t>> flowed_;  // correlations whose id a flow has taken
    std::uint64_t max_correlation_ = 0;
    std::uint64_t next_flow_id_ = 1;
};

/// Kineto's "deviceProperties" entries (DeviceProperties.cpp keys), written inside the array.
template <class Writer>
void write_device_properties(Writer& out, const deferred_t<std::vector<device_properties>, Writer>& devices) {
    for (std::size_t i = 0; i < devices.size(); ++i) {
        const device_properties& d = devices[i];
        out.raw(i == 0 ? "\n    {\"id\": " : ",\n    {\"id\": ");
        out.number(d.id);
        out.raw(", \"name\": ");
        out.string(d.name);
        out.raw(", \"totalGlobalMem\": ");
        out.number(d.total_global_memory);
        out.raw(", \"computeMajor\": ");
        out.number(d.compute_major);
        out.raw(", \"computeMinor\": ");
        out.number(d.compute_minor);
        out.raw(", \"maxThreadsPerBlock\": ");
        out.number(d.max_threads_per_block);
        out.raw(", \"maxThreadsPerMultiprocessor\": ");
        out.number(d.max_threads_per_multiprocessor);
        out.raw(", \"regsPerBlock\": ");
        out.number(d.max_registers_per_block);
        out.raw(", \"warpSize\": ");
        out.number(d.warp_size);
        out.raw(", \"sharedMemPerBlock\": ");
        out.number(d.max_shared_memory_per_block);
        out.raw(", \"numSms\": ");
        out.number(d.multiprocessors);
        out.raw(", \"regsPerMultiprocessor\": ");
        out.number(d.max_registers_per_multiprocessor);
        out.raw(", \"sharedMemPerMultiprocessor\": ");
        out.number(d.max_shared_memory_per_multiprocessor);
        out.raw("}");
    }
    if (!devices.empty()) out.raw("\n  ");
}

/// The "device" object of the "stint" block: the collection's status and every loss counter by name.
template <class Writer>
void write_device_report(Writer& out, const device_report& report) {
    out.raw("{\"status\": ");
    out.string(report.status);
    out.raw(", \"library\": ");
    out.string(report.library);
    out.raw(", \"cupti_version\": ");
    out.number(report.cupti_version);
    out.raw(", \"cupti_headers\": ");
    out.number(report.cupti_headers);
    out.raw(", \"clock_alignment\": ");
    out.string(report.clock_alignment);
    out.raw(", \"clock_error_ns\": ");
    out.number(report.clock_error_ns);
    out.raw(", \"torn_down\": ");
    out.raw(report.torn_down ? "true" : "false");
    const device_loss& loss = report.loss;
    const deferred_t<std::pair<std::string_view, std::uint64_t>, Writer> counters[] = {
        {"dropped_records", loss.dropped_records},
        {"rejected_buffers", loss.rejected_buffers},
        {"foreign_buffers", loss.foreign_buffers},
        {"incomplete_records", loss.incomplete_records},
        {"unknown_records", loss.unknown_records},
        {"unparsed_bytes", loss.unparsed_bytes},
        {"unlinked_records", loss.unlinked_records},
        {"out_of_window_records", loss.out_of_window_records},
        {"stale_records", loss.stale_records},
        {"gpu_before_launch", loss.gpu_before_launch},
    };
    for (const auto& [name, value] : counters) {
        out.raw(", \"");
        out.raw(name);
        out.raw("\": ");
        out.number(value);
    }
    out.raw("}");
}

}  // namespace stint::detail
