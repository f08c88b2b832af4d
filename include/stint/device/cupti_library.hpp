#pragma once
// Finding and loading libcupti (and reaching the libcuda the program loaded) with dlopen: stint never
// links them, so a program built with cuda_activities runs where neither exists, CPU-only.

#include <dlfcn.h>

#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "stint/device/cupti_api.hpp"

namespace stint::detail {

/// The result of loading libcupti: a filled table, or why not.
struct cupti_library {
    cupti_table table;
    std::string path;   ///< what was loaded (or tried last)
    std::string error;  ///< empty when the table is complete
};

/// Where libcupti is looked for, in order: `override_path` (STINT_CUPTI_LIBRARY) alone when given; else a
/// libcupti already in the process (a framework loaded its own: never load a second), the loader's
/// search path, $CUDA_HOME and $CUDA_PATH, then the toolkit's default install.
inline std::vector<std::string> cupti_library_candidates(const char* override_path) {
    const std::string soname = fmt::format("libcupti.so.{}", cupti_major_version);
    if (override_path != nullptr && *override_path != '\0') return {override_path};
    std::vector<std::string> candidates{soname};
    for (const char* var : {"CUDA_HOME", "CUDA_PATH"}) {
        if (const char* root = std::getenv(var); root != nullptr && *root != '\0') {
            candidates.push_back(fmt::format("{}/lib64/{}", root, soname));
            candidates.push_back(fmt::format("{}/extras/CUPTI/lib64/{}", root, soname));
        }
    }
    candidates.push_back("/usr/local/cuda/lib64/" + soname);
    candidates.push_back("/usr/local/cuda/extras/CUPTI/lib64/" + soname);
    return candidates;
}

/// Loads libcupti and resolves every function of cupti_table. The library is never closed: CUPTI runs
/// threads and exit handlers of its own.
inline cupti_library load_cupti_library(const char* override_path) {
    cupti_library result;
    void* handle = nullptr;
    const std::vector<std::string> candidates = cupti_library_candidates(override_path);
    // RTLD_NOLOAD first: a libcupti already in the process, under its soname, is the one to use.
    if (override_path == nullptr || *override_path == '\0') {
        handle = ::dlopen(candidates.front().c_str(), RTLD_NOW | RTLD_NOLOAD);
        if (handle != nullptr) result.path = candidates.front() + " (already loaded)";
    }
    std::string errors;
    for (const std::string& candidate : candidates) {
        if (handle != nullptr) break;
        handle = ::dlopen(candidate.c_str(), RTLD_NOW | RTLD_LOCAL);
        if (handle != nullptr) {
            result.path = candidate;
        } else if (const char* why = ::dlerror(); why != nullptr && errors.empty()) {
            errors = why;
        }
    }
    if (handle == nullptr) {
        result.path = candidates.front();
        result.error = fmt::format("cannot load {}: {}", candidates.front(), errors.empty() ? "not found" : errors);
        return result;
    }
    const auto resolve = [&](auto& member, const char* symbol) {
        if (!result.error.empty()) return;
        void* address = ::dlsym(handle, symbol);
        if (address == nullptr) {
            result.error = fmt::format("symbol {} missing in {}", symbol, result.path);
            return;
        }
        member = reinterpret_cast<std::remove_reference_t<decltype(member)>>(address);
    };
    cupti_table& t = result.table;
    resolve(t.get_version, "cuptiGetVersion");
    resolve(t.get_result_string, "cuptiGetResultString");
    resolve(t.get_timestamp, "cuptiGetTimestamp");
    resolve(t.get_callback_name, "cuptiGetCallbackName");
    resolve(t.set_thread_id_type, "cuptiSetThreadIdType");
    resolve(t.register_timestamp_callback, "cuptiActivityRegisterTimestampCallback");
    resolve(t.register_callbacks, "cuptiActivityRegisterCallbacks");
    resolve(t.enable, "cuptiActivityEnable");
    resolve(t.disable, "cuptiActivityDisable");
    resolve(t.enable_runtime_api, "cuptiActivityEnableRuntimeApi");
    resolve(t.enable_driver_api, "cuptiActivityEnableDriverApi");
    resolve(t.flush_all, "cuptiActivityFlushAll");
    resolve(t.get_next_record, "cuptiActivityGetNextRecord");
    resolve(t.get_num_dropped_records, "cuptiActivityGetNumDroppedRecords");
    resolve(t.push_external_id, "cuptiActivityPushExternalCorrelationId");
    resolve(t.pop_external_id, "cuptiActivityPopExternalCorrelationId");
    return result;
}

/// The CUDA driver, when there is one: the libcuda.so.1 the program loaded, or else the system's. Empty
/// `error` and a table (functions it lacks stay null); or why there is none.
struct cuda_driver_library {
    cuda_driver_table table;
    std::string error;
};

inline cuda_driver_library load_cuda_driver() {
    cuda_driver_library result;
    void* handle = ::dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    if (handle == nullptr) handle = ::dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
        result.error = "no NVIDIA driver: libcuda.so.1 not found";
        return result;
    }
    const auto resolve = [&](auto& member, const char* symbol) {
        member = reinterpret_cast<std::remove_reference_t<decltype(member)>>(::dlsym(handle, symbol));
    };
    cuda_driver_table& t = result.table;
    resolve(t.init, "cuInit");
    resolve(t.device_get_count, "cuDeviceGetCount");
    resolve(t.device_get, "cuDeviceGet");
    resolve(t.device_get_name, "cuDeviceGetName");
    resolve(t.device_get_attribute, "cuDeviceGetAttribute");
    resolve(t.device_total_mem, "cuDeviceTotalMem_v2");
    resolve(t.primary_ctx_get_state, "cuDevicePrimaryCtxGetState");
    resolve(t.primary_ctx_retain, "cuDevicePrimaryCtxRetain");
    resolve(t.primary_ctx_release, "cuDevicePrimaryCtxRelease_v2");
    resolve(t.ctx_push_current, "cuCtxPushCurrent_v2");
    resolve(t.ctx_pop_current, "cuCtxPopCurrent_v2");
    resolve(t.ctx_synchronize, "cuCtxSynchronize");
    return result;
}

/// Why CUDA cannot be used, from the driver itself (CUPTI reports only CUPTI_ERROR_UNKNOWN): the stub
/// library, no device, a driver too old. Empty when cuInit and cuDeviceGetCount succeed with a device.
inline std::string cuda_driver_problem(const cuda_driver_library& driver) {
    if (!driver.error.empty()) return driver.error;
    const cuda_driver_table& t = driver.table;
    if (t.init == nullptr || t.device_get_count == nullptr) return "libcuda.so.1 lacks cuInit or cuDeviceGetCount";
    if (const CUresult r = t.init(0); r != CUDA_SUCCESS) {
        if (r == CUDA_ERROR_STUB_LIBRARY) {
            return "libcuda.so.1 is the CUDA toolkit's stub (CUDA_ERROR_STUB_LIBRARY, 34)";
        }
        if (r == CUDA_ERROR_NO_DEVICE) return "no CUDA device (CUDA_ERROR_NO_DEVICE, 100)";
        return fmt::format("cuInit failed with CUresult {}", static_cast<int>(r));
    }
    int count = 0;
    if (t.device_get_count(&count) != CUDA_SUCCESS || count == 0) return "no CUDA device";
    return {};
}

}  // namespace stint::detail
