#pragma once
// A CUPTI stand-in for the tests (design §6): a cupti_table whose functions record what stint asks and
// hand stint buffers that a test filled with real CUDA 13 record structs, through the very callbacks
// CUPTI would call. Everything after "CUPTI completes a buffer" then runs as in production.

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "stint/device/cuda_activities.hpp"
#include "stint/stint.hpp"

namespace stint_test {

/// Record sizes as libcupti 13.0 lays them out: consecutive, at the size of the newest struct.
inline std::size_t record_size(CUpti_ActivityKind kind) {
    using namespace stint::detail;
    switch (kind) {
        case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: return sizeof(cupti_kernel);
        case CUPTI_ACTIVITY_KIND_MEMCPY: return sizeof(cupti_memcpy);
        case CUPTI_ACTIVITY_KIND_MEMCPY2: return sizeof(cupti_memcpy_peer);
        case CUPTI_ACTIVITY_KIND_MEMSET: return sizeof(cupti_memset);
        case CUPTI_ACTIVITY_KIND_RUNTIME:
        case CUPTI_ACTIVITY_KIND_DRIVER: return sizeof(cupti_api_call);
        case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION: return sizeof(cupti_external_correlation);
        case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION: return sizeof(cupti_sync);
        case CUPTI_ACTIVITY_KIND_OVERHEAD: return sizeof(cupti_overhead);
        default: return 0;
    }
}

/// What the fake CUPTI saw and will answer. One per process, reset by each test.
struct fake_cupti_state {
    std::mutex mutex;
    CUpti_BuffersCallbackRequestFunc request = nullptr;
    CUpti_BuffersCallbackCompleteFunc complete = nullptr;
    CUpti_TimestampCallbackFunc timestamp = nullptr;
    CUptiResult timestamp_result = CUPTI_SUCCESS;  // what registering the timestamp callback answers
    std::uint64_t (*own_clock)() = nullptr;         // cuptiGetTimestamp's clock when set (else the callback's)
    std::vector<CUpti_ActivityKind> enabled;
    std::vector<CUpti_ActivityKind> disabled;       // every disable, in order
    std::vector<CUpti_ActivityKind> disabled_at_sync;  // what was disabled when the fake driver synchronised
    CUpti_ActivityThreadIdType thread_id_type = CUPTI_ACTIVITY_THREAD_ID_TYPE_DEFAULT;
    std::size_t registrations = 0;                  // cuptiActivityRegisterCallbacks calls
    CUptiResult subscribe_result = CUPTI_SUCCESS;   // CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED: another client
    std::size_t subscribed = 0;                     // live probe subscriptions
    std::size_t finalized = 0;                      // cuptiFinalize calls
    std::size_t finalized_at_exit = 0;              // of which from an API exit callback
    std::string subscriber_name;                    // what cuptiSubscribe_v2 names as the other subscriber
    bool with_subscribe_v2 = false;                 // whether the table has cuptiSubscribe_v2
    CUpti_CallbackFunc callback = nullptr;          // the live subscriber's callback, and its data
    void* callback_data = nullptr;
    bool driver_domain = false;                     // its driver-API domain enabled
    bool exit_callbacks = true;                     // false: CUPTI calls no subscriber back
    std::size_t in_callback = 0;                    // threads inside the subscriber's callback now
    std::size_t driver_inits = 0;                   // cuInit calls
    std::vector<CUpti_ExternalCorrelationKind> pushed_kinds;
    std::map<CUpti_ActivityKind, CUptiResult> enable_result;  // scripted failures
    CUptiResult register_result = CUPTI_SUCCESS;
    std::vector<std::uint64_t> pushed;  // every id pushed, in order
    std::size_t pops = 0;
    std::atomic<std::size_t> calls{0};  // every call through the table (a teardown callback may count from another thread)
    std::size_t dropped_next = 0;       // what GetNumDroppedRecords answers next
    std::vector<std::pair<std::uint8_t*, std::size_t>> in_flight;  // filled, not yet completed
    std::vector<std::pair<std::uint8_t*, std::size_t>> partial;    // still being filled: only a forced flush
    std::size_t flushes = 0;
};
inline fake_cupti_state& fake() {
    static fake_cupti_state state;
    return state;
}

/// The table; its functions take no lock of stint's.
inline stint::detail::cupti_table fake_table() {
    stint::detail::cupti_table t;
    t.get_version = [](std::uint32_t* v) { ++fake().calls; *v = 130001; return CUPTI_SUCCESS; };
    t.get_result_string = [](CUptiResult r, const char** s) {
        *s = r == CUPTI_ERROR_UNKNOWN ? "CUPTI_ERROR_UNKNOWN" : "CUPTI_ERROR_OTHER";
        return CUPTI_SUCCESS;
    };
    t.get_timestamp = [](std::uint64_t* ts) {
        ++fake().calls;
        *ts = fake().own_clock != nullptr    ? fake().own_clock()
              : fake().timestamp != nullptr ? fake().timestamp()
                                            : stint::read_ticks();
        return CUPTI_SUCCESS;
    };
    t.get_callback_name = [](CUpti_CallbackDomain domain, std::uint32_t cbid, const char** name) {
        if (domain == CUPTI_CB_DOMAIN_RUNTIME_API && cbid == 211) *name = "cudaLaunchKernel_v7000";
        else if (domain == CUPTI_CB_DOMAIN_RUNTIME_API && cbid == 31) *name = "cudaMemcpy_v3020";
        else if (domain == CUPTI_CB_DOMAIN_RUNTIME_API && cbid == 311) *name = "cudaGraphLaunch_v10000";
        else if (domain == CUPTI_CB_DOMAIN_DRIVER_API && cbid == 307) *name = "cuLaunchKernel";
        else return CUPTI_ERROR_INVALID_PARAMETER;
        return CUPTI_SUCCESS;
    };
    t.get_thread_id_type = [](CUpti_ActivityThreadIdType* type) {
        ++fake().calls;
        *type = fake().thread_id_type;
        return CUPTI_SUCCESS;
    };
    t.set_thread_id_type = [](CUpti_ActivityThreadIdType type) {
        ++fake().calls;
        fake().thread_id_type = type;
        return CUPTI_SUCCESS;
    };
    t.register_timestamp_callback = [](CUpti_TimestampCallbackFunc f) {
        ++fake().calls;
        if (fake().timestamp_result != CUPTI_SUCCESS) return fake().timestamp_result;
        fake().timestamp = f;
        return CUPTI_SUCCESS;
    };
    t.register_callbacks = [](CUpti_BuffersCallbackRequestFunc req, CUpti_BuffersCallbackCompleteFunc done) {
        ++fake().calls;
        ++fake().registrations;
        fake().request = req;
        fake().complete = done;
        return fake().register_result;
    };
    t.enable = [](CUpti_ActivityKind kind) {
        ++fake().calls;
        if (auto it = fake().enable_result.find(kind); it != fake().enable_result.end()) return it->second;
        fake().enabled.push_back(kind);
        return CUPTI_SUCCESS;
    };
    t.disable = [](CUpti_ActivityKind kind) {
        ++fake().calls;
        fake().disabled.push_back(kind);
        return CUPTI_SUCCESS;
    };
    t.enable_runtime_api = [](CUpti_CallbackId, std::uint8_t) { ++fake().calls; return CUPTI_SUCCESS; };
    t.enable_driver_api = [](CUpti_CallbackId, std::uint8_t) { ++fake().calls; return CUPTI_SUCCESS; };
    t.flush_all = [](std::uint32_t flags) {
        ++fake().calls;
        ++fake().flushes;
        std::vector<std::pair<std::uint8_t*, std::size_t>> buffers;
        {
            const std::lock_guard lock(fake().mutex);
            buffers.swap(fake().in_flight);
            if ((flags & CUPTI_ACTIVITY_FLAG_FLUSH_FORCED) != 0) {
                buffers.insert(buffers.end(), fake().partial.begin(), fake().partial.end());
                fake().partial.clear();
            }
        }
        for (auto [data, valid] : buffers) fake().complete(nullptr, 0, data, valid, valid);
        return CUPTI_SUCCESS;
    };
    t.get_next_record = [](std::uint8_t* buffer, std::size_t valid, CUpti_Activity** record) {
        if (buffer == nullptr) return CUPTI_ERROR_INVALID_PARAMETER;
        std::uint8_t* at = buffer;
        if (*record != nullptr) {
            at = reinterpret_cast<std::uint8_t*>(*record) + record_size((*record)->kind);
        }
        if (at + sizeof(CUpti_Activity) > buffer + valid) return CUPTI_ERROR_MAX_LIMIT_REACHED;
        CUpti_Activity head;
        std::memcpy(&head, at, sizeof(head));
        const std::size_t size = record_size(head.kind);
        if (size == 0) {
            *record = reinterpret_cast<CUpti_Activity*>(at);
            return CUPTI_ERROR_INVALID_KIND;
        }
        if (at + size > buffer + valid) return CUPTI_ERROR_MAX_LIMIT_REACHED;  // a truncated tail is skipped
        *record = reinterpret_cast<CUpti_Activity*>(at);
        return CUPTI_SUCCESS;
    };
    t.get_num_dropped_records = [](CUcontext, std::uint32_t, std::size_t* n) {
        *n = fake().dropped_next;
        fake().dropped_next = 0;
        return CUPTI_SUCCESS;
    };
    t.push_external_id = [](CUpti_ExternalCorrelationKind kind, std::uint64_t id) {
        ++fake().calls;
        fake().pushed_kinds.push_back(kind);
        fake().pushed.push_back(id);
        return CUPTI_SUCCESS;
    };
    t.pop_external_id = [](CUpti_ExternalCorrelationKind, std::uint64_t*) {
        ++fake().calls;
        ++fake().pops;
        return CUPTI_SUCCESS;
    };
    t.subscribe = [](CUpti_SubscriberHandle* handle, CUpti_CallbackFunc callback, void* data) {
        const std::lock_guard lock(fake().mutex);
        ++fake().calls;
        if (fake().subscribe_result != CUPTI_SUCCESS) return fake().subscribe_result;
        ++fake().subscribed;
        fake().callback = callback;
        fake().callback_data = data;
        *handle = reinterpret_cast<CUpti_SubscriberHandle>(&fake());
        return CUPTI_SUCCESS;
    };
    if (fake().with_subscribe_v2) {
        t.subscribe_v2 = [](CUpti_SubscriberHandle* handle, CUpti_CallbackFunc callback, void* data,
                            CUpti_SubscriberParams* params) {
            if (fake().subscribe_result == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED && params != nullptr &&
                params->oldSubscriberName != nullptr) {
                std::snprintf(params->oldSubscriberName, params->oldSubscriberSize, "%s",
                              fake().subscriber_name.c_str());
            }
            return fake().subscribe_result != CUPTI_SUCCESS ? fake().subscribe_result
                                                            : stint_test::fake_table().subscribe(handle, callback, data);
        };
    }
    t.unsubscribe = [](CUpti_SubscriberHandle) {
        const std::lock_guard lock(fake().mutex);
        ++fake().calls;
        --fake().subscribed;
        fake().callback = nullptr;
        fake().driver_domain = false;
        return CUPTI_SUCCESS;
    };
    t.enable_domain = [](std::uint32_t enable, CUpti_SubscriberHandle, CUpti_CallbackDomain domain) {
        const std::lock_guard lock(fake().mutex);
        if (domain == CUPTI_CB_DOMAIN_DRIVER_API) fake().driver_domain = enable != 0;
        return CUPTI_SUCCESS;
    };
    t.finalize = [] {
        // CUPTI detaches: every subscriber and callback is gone. Called at an API exit, no other thread is
        // inside this subscriber's callback but the caller (what CUPTI's documentation asks for).
        const std::lock_guard lock(fake().mutex);
        ++fake().calls;
        ++fake().finalized;
        if (fake().in_callback != 0) ++fake().finalized_at_exit;
        fake().subscribed = fake().callback != nullptr ? fake().subscribed - 1 : fake().subscribed;
        fake().callback = nullptr;
        fake().driver_domain = false;
        return CUPTI_SUCCESS;
    };
    return t;
}

/// A CUDA driver call as CUPTI sees it: the subscriber's callback at its exit, when the driver domain is on.
inline void driver_api_exit(CUpti_CallbackId cbid) {
    CUpti_CallbackFunc callback = nullptr;
    void* data = nullptr;
    {
        const std::lock_guard lock(fake().mutex);
        if (!fake().exit_callbacks || !fake().driver_domain || fake().callback == nullptr) return;
        callback = fake().callback;
        data = fake().callback_data;
        ++fake().in_callback;
    }
    CUpti_CallbackData info{};
    info.callbackSite = CUPTI_API_EXIT;
    callback(data, CUPTI_CB_DOMAIN_DRIVER_API, cbid, &info);
    const std::lock_guard lock(fake().mutex);
    --fake().in_callback;
}

/// A driver for the fake: one device with an active primary context, whose synchronisation notes what
/// CUPTI had disabled by then; cuDriverGetVersion answers `version`.
inline stint::detail::cuda_driver_table fake_driver(int version = 13000) {
    static int driver_version = 13000;
    driver_version = version;
    stint::detail::cuda_driver_table d;
    d.init = [](unsigned) {
        ++fake().driver_inits;
        return CUDA_SUCCESS;
    };
    d.driver_get_version = [](int* v) {
        *v = driver_version;
        driver_api_exit(CUPTI_DRIVER_TRACE_CBID_cuDriverGetVersion);
        return CUDA_SUCCESS;
    };
    d.device_get_count = [](int* n) { *n = 1; return CUDA_SUCCESS; };
    d.device_get = [](CUdevice* dev, int i) { *dev = i; return CUDA_SUCCESS; };
    d.primary_ctx_get_state = [](CUdevice, unsigned* flags, int* active) {
        *flags = 0;
        *active = 1;
        return CUDA_SUCCESS;
    };
    d.primary_ctx_retain = [](CUcontext* ctx, CUdevice) {
        *ctx = reinterpret_cast<CUcontext>(&fake());
        return CUDA_SUCCESS;
    };
    d.primary_ctx_release = [](CUdevice) { return CUDA_SUCCESS; };
    d.ctx_push_current = [](CUcontext) { return CUDA_SUCCESS; };
    d.ctx_pop_current = [](CUcontext*) { return CUDA_SUCCESS; };
    d.ctx_synchronize = [] {
        fake().disabled_at_sync = fake().disabled;
        return CUDA_SUCCESS;
    };
    return d;
}

/// Resets the fake and makes the process's collector use it (with `driver`, or none).
inline void use_fake_cupti(std::optional<stint::detail::cuda_driver_table> driver = std::nullopt,
                           bool with_subscribe_v2 = false) {
    auto& f = fake();
    f.request = nullptr;
    f.complete = nullptr;
    f.timestamp = nullptr;
    f.timestamp_result = CUPTI_SUCCESS;
    f.own_clock = nullptr;
    f.enabled.clear();
    f.disabled.clear();
    f.disabled_at_sync.clear();
    f.thread_id_type = CUPTI_ACTIVITY_THREAD_ID_TYPE_DEFAULT;
    f.registrations = 0;
    f.subscribe_result = CUPTI_SUCCESS;
    f.subscribed = 0;
    f.finalized = 0;
    f.finalized_at_exit = 0;
    f.subscriber_name.clear();
    f.callback = nullptr;
    f.callback_data = nullptr;
    f.driver_domain = false;
    f.exit_callbacks = true;
    f.in_callback = 0;
    f.driver_inits = 0;
    f.pushed_kinds.clear();
    f.enable_result.clear();
    f.register_result = CUPTI_SUCCESS;
    f.pushed.clear();
    f.pops = 0;
    f.calls = 0;
    f.dropped_next = 0;
    f.in_flight.clear();
    f.partial.clear();
    f.flushes = 0;
    f.with_subscribe_v2 = with_subscribe_v2;
    stint::detail::the_cupti_collector().use_table_for_tests(fake_table(), std::move(driver));
}

/// Writes records back to back into a buffer that CUPTI's request callback handed out, as CUPTI does;
/// `finish()` leaves it for the next flush (or `complete()` delivers it now).
class buffer_writer {
public:
    buffer_writer() {
        std::size_t max_records = 0;
        fake().request(&data_, &size_, &max_records);
    }
    [[nodiscard]] bool granted() const { return data_ != nullptr && size_ != 0; }

