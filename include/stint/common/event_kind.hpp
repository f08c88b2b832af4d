#pragma once
// What produced an event: vocabulary shared by the recording engine (sites) and the analysis (events).

#include "stint/detail/require_cxx20.hpp"

#include <cstdint>      // std::uint8_t
#include <string_view>  // std::string_view

namespace stint {

/// What produced an event; decides the Chrome trace `cat` and which table rows it feeds.
enum class event_kind : std::uint8_t {
    user_annotation,  ///< STINT_SCOPE, STINT_SCOPE_NAMED, record_function, ProfilerStep#N
    cpu_op,           ///< STINT_OP
    instant,          ///< STINT_INSTANT (zero duration)
    module,           ///< STINT_MODULE, stint::module_scope: one call of a model module's method
    overhead,         ///< stint's own work during a session (registering a thread, taking a buffer chunk),
                      ///< or the device collector's (CUPTI's buffer flushes)
    // Device activity (cuda_activities): what a GPU did, and the CUDA API calls that asked for it.
    kernel,           ///< a kernel on a device stream
    gpu_memcpy,       ///< a copy on a device stream
    gpu_memset,       ///< a memset on a device stream
    cuda_sync,        ///< a synchronisation (stream, event, context) on a device stream
    cuda_runtime,     ///< a CUDA runtime API call on the CPU thread that made it (cudaLaunchKernel)
    cuda_driver,      ///< a CUDA driver API call on the CPU thread that made it (cuLaunchKernel)
    // Memory (profile_memory): instants on the thread that allocated, freed or ran out.
    memory,           ///< "[memory]": an allocation (positive bytes) or a free (negative)
    out_of_memory,    ///< "[OutOfMemory]": an allocation that failed
    // Work that crosses threads (annotations/flow.hpp, annotations/async_scope.hpp): zero-length points
    // on the thread that made them, inside the scope that was open there; the id they carry pairs them.
    flow_begin,       ///< STINT_FLOW_BEGIN, stint::flow_token: where work was handed over
    flow_end,         ///< STINT_FLOW_END, flow_token::end: where it ran
    async_begin,      ///< stint::async_scope began (a span that may end on another thread)
    async_end,        ///< ... and ended
    // Counters (annotations/counter.hpp): a value sampled now on the thread that set it, drawn on a counter
    // track of the process (one per name), never as a slice of its thread; event_list::counter_of reads it.
    counter,          ///< STINT_COUNTER, stint::counter
};

/// Whether events of this kind ran on a device (their device and stream say where), not on a CPU thread.
constexpr bool is_device_kind(event_kind kind) noexcept {
    return kind == event_kind::kernel || kind == event_kind::gpu_memcpy || kind == event_kind::gpu_memset ||
           kind == event_kind::cuda_sync;
}

/// Whether events of this kind are memory instants ([memory], [OutOfMemory]).
constexpr bool is_memory_kind(event_kind kind) noexcept {
    return kind == event_kind::memory || kind == event_kind::out_of_memory;
}

/// Whether events of this kind are the points of a flow or an async span: zero-length, with an id
/// (event_list::point_id), drawn as Chrome's flow ("s"/"f") and async ("b"/"e") events.
constexpr bool is_point_kind(event_kind kind) noexcept {
    return kind == event_kind::flow_begin || kind == event_kind::flow_end || kind == event_kind::async_begin ||
           kind == event_kind::async_end;
}

/// Whether an event of this kind lasts no time on its thread: an instant, a memory event, a point or a
/// counter's sample.
constexpr bool is_zero_length_kind(event_kind kind) noexcept {
    return kind == event_kind::instant || is_memory_kind(kind) || is_point_kind(kind) || kind == event_kind::counter;
}

/// Chrome trace category of a kind, as Kineto names it.
constexpr std::string_view category_name(event_kind kind) noexcept {
    switch (kind) {
        case event_kind::user_annotation: return "user_annotation";
        case event_kind::cpu_op: return "cpu_op";
        case event_kind::instant: return "cpu_instant_event";
        case event_kind::module: return "user_annotation";
        case event_kind::overhead: return "overhead";
        case event_kind::kernel: return "kernel";
        case event_kind::gpu_memcpy: return "gpu_memcpy";
        case event_kind::gpu_memset: return "gpu_memset";
        case event_kind::cuda_sync: return "cuda_sync";
        case event_kind::cuda_runtime: return "cuda_runtime";
        case event_kind::cuda_driver: return "cuda_driver";
        case event_kind::memory: return "cpu_instant_event";
        case event_kind::out_of_memory: return "cpu_instant_event";
        case event_kind::flow_begin: return "flow";
        case event_kind::flow_end: return "flow";
        case event_kind::async_begin: return "async";
        case event_kind::async_end: return "async";
        case event_kind::counter: return "counter";
    }
    return "unknown";
}

}  // namespace stint
