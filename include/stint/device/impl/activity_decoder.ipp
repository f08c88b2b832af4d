#pragma once
// The bodies of device/activity_decoder.hpp: CUPTI's activity records decoded into device activity.

#include "stint/device/activity_decoder.hpp"

#include <cxxabi.h>  // abi::__cxa_demangle

#include <cstdlib>  // std::free
#include <cstring>  // std::memcpy
#include <memory>  // std::unique_ptr
#include <utility>  // std::move

#include <fmt/format.h>  // fmt::format

namespace stint::detail {

std::string_view strip_api_version(std::string_view name) noexcept {
    const std::size_t at = name.rfind("_v");
    if (at == std::string_view::npos || name.size() - at < 6) return name;  // at least 4 digits
    for (std::size_t i = at + 2; i < name.size(); ++i) {
        if (name[i] < '0' || name[i] > '9') return name;
    }
    return name.substr(0, at);
}

// Records are read by memcpy into their struct: CUPTI packs them at 8-byte alignment, and a copy
// reads only the fields this version shares with newer ones.
template <class T>
T activity_decoder::read(const CUpti_Activity& r) noexcept {
    T value;
    std::memcpy(&value, &r, sizeof(T));
    return value;
}

template <class Each>
void activity_decoder::walk(const activity_buffer& b, Each&& each, bool count) {
    if (b.data == nullptr || b.valid_bytes == 0) return;
    CUpti_Activity* record = nullptr;
    const CUpti_Activity* previous = nullptr;
    for (;;) {
        const CUptiResult r = table_.get_next_record(b.data, b.valid_bytes, &record);
        if (count && r == CUPTI_SUCCESS && previous != nullptr && record != nullptr) {
            // The distance CUPTI walked from the previous record: that record's size in this library.
            const auto stride = static_cast<std::size_t>(reinterpret_cast<const std::uint8_t*>(record) -
                                                         reinterpret_cast<const std::uint8_t*>(previous));
            std::size_t& seen = out_.record_strides[static_cast<std::uint32_t>(previous->kind)];
            if (seen == 0 || stride < seen) seen = stride;
        }
        previous = record;
        if (r == CUPTI_ERROR_MAX_LIMIT_REACHED) return;
        if (r != CUPTI_SUCCESS || record == nullptr) {
            // An unknown kind stops the walk: the rest of the buffer is lost, and counted.
            if (count) {
                ++out_.report.loss.unknown_records;
                const auto* at = reinterpret_cast<const std::uint8_t*>(record);
                const std::size_t done = at != nullptr && at >= b.data && at < b.data + b.valid_bytes
                                             ? static_cast<std::size_t>(at - b.data)
                                             : 0;
                out_.report.loss.unparsed_bytes += b.valid_bytes - done;
            }
            return;
        }
        each(*record);
    }
}

template <class Copy>
device_activity* activity_decoder::add_copy(const Copy& m) {
    if (incomplete(m.start, m.end)) return nullptr;
    device_activity& a = add(event_kind::gpu_memcpy, m.start, m.end, m.correlationId);
    a.device = static_cast<std::int32_t>(m.deviceId);
    a.stream = m.streamId;
    a.args.context = m.contextId;
    a.args.bytes = m.bytes;
    a.args.copy_kind = m.copyKind;
    a.args.src_kind = m.srcKind;
    a.args.dst_kind = m.dstKind;
    a.args.graph_id = m.graphId;
    a.args.graph_node_id = m.graphNodeId;
    a.name = copy_name(m.copyKind, m.srcKind, m.dstKind);
    return &a;
}

void activity_decoder::decode(std::span<const activity_buffer> buffers, std::uint64_t epoch) {
    for (const activity_buffer& b : buffers) {
        if (b.epoch == epoch) walk(b, [&](const CUpti_Activity& r) { collect_correlation(r); });
    }
    for (const activity_buffer& b : buffers) {
        if (b.epoch != epoch) {
            walk(b, [&](const CUpti_Activity& r) {
                ++out_.report.loss.stale_records;
                free_overhead_data(r);
            }, false);
        } else {
            walk(b, [&](const CUpti_Activity& r) { decode_record(r); }, true);
        }
    }
    place_syncs();
}

void activity_decoder::collect_correlation(const CUpti_Activity& r) {
    if (r.kind != CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION) return;
    const auto c = read<cupti_external_correlation>(r);
    if (c.externalKind == stint_correlation_kind) external_[c.correlationId] = c.externalId;
}

void activity_decoder::free_overhead_data(const CUpti_Activity& r) {
    if (r.kind != CUPTI_ACTIVITY_KIND_OVERHEAD) return;
    std::free(read<cupti_overhead>(r).overheadData);
}

bool activity_decoder::incomplete(std::uint64_t start, std::uint64_t end) {
    if (start != 0 && end != 0 && end >= start) return false;
    ++out_.report.loss.incomplete_records;
    return true;
}

device_activity& activity_decoder::add(event_kind kind, std::uint64_t start, std::uint64_t end, std::uint32_t correlation) {
    device_activity& a = out_.activities.emplace_back();
    a.kind = kind;
    a.start_ticks = clock_.to_ticks(start);
    a.end_ticks = clock_.to_ticks(end);
    a.args.correlation = correlation;
    if (auto found = external_.find(correlation); correlation != 0 && found != external_.end()) {
        a.external_id = found->second;
    }
    return a;
}

void activity_decoder::decode_record(const CUpti_Activity& r) {
    switch (r.kind) {
        case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
        case CUPTI_ACTIVITY_KIND_KERNEL: {
            const auto k = read<cupti_kernel>(r);
            if (incomplete(k.start, k.end)) return;
            device_activity& a = add(event_kind::kernel, k.start, k.end, k.correlationId);
            a.device = static_cast<std::int32_t>(k.deviceId);
            a.stream = k.streamId;
            a.name = kernel_name(k.name);
            a.args.context = k.contextId;
            a.args.grid[0] = k.gridX;
            a.args.grid[1] = k.gridY;
            a.args.grid[2] = k.gridZ;
            a.args.block[0] = k.blockX;
            a.args.block[1] = k.blockY;
            a.args.block[2] = k.blockZ;
            a.args.registers_per_thread = k.registersPerThread;
            a.args.static_shared_memory = static_cast<std::uint32_t>(k.staticSharedMemory);
            a.args.dynamic_shared_memory = static_cast<std::uint32_t>(k.dynamicSharedMemory);
            a.args.graph_id = k.graphId;
            a.args.graph_node_id = k.graphNodeId;
            return;
        }
        case CUPTI_ACTIVITY_KIND_MEMCPY: add_copy(read<cupti_memcpy>(r)); return;
        case CUPTI_ACTIVITY_KIND_MEMCPY2: {
            const auto m = read<cupti_memcpy_peer>(r);
            if (device_activity* a = add_copy(m)) {
                a->args.peer = true;
                a->args.src_device = static_cast<std::int32_t>(m.srcDeviceId);
                a->args.dst_device = static_cast<std::int32_t>(m.dstDeviceId);
            }
            return;
        }
        case CUPTI_ACTIVITY_KIND_MEMSET: {
            const auto m = read<cupti_memset>(r);
            if (incomplete(m.start, m.end)) return;
            device_activity& a = add(event_kind::gpu_memset, m.start, m.end, m.correlationId);
            a.device = static_cast<std::int32_t>(m.deviceId);
            a.stream = m.streamId;
            a.args.context = m.contextId;
            a.args.bytes = m.bytes;
            a.args.src_kind = static_cast<std::uint8_t>(m.memoryKind);
            a.args.dst_kind = static_cast<std::uint8_t>(m.memoryKind);
            a.args.graph_id = m.graphId;
            a.args.graph_node_id = m.graphNodeId;
            a.name = intern(fmt::format("Memset ({})", memory_kind_name(m.memoryKind)));
            return;
        }
        case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION: {
            const auto s = read<cupti_sync>(r);
            if (incomplete(s.start, s.end)) return;
            device_activity& a = add(event_kind::cuda_sync, s.start, s.end, s.correlationId);
            // A sync's record names a context and stream, not a device: the join places it on the
            // device of other work in that context.
            a.device = -2;
            // A context or event sync names no stream (CUPTI_SYNCHRONIZATION_INVALID_VALUE): it keeps
            // that value, which the trace writes as Kineto does (stream -1, the device's own row).
            a.stream = s.streamId;
            a.args.context = s.contextId;
            a.args.sync_type = static_cast<std::uint32_t>(s.type);
            a.args.return_value = static_cast<std::int32_t>(s.returnValue);
            a.name = sync_type_name(static_cast<std::uint32_t>(s.type));
            return;
        }
        case CUPTI_ACTIVITY_KIND_RUNTIME:
        case CUPTI_ACTIVITY_KIND_DRIVER: {
            const auto c = read<cupti_api_call>(r);
            if (incomplete(c.start, c.end)) return;
            const bool runtime = r.kind == CUPTI_ACTIVITY_KIND_RUNTIME;
            device_activity& a =
                add(runtime ? event_kind::cuda_runtime : event_kind::cuda_driver, c.start, c.end, c.correlationId);
            a.thread = c.threadId;
            a.args.cbid = c.cbid;
            a.args.return_value = static_cast<std::int32_t>(c.returnValue);
            a.name = api_name(runtime ? CUPTI_CB_DOMAIN_RUNTIME_API : CUPTI_CB_DOMAIN_DRIVER_API, c.cbid);
            return;
        }
        case CUPTI_ACTIVITY_KIND_OVERHEAD: {
            const auto o = read<cupti_overhead>(r);
            std::free(o.overheadData);
            if (incomplete(o.start, o.end)) return;
            device_activity& a = add(event_kind::overhead, o.start, o.end, o.correlationId);
            // Where its object is: a thread or the process on the host; a stream on its device's stream
            // track; a device or context on the device's own row (no stream is invented for it).
            switch (o.objectKind) {
                case CUPTI_ACTIVITY_OBJECT_THREAD: a.thread = o.objectId.pt.threadId; break;
                case CUPTI_ACTIVITY_OBJECT_STREAM:
                    a.device = static_cast<std::int32_t>(o.objectId.dcs.deviceId);
                    a.stream = o.objectId.dcs.streamId;
                    break;
                case CUPTI_ACTIVITY_OBJECT_DEVICE:
                case CUPTI_ACTIVITY_OBJECT_CONTEXT:
                    a.device = static_cast<std::int32_t>(o.objectId.dcs.deviceId);
                    a.stream = CUPTI_SYNCHRONIZATION_INVALID_VALUE;
                    break;
                default: a.thread = 0; break;  // the process, or an object CUPTI did not name
            }
            const auto overhead = static_cast<std::uint32_t>(o.overheadKind);
            a.name = intern(fmt::format("CUPTI {}", overhead_kind_name(overhead)));
            return;
        }
        case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION: return;  // read in the first pass
        default: ++out_.report.loss.unknown_records; return;
    }
}

void activity_decoder::place_syncs() {
    std::unordered_map<std::uint32_t, std::int32_t> device_of_context;
    std::int32_t only_device = -1;
    bool several = false;
    for (const device_activity& a : out_.activities) {
        if (a.device < 0 || a.kind == event_kind::overhead) continue;
        device_of_context.emplace(a.args.context, a.device);
        if (only_device >= 0 && only_device != a.device) several = true;
        only_device = a.device;
    }
    std::size_t kept = 0;
    for (device_activity& a : out_.activities) {
        if (a.device == -2) {
            if (auto found = device_of_context.find(a.args.context); found != device_of_context.end()) {
                a.device = found->second;
            } else if (only_device >= 0 && !several) {
                a.device = only_device;
            } else {
                ++out_.report.loss.unknown_records;
                continue;
            }
        }
        out_.activities[kept++] = a;
    }
    out_.activities.resize(kept);
}

std::string_view activity_decoder::intern(std::string text) {
    auto [it, added] = interned_.try_emplace(text, std::string_view{});
    if (added) it->second = out_.keep(std::move(text));
    return it->second;
}

std::string_view activity_decoder::copy_name(std::uint8_t copy, std::uint8_t src, std::uint8_t dst) {
    return intern(fmt::format("Memcpy {} ({} -> {})", memcpy_kind_name(copy), memory_kind_name(src),
                              memory_kind_name(dst)));
}

std::string_view activity_decoder::kernel_name(const char* mangled) {
    if (mangled == nullptr) return "unknown kernel";
    auto [it, added] = kernels_.try_emplace(mangled, std::string_view{});
    if (!added) return it->second;
    int status = 0;
    std::unique_ptr<char, decltype(&std::free)> demangled(abi::__cxa_demangle(mangled, nullptr, nullptr, &status),
                                                          &std::free);
    it->second = intern(status == 0 && demangled ? std::string(demangled.get()) : std::string(mangled));
    return it->second;
}

std::string_view activity_decoder::api_name(CUpti_CallbackDomain domain, std::uint32_t cbid) {
    const std::uint64_t key = (std::uint64_t{static_cast<std::uint32_t>(domain)} << 32) | cbid;
    auto [it, added] = apis_.try_emplace(key, std::string_view{});
    if (!added) return it->second;
    const char* name = nullptr;
    if (table_.get_callback_name == nullptr || table_.get_callback_name(domain, cbid, &name) != CUPTI_SUCCESS ||
        name == nullptr) {
        const char* kind = domain == CUPTI_CB_DOMAIN_RUNTIME_API ? "cuda_runtime" : "cuda_driver";
        it->second = intern(fmt::format("{}_cbid_{}", kind, cbid));
    } else {
        it->second = intern(std::string(strip_api_version(name)));
    }
    return it->second;
}

}  // namespace stint::detail