    template <class Record>
    Record& add(const Record& record) {
        std::memcpy(data_ + used_, &record, sizeof(Record));
        auto& written = *reinterpret_cast<Record*>(data_ + used_);
        used_ += sizeof(Record);
        return written;
    }
    /// Raw bytes (a record of a kind stint does not know, a truncated tail).
    void add_bytes(const void* bytes, std::size_t n) {
        std::memcpy(data_ + used_, bytes, n);
        used_ += n;
    }
    [[nodiscard]] std::size_t used() const { return used_; }
    [[nodiscard]] std::uint8_t* data() const { return data_; }
    void finish() {
        const std::lock_guard lock(fake().mutex);
        fake().in_flight.emplace_back(data_, used_);
    }
    void complete() { fake().complete(nullptr, 0, data_, size_, used_); }
    /// Leaves it in CUPTI still being filled: only a forced flush completes it (to whoever is registered).
    void finish_partial() {
        const std::lock_guard lock(fake().mutex);
        fake().partial.emplace_back(data_, used_);
    }

private:
    std::uint8_t* data_ = nullptr;
    std::size_t size_ = 0;
    std::size_t used_ = 0;
};

// Record builders (zero-filled, then the fields stint reads).
inline stint::detail::cupti_external_correlation external(std::uint32_t correlation, std::uint64_t id,
                                                          CUpti_ExternalCorrelationKind kind =
                                                              stint::detail::stint_correlation_kind) {
    stint::detail::cupti_external_correlation r{};
    r.kind = CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION;
    r.externalKind = kind;
    r.externalId = id;
    r.correlationId = correlation;
    return r;
}
inline stint::detail::cupti_api_call api(std::uint32_t cbid, std::uint64_t start, std::uint64_t end,
                                         std::uint32_t correlation, bool runtime = true) {
    stint::detail::cupti_api_call r{};
    r.kind = runtime ? CUPTI_ACTIVITY_KIND_RUNTIME : CUPTI_ACTIVITY_KIND_DRIVER;
    r.cbid = cbid;
    r.start = start;
    r.end = end;
    r.processId = static_cast<std::uint32_t>(stint::detail::current_pid());
    r.threadId = static_cast<std::uint32_t>(stint::detail::current_os_tid());
    r.correlationId = correlation;
    return r;
}
inline stint::detail::cupti_kernel kernel(const char* name, std::uint64_t start, std::uint64_t end,
                                          std::uint32_t correlation, std::uint32_t device = 0,
                                          std::uint32_t stream = 7) {
    stint::detail::cupti_kernel r{};
    r.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
    r.name = name;
    r.start = start;
    r.end = end;
    r.correlationId = correlation;
    r.deviceId = device;
    r.contextId = 1 + device;
    r.streamId = stream;
    r.gridX = 64;
    r.gridY = 2;
    r.gridZ = 1;
    r.blockX = 256;
    r.blockY = 1;
    r.blockZ = 1;
    r.registersPerThread = 32;
    r.staticSharedMemory = 1024;
    r.dynamicSharedMemory = 512;
    return r;
}
inline stint::detail::cupti_memcpy memcpy_record(std::uint64_t start, std::uint64_t end, std::uint32_t correlation,
                                                 std::uint64_t bytes,
                                                 std::uint8_t copy = CUPTI_ACTIVITY_MEMCPY_KIND_HTOD,
                                                 std::uint8_t src = CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE,
                                                 std::uint8_t dst = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE) {
    stint::detail::cupti_memcpy r{};
    r.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
    r.copyKind = copy;
    r.srcKind = src;
    r.dstKind = dst;
    r.bytes = bytes;
    r.start = start;
    r.end = end;
    r.deviceId = 0;
    r.contextId = 1;
    r.streamId = 7;
    r.correlationId = correlation;
    return r;
}
inline stint::detail::cupti_memset memset_record(std::uint64_t start, std::uint64_t end, std::uint32_t correlation,
                                                 std::uint64_t bytes) {
    stint::detail::cupti_memset r{};
    r.kind = CUPTI_ACTIVITY_KIND_MEMSET;
    r.bytes = bytes;
    r.start = start;
    r.end = end;
    r.deviceId = 0;
    r.contextId = 1;
    r.streamId = 7;
    r.correlationId = correlation;
    r.memoryKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
    return r;
}
inline stint::detail::cupti_memcpy_peer peer_record(std::uint64_t start, std::uint64_t end, std::uint32_t correlation,
                                                    std::uint64_t bytes, std::uint32_t src, std::uint32_t dst) {
    stint::detail::cupti_memcpy_peer r{};
    r.kind = CUPTI_ACTIVITY_KIND_MEMCPY2;
    r.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_PTOP;
    r.srcKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
    r.dstKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
    r.bytes = bytes;
    r.start = start;
    r.end = end;
    r.deviceId = src;
    r.contextId = 1 + src;
    r.streamId = 7;
    r.srcDeviceId = src;
    r.srcContextId = 1 + src;
    r.dstDeviceId = dst;
    r.dstContextId = 1 + dst;
    r.correlationId = correlation;
    return r;
}
/// A synchronisation record; `stream` CUPTI_SYNCHRONIZATION_INVALID_VALUE for a context or event sync.
inline stint::detail::cupti_sync sync_record(CUpti_ActivitySynchronizationType type, std::uint64_t start,
                                             std::uint64_t end, std::uint32_t correlation, std::uint32_t context,
                                             std::uint32_t stream) {
    stint::detail::cupti_sync r{};
    r.kind = CUPTI_ACTIVITY_KIND_SYNCHRONIZATION;
    r.type = type;
    r.start = start;
    r.end = end;
    r.correlationId = correlation;
    r.contextId = context;
    r.streamId = stream;
    r.cudaEventId = CUPTI_SYNCHRONIZATION_INVALID_VALUE;
    return r;
}
/// CUPTI's own overhead (a buffer request) on the calling thread; `data` its details, owned by the client.
inline stint::detail::cupti_overhead overhead_record(std::uint64_t start, std::uint64_t end, void* data = nullptr) {
    stint::detail::cupti_overhead r{};
    r.kind = CUPTI_ACTIVITY_KIND_OVERHEAD;
    r.overheadKind = CUPTI_ACTIVITY_OVERHEAD_ACTIVITY_BUFFER_REQUEST;
    r.objectKind = CUPTI_ACTIVITY_OBJECT_THREAD;
    r.objectId.pt.processId = static_cast<std::uint32_t>(stint::detail::current_pid());
    r.objectId.pt.threadId = static_cast<std::uint32_t>(stint::detail::current_os_tid());
    r.start = start;
    r.end = end;
    r.overheadData = data;
    return r;
}
/// An overhead on a device-side object (a device, context or stream), as CUPTI names it.
inline stint::detail::cupti_overhead device_overhead_record(CUpti_ActivityObjectKind object,
                                                            CUpti_ActivityOverheadKind what, std::uint64_t start,
                                                            std::uint64_t end, std::uint32_t device,
                                                            std::uint32_t stream) {
    stint::detail::cupti_overhead r{};
    r.kind = CUPTI_ACTIVITY_KIND_OVERHEAD;
    r.overheadKind = what;
    r.objectKind = object;
    r.objectId.dcs.deviceId = device;
    r.objectId.dcs.contextId = 1 + device;
    r.objectId.dcs.streamId = stream;  // CUPTI fills it only for a stream; a test may leave garbage here
    r.start = start;
    r.end = end;
    r.overheadData = std::malloc(48);   // every overhead's details are the client's to free
    return r;
}

}  // namespace stint_test
