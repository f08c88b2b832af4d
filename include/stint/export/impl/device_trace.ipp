#pragma once
// The bodies of device_trace.hpp: the device part of a Chrome trace, written through json_writer.

#include "stint/export/device_trace.hpp"

#include <algorithm>  // std::find, std::max
#include <optional>   // std::optional
#include <utility>    // std::pair

#include <fmt/format.h>  // fmt::format

namespace stint::detail {

bool on_sync_row(const event_list& events, const event& e) noexcept {
    if (e.kind != event_kind::cuda_sync) return false;
    const device_args* args = events.device_args_of(e);
    return args != nullptr && args->sync_type == 3 && events.threads()[e.thread].os_tid != cupti_no_stream;
}

device_trace::device_trace(const event_list& events, std::uint64_t pid, std::uint64_t device_pid_base,
                           std::uint64_t flow_id_base)
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

void device_trace::write_metadata(json_writer& out, std::string_view process_name) const {
    std::vector<std::int32_t> devices;
    for (std::size_t t = 0; t < drawn_.size(); ++t) {
        if (!drawn_[t] && !sync_drawn_[t]) continue;
        const std::int32_t index = events_.threads()[t].device.index;
        if (std::find(devices.begin(), devices.end(), index) == devices.end()) devices.push_back(index);
    }
    for (const std::int32_t index : devices) {
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
        const thread_info& track = events_.threads()[t];
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

void device_trace::write_args(json_writer& out, const event& e) const {
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

void device_trace::write_flows(json_writer& out, const event& e) {
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

std::string device_trace::where_text(std::int64_t pid, std::uint64_t tid) {
    return fmt::format(", \"pid\": {}, \"tid\": {}, \"ts\": ", pid, tid);
}

std::string device_trace::where_text(std::uint64_t pid, std::uint64_t tid) {
    return fmt::format(", \"pid\": {}, \"tid\": {}, \"ts\": ", pid, tid);
}

const device_properties* device_trace::properties(std::int32_t index) const noexcept {
    for (const device_properties& p : events_.device().devices) {
        if (p.id == index && p.multiprocessors != 0) return &p;
    }
    return nullptr;
}

void device_trace::write_triple(json_writer& out, const std::int32_t (&values)[3]) {
    out.raw("[");
    out.number(values[0]);
    out.raw(", ");
    out.number(values[1]);
    out.raw(", ");
    out.number(values[2]);
    out.raw("]");
}

void device_trace::write_thread(json_writer& out, std::int64_t pid, std::uint64_t tid, const std::string& name,
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

void write_device_properties(json_writer& out, const std::vector<device_properties>& devices) {
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

void write_device_report(json_writer& out, const device_report& report) {
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
    const std::pair<std::string_view, std::uint64_t> counters[] = {
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
