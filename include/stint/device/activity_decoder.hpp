#pragma once
// Decodes CUPTI activity buffers into device_capture records (design §7): two passes over all buffers of
// a session, because the external-correlation record that names an API call's scope may sit in another
// buffer than the call or the work it launched (CUPTI keeps buffers per thread and per context).

#include <cstddef>  // std::size_t
#include <cstdint>  // std::int64_t, std::uint8_t, std::uint32_t, std::uint64_t
#include <iterator>  // std::size
#include <span>  // std::span
#include <string>  // std::string
#include <string_view>  // std::string_view
#include <unordered_map>  // std::unordered_map

#include "stint/device/cupti_api.hpp"
#include "stint/device/device_capture.hpp"

namespace stint::detail {

/// A completed CUPTI buffer: the bytes CUPTI filled, and the device session it was filled in.
struct activity_buffer {
    std::uint8_t* data = nullptr;
    std::size_t valid_bytes = 0;
    std::uint64_t epoch = 0;
    std::size_t capacity = 0;  ///< the bytes stint allocated for it (its budget share)
};

/// How CUPTI's timestamps map to stint's ticks: identity when CUPTI's clock is stint's (the timestamp
/// callback), else a line through one bracketed pair (CUPTI's own clock, CLOCK_REALTIME in ns).
struct cupti_clock_map {
    bool identity = true;
    std::uint64_t anchor_ticks = 0;
    std::uint64_t anchor_cupti = 0;
    double ticks_per_unit = 1.0;

    [[nodiscard]] std::uint64_t to_ticks(std::uint64_t t) const noexcept {
        if (identity || t == 0) return t;
        const auto delta = static_cast<double>(static_cast<std::int64_t>(t - anchor_cupti)) * ticks_per_unit;
        return anchor_ticks + static_cast<std::uint64_t>(static_cast<std::int64_t>(delta));
    }
};

/// Kineto's names of CUPTI's memory-copy and memory kinds.
constexpr std::string_view memcpy_kind_name(std::uint32_t kind) noexcept {
    constexpr std::string_view names[] = {"<unknown>", "HtoD", "DtoH", "HtoA", "AtoH", "AtoA",
                                          "AtoD",      "DtoA", "DtoD", "HtoH", "PtoP"};
    return kind < std::size(names) ? names[kind] : "<unknown>";
}
constexpr std::string_view memory_kind_name(std::uint32_t kind) noexcept {
    constexpr std::string_view names[] = {"Unknown", "Pageable", "Pinned",        "Device",
                                          "Array",   "Managed",  "Device Static", "Managed Static"};
    return kind < std::size(names) ? names[kind] : "Unrecognized";
}
static_assert(CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE == 1 &&
                  CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT == 2 &&
                  CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE == 3 &&
                  CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE == 4,
              "sync_type_name (analysis/event.hpp) numbers CUPTI's synchronization types");
constexpr std::string_view overhead_kind_name(std::uint32_t kind) noexcept {
    switch (kind) {
        case CUPTI_ACTIVITY_OVERHEAD_DRIVER_COMPILER: return "Driver Compiler";
        case CUPTI_ACTIVITY_OVERHEAD_CUPTI_BUFFER_FLUSH: return "Buffer Flush";
        case CUPTI_ACTIVITY_OVERHEAD_CUPTI_INSTRUMENTATION: return "Instrumentation";
        case CUPTI_ACTIVITY_OVERHEAD_CUPTI_RESOURCE: return "Resource";
        case CUPTI_ACTIVITY_OVERHEAD_RUNTIME_TRIGGERED_MODULE_LOADING: return "Runtime Triggered Module Loading";
        case CUPTI_ACTIVITY_OVERHEAD_LAZY_FUNCTION_LOADING: return "Lazy Function Loading";
        case CUPTI_ACTIVITY_OVERHEAD_COMMAND_BUFFER_FULL: return "Command Buffer Full";
        case CUPTI_ACTIVITY_OVERHEAD_ACTIVITY_BUFFER_REQUEST: return "Activity Buffer Request";
        case CUPTI_ACTIVITY_OVERHEAD_UVM_ACTIVITY_INIT: return "UVM Activity Init";
        default: return "Unknown";
    }
}

/// An API's name without CUPTI's version suffix: "cudaLaunchKernel_v7000" -> "cudaLaunchKernel".
inline std::string_view strip_api_version(std::string_view name) noexcept;

/// Turns a session's buffers into device activity.
class activity_decoder {
public:
    activity_decoder(const cupti_table& table, const cupti_clock_map& clock, device_capture& out)
        : table_(table), clock_(clock), out_(out) {}

    /// Decodes `buffers`; those of another epoch than `epoch` are a previous session's, counted stale.
    inline void decode(std::span<const activity_buffer> buffers, std::uint64_t epoch);

private:
    // Calls `each` for every record CUPTI walks; what it cannot walk is counted once (`count`).
    template <class Each>
    void walk(const activity_buffer& b, Each&& each, bool count = false);

    // Records are read by memcpy into their struct (device/impl/activity_decoder.ipp).
    template <class T>
    static T read(const CUpti_Activity& r) noexcept;

    // Only stint's kind: another client's ids (Kineto's CUSTOM0 and CUSTOM1) name none of stint's scopes.
    inline void collect_correlation(const CUpti_Activity& r);

    // An overhead record's details are malloc'ed by CUPTI and owned by the client (cupti_activity.h).
    inline static void free_overhead_data(const CUpti_Activity& r);

    // Zero or reversed timestamps: a record of work still running at a forced flush.
    inline bool incomplete(std::uint64_t start, std::uint64_t end);

    inline device_activity& add(event_kind kind, std::uint64_t start, std::uint64_t end, std::uint32_t correlation);

    inline void decode_record(const CUpti_Activity& r);

    // A sync record names a context, not a device: it goes to the device that other work of that
    // context ran on, or to the only device seen; otherwise it cannot be placed, and is counted.
    inline void place_syncs();

    // A copy (CUPTI's memcpy and peer-memcpy records share these fields); nullptr when incomplete.
    template <class Copy>
    device_activity* add_copy(const Copy& m);

    inline std::string_view intern(std::string text);

    inline std::string_view copy_name(std::uint8_t copy, std::uint8_t src, std::uint8_t dst);

    // Kernel names belong to CUPTI and repeat: demangled and copied once per pointer.
    inline std::string_view kernel_name(const char* mangled);

    // The callback's name from CUPTI (its version suffix removed), or "cuda_runtime_cbid_<n>" when CUPTI
    // cannot say (a test's table has no names).
    inline std::string_view api_name(CUpti_CallbackDomain domain, std::uint32_t cbid);

    const cupti_table& table_;
    cupti_clock_map clock_;
    device_capture& out_;
    std::unordered_map<std::uint32_t, std::uint64_t> external_;
    std::unordered_map<std::string, std::string_view> interned_;
    std::unordered_map<const char*, std::string_view> kernels_;
    std::unordered_map<std::uint64_t, std::string_view> apis_;
};

}  // namespace stint::detail

// Always inline, in either build: the decoder needs CUDA's headers, so it is compiled in the files that
// name stint::cuda_activities, never in <stint/impl/src.hpp> (design §16).
#include "stint/device/impl/activity_decoder.ipp"
