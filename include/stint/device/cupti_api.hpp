#pragma once
// CUPTI as stint uses it: the one header that includes <cupti.h>, for its types and constants only.
// Every call goes through cupti_table, filled by dlopen (cupti_library.hpp) or by a test, so a program
// that uses stint::cuda_activities has no link-time dependency on libcupti or libcuda.

#if !__has_include(<cupti.h>)
#error "stint: stint::cuda_activities needs CUPTI's headers (<cupti.h>), from the CUDA toolkit (13.x). Fix: 1. install the toolkit; 2. add its include folder, where cupti.h is (e.g. /usr/local/cuda/include, or extras/CUPTI/include in older layouts), as a system include: meson finds it from nvcc with -Dcupti=enabled, CMake with find_package(CUDAToolkit) and CUDA::cupti's include directories, by hand -isystem <folder>; or 3. remove stint::cuda_activities from the config."
#endif

// CUPTI's headers are not -Wpedantic clean (clang: nested anonymous types): quiet them here, in case the
// include folder was not given as a system one.
#if defined(__clang__)
#pragma clang diagnostic push
#pragma clang diagnostic ignored "-Wpedantic"
#pragma clang diagnostic ignored "-Wnested-anon-types"
#pragma clang diagnostic ignored "-Wgnu-anonymous-struct"
#elif defined(__GNUC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpedantic"
#endif
#include <cuda.h>   // ::cuInit, ::cuDriverGetVersion, ::cuDeviceGet (their types, for cuda_driver_table)
#include <cupti.h>  // CUpti_Activity* records, ::cuptiActivityEnable, ::cuptiSubscribe (types only)
#if defined(__clang__)
#pragma clang diagnostic pop
#elif defined(__GNUC__)
#pragma GCC diagnostic pop
#endif

#include <cstdint>  // std::uint32_t

static_assert(CUPTI_API_VERSION >= 130000,
              "stint: cuda_activities reads the activity records of CUPTI 13 (CUDA 13 toolkit); these headers are "
              "older. Fix: point the include path at a CUDA 13 toolkit.");

namespace stint::detail {

// The records libcupti 13.0 writes; a newer 13.x library writes newer versions that begin with these
// fields, and stint reads only fields they share.
using cupti_kernel = CUpti_ActivityKernel10;
using cupti_memcpy = CUpti_ActivityMemcpy6;
using cupti_memcpy_peer = CUpti_ActivityMemcpyPtoP4;
using cupti_memset = CUpti_ActivityMemset4;
using cupti_api_call = CUpti_ActivityAPI;
using cupti_external_correlation = CUpti_ActivityExternalCorrelation;
using cupti_sync = CUpti_ActivitySynchronization2;
using cupti_overhead = CUpti_ActivityOverhead3;

/// The library's major version that these headers describe: libcupti.so.<major>.
inline constexpr std::uint32_t cupti_major_version = CUPTI_API_VERSION / 10000;

/// The CUPTI functions stint calls. Each member has the exact type of the header's declaration, so the
/// compiler checks every call against the toolkit; nothing refers to the symbols themselves.
struct cupti_table {
    decltype(&::cuptiGetVersion) get_version = nullptr;
    decltype(&::cuptiGetResultString) get_result_string = nullptr;
    decltype(&::cuptiGetTimestamp) get_timestamp = nullptr;
    decltype(&::cuptiGetCallbackName) get_callback_name = nullptr;
    decltype(&::cuptiGetThreadIdType) get_thread_id_type = nullptr;
    decltype(&::cuptiSetThreadIdType) set_thread_id_type = nullptr;
    decltype(&::cuptiActivityRegisterTimestampCallback) register_timestamp_callback = nullptr;
    decltype(&::cuptiActivityRegisterCallbacks) register_callbacks = nullptr;
    decltype(&::cuptiActivityEnable) enable = nullptr;
    decltype(&::cuptiActivityDisable) disable = nullptr;
    decltype(&::cuptiActivityEnableRuntimeApi) enable_runtime_api = nullptr;
    decltype(&::cuptiActivityEnableDriverApi) enable_driver_api = nullptr;
    decltype(&::cuptiActivityFlushAll) flush_all = nullptr;
    decltype(&::cuptiActivityGetNextRecord) get_next_record = nullptr;
    decltype(&::cuptiActivityGetNumDroppedRecords) get_num_dropped_records = nullptr;
    decltype(&::cuptiActivityPushExternalCorrelationId) push_external_id = nullptr;
    decltype(&::cuptiActivityPopExternalCorrelationId) pop_external_id = nullptr;
    decltype(&::cuptiSubscribe) subscribe = nullptr;
    decltype(&::cuptiUnsubscribe) unsubscribe = nullptr;
    decltype(&::cuptiFinalize) finalize = nullptr;
    decltype(&::cuptiSubscribe_v2) subscribe_v2 = nullptr;  ///< CUPTI 13: names the other subscriber; may be null
    decltype(&::cuptiEnableDomain) enable_domain = nullptr;  ///< for the teardown from an API exit callback
};

/// The external-correlation kind stint pushes: Kineto (torch.profiler) pushes CUSTOM0 for ops and
/// CUSTOM1 for user annotations, so a process that runs both never mixes their ids.
inline constexpr CUpti_ExternalCorrelationKind stint_correlation_kind = CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM2;

/// The CUDA driver functions stint calls (from the libcuda.so.1 the program already loaded): to
/// synchronise devices at stop (sync_device_on_stop) and to read the properties of devices that ran
/// work. Any of them may be missing; what needs a missing one is skipped.
struct cuda_driver_table {
    decltype(&::cuInit) init = nullptr;
    decltype(&::cuDriverGetVersion) driver_get_version = nullptr;
    decltype(&::cuDeviceGetCount) device_get_count = nullptr;
    decltype(&::cuDeviceGet) device_get = nullptr;
    decltype(&::cuDeviceGetName) device_get_name = nullptr;
    decltype(&::cuDeviceGetAttribute) device_get_attribute = nullptr;
    decltype(&::cuDeviceTotalMem_v2) device_total_mem = nullptr;
    decltype(&::cuDevicePrimaryCtxGetState) primary_ctx_get_state = nullptr;
    decltype(&::cuDevicePrimaryCtxRetain) primary_ctx_retain = nullptr;
    decltype(&::cuDevicePrimaryCtxRelease_v2) primary_ctx_release = nullptr;
    decltype(&::cuCtxPushCurrent_v2) ctx_push_current = nullptr;
    decltype(&::cuCtxPopCurrent_v2) ctx_pop_current = nullptr;
    decltype(&::cuCtxSynchronize) ctx_synchronize = nullptr;
};

}  // namespace stint::detail
