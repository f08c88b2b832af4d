#pragma once
// Finding and loading libcupti (and reaching the libcuda the program loaded) with dlopen: stint never
// links them, so a program built with cuda_activities runs where neither exists, CPU-only.

#include <dlfcn.h>   // ::dlopen, ::dlsym, ::dlerror
#include <glob.h>    // ::glob, ::globfree, glob_t
#include <link.h>    // ::dl_iterate_phdr, dl_phdr_info, ElfW
#include <unistd.h>  // ::access, F_OK

#include <algorithm>    // std::find
#include <cstddef>      // std::size_t
#include <cstdint>      // std::uint32_t
#include <exception>    // std::exception_ptr, std::current_exception, std::rethrow_exception
#include <cstdlib>      // std::getenv
#include <string>       // std::string
#include <string_view>  // std::string_view
#include <vector>       // std::vector

#include <fmt/format.h>  // fmt::format

#include "stint/device/cupti_api.hpp"

namespace stint::detail {

/// A shared object loaded in this process: its path ("" for the program) and the libraries it links
/// (its DT_NEEDED entries).
struct loaded_object {
    std::string path;
    std::vector<std::string> needed;
};

/// Every object the dynamic loader has loaded, in load order (dl_iterate_phdr). Read at a session's
/// start or stop, never on the hot path.
inline std::vector<loaded_object> loaded_objects() {
    struct walk {
        std::vector<loaded_object> objects;
        std::exception_ptr error;  // an exception must not unwind through the loader's C frames
    } w;
    ::dl_iterate_phdr(
        [](::dl_phdr_info* info, std::size_t, void* out) -> int {
            try {
                loaded_object object;
                object.path = info->dlpi_name != nullptr ? info->dlpi_name : "";
                for (int i = 0; i < info->dlpi_phnum; ++i) {
                    if (info->dlpi_phdr[i].p_type != PT_DYNAMIC) continue;
                    const auto* dynamic =
                        reinterpret_cast<const ElfW(Dyn)*>(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr);
                    ElfW(Addr) strings = 0;
                    for (const ElfW(Dyn)* d = dynamic; d->d_tag != DT_NULL; ++d) {
                        if (d->d_tag == DT_STRTAB) strings = d->d_un.d_ptr;
                    }
                    if (strings == 0) break;
                    // glibc relocates the dynamic section in place for most objects; the vDSO keeps offsets.
                    if (strings < info->dlpi_addr) strings += info->dlpi_addr;
                    for (const ElfW(Dyn)* d = dynamic; d->d_tag != DT_NULL; ++d) {
                        if (d->d_tag != DT_NEEDED) continue;
                        object.needed.emplace_back(reinterpret_cast<const char*>(strings + d->d_un.d_val));
                    }
                    break;
                }
                static_cast<walk*>(out)->objects.push_back(std::move(object));
                return 0;
            } catch (...) {
                static_cast<walk*>(out)->error = std::current_exception();
                return 1;
            }
        },
        &w);
    if (w.error) std::rethrow_exception(w.error);
    return std::move(w.objects);
}

/// The major version in a libcupti file name ("/x/libcupti.so.12.4.127" -> 12), or 0 when it is none.
inline std::uint32_t cupti_major_in_name(std::string_view path) {
    const std::size_t slash = path.rfind('/');
    std::string_view name = slash == std::string_view::npos ? path : path.substr(slash + 1);
    constexpr std::string_view stem = "libcupti.so.";
    if (!name.starts_with(stem)) return 0;
    std::uint32_t major = 0;
    for (const char c : name.substr(stem.size())) {
        if (c < '0' || c > '9') break;
        major = major * 10 + static_cast<std::uint32_t>(c - '0');
    }
    return major;
}

/// A libcupti of another major version than `major` among `objects` (a cu12 PyTorch's libcupti.so.12), by
/// path, or "": two CUPTIs in one process would both attach to the driver, so stint does not load its own.
inline std::string other_cupti_loaded(const std::vector<loaded_object>& objects, std::uint32_t major) {
    for (const loaded_object& o : objects) {
        if (const std::uint32_t m = cupti_major_in_name(o.path); m != 0 && m != major) return o.path;
    }
    return {};
}

/// The objects among `objects` that link libcupti themselves (Kineto inside libtorch_cuda.so): CUPTI
/// clients beside stint, which may hold CUPTI's buffers or callbacks at any time.
inline std::vector<std::string> cupti_clients(const std::vector<loaded_object>& objects) {
    std::vector<std::string> clients;
    for (const loaded_object& o : objects) {
        for (const std::string& needed : o.needed) {
            if (cupti_major_in_name(needed) != 0) {
                clients.push_back(o.path.empty() ? "the program" : o.path);
                break;
            }
        }
    }
    return clients;
}

/// The result of loading libcupti: a filled table, or why not.
struct cupti_library {
    cupti_table table;
    std::string path;   ///< what was loaded (or tried last)
    std::string error;  ///< empty when the table is complete
    bool already_loaded = false;  ///< another part of the program had loaded it: another CUPTI client
};

/// Where libcupti is looked for, in order: `override_path` (STINT_CUPTI_LIBRARY) alone when given; else a
/// libcupti already in the process (a framework loaded its own: never load a second), the loader's
/// search path, $CUDA_HOME and $CUDA_PATH, the toolkit's usual homes (/usr/local/cuda, /usr/local/cuda-13.*,
/// newest first, /opt/cuda), a conda environment's lib/, and pip's CUDA wheels (nvidia/cu13/lib) in a
/// virtual environment, a conda environment, the user's and the system's site-packages.
inline std::vector<std::string> cupti_library_candidates(const char* override_path) {
    const std::string soname = fmt::format("libcupti.so.{}", cupti_major_version);
    if (override_path != nullptr && *override_path != '\0') return {override_path};
    std::vector<std::string> candidates{soname};
    const auto add = [&](std::string path) {
        if (std::find(candidates.begin(), candidates.end(), path) == candidates.end()) {
            candidates.push_back(std::move(path));
        }
    };
    const auto add_glob = [&](const std::string& pattern) {  // matches, newest version (last in order) first
        ::glob_t found{};
        if (::glob(pattern.c_str(), 0, nullptr, &found) == 0) {
            for (std::size_t i = found.gl_pathc; i-- > 0;) add(found.gl_pathv[i]);
        }
        ::globfree(&found);
    };
    const auto add_toolkit = [&](const std::string& root) {
        add(fmt::format("{}/lib64/{}", root, soname));
        add(fmt::format("{}/extras/CUPTI/lib64/{}", root, soname));
    };
    for (const char* var : {"CUDA_HOME", "CUDA_PATH"}) {
        if (const char* root = std::getenv(var); root != nullptr && *root != '\0') add_toolkit(root);
    }
    add_toolkit("/usr/local/cuda");
    add_glob(fmt::format("/usr/local/cuda-{}.*/lib64/{}", cupti_major_version, soname));
    add_glob(fmt::format("/usr/local/cuda-{}.*/extras/CUPTI/lib64/{}", cupti_major_version, soname));
    add_toolkit("/opt/cuda");
    const std::string wheel = fmt::format("nvidia/cu{}/lib/{}", cupti_major_version, soname);
    for (const char* var : {"VIRTUAL_ENV", "CONDA_PREFIX"}) {
        if (const char* env = std::getenv(var); env != nullptr && *env != '\0') {
            if (std::string_view(var) == "CONDA_PREFIX") add(fmt::format("{}/lib/{}", env, soname));
            add_glob(fmt::format("{}/lib/python3*/site-packages/{}", env, wheel));
        }
    }
    if (const char* home = std::getenv("HOME"); home != nullptr && *home != '\0') {
        add_glob(fmt::format("{}/.local/lib/python3*/site-packages/{}", home, wheel));
    }
    add_glob("/usr/local/lib/python3*/dist-packages/" + wheel);
    add_glob("/usr/local/lib/python3*/site-packages/" + wheel);
    add_glob("/usr/lib/python3/dist-packages/" + wheel);
    return candidates;
}

/// Loads the first of `candidates` that loads and resolves every function of cupti_table. The library
/// is never closed: CUPTI runs threads and exit handlers of its own. On failure, `error` lists every
/// place tried and why. `overridden`: the one candidate is STINT_CUPTI_LIBRARY's.
inline cupti_library load_cupti_library_from(const std::vector<std::string>& candidates, bool overridden) {
    cupti_library result;
    void* handle = nullptr;
    // RTLD_NOLOAD first: a libcupti already in the process, under its soname, is the one to use.
    if (!overridden) {
        handle = ::dlopen(candidates.front().c_str(), RTLD_NOW | RTLD_NOLOAD);
        if (handle != nullptr) {
            result.path = candidates.front() + " (already loaded)";
            result.already_loaded = true;
        }
    }
    std::string tried;
    for (const std::string& candidate : candidates) {
        if (handle != nullptr) break;
        // A path that names no file is only listed; a bare soname goes to the loader's search.
        if (candidate.find('/') != std::string::npos && ::access(candidate.c_str(), F_OK) != 0) {
            if (overridden) tried = fmt::format("{}: no such file", candidate);
            else tried += fmt::format("{}{}", tried.empty() ? "" : ", ", candidate);
            continue;
        }
        handle = ::dlopen(candidate.c_str(), RTLD_NOW | RTLD_LOCAL);
        if (handle != nullptr) {
            result.path = candidate;
        } else {
            const char* why = ::dlerror();
            const std::string reason = why != nullptr ? why : "not loadable";
            if (overridden) tried = reason;
            else tried += fmt::format("{}{} ({})", tried.empty() ? "" : ", ", candidate, reason);
        }
    }
    if (handle == nullptr) {
        result.path = candidates.front();
        result.error = overridden
                           ? fmt::format("cannot load {} (STINT_CUPTI_LIBRARY): {}", candidates.front(), tried)
                           : fmt::format("cannot load {} (CUPTI {}, from the CUDA {} toolkit or pip's nvidia-cuda-cupti); "
                                         "tried {}. Fix: set STINT_CUPTI_LIBRARY to its path, or CUDA_HOME to the "
                                         "toolkit",
                                         candidates.front(), cupti_major_version, cupti_major_version, tried);
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
    resolve(t.get_thread_id_type, "cuptiGetThreadIdType");
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
    resolve(t.subscribe, "cuptiSubscribe");
    resolve(t.unsubscribe, "cuptiUnsubscribe");
    resolve(t.finalize, "cuptiFinalize");
    resolve(t.enable_domain, "cuptiEnableDomain");
    if (result.error.empty()) {  // CUPTI 13's named subscriber: optional, the probe falls back to cuptiSubscribe
        t.subscribe_v2 = reinterpret_cast<decltype(t.subscribe_v2)>(::dlsym(handle, "cuptiSubscribe_v2"));
    }
    return result;
}

/// Loads libcupti from STINT_CUPTI_LIBRARY's `override_path`, or else from the first usual place it is in.
inline cupti_library load_cupti_library(const char* override_path) {
    return load_cupti_library_from(cupti_library_candidates(override_path),
                                   override_path != nullptr && *override_path != '\0');
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
    resolve(t.driver_get_version, "cuDriverGetVersion");
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

/// The driver version a CUPTI library needs, in cuDriverGetVersion's numbering: one for its CUDA major
/// and minor version (cuptiGetVersion 130100, CUDA 13.1, needs cuDriverGetVersion 13010 or newer). CUPTI
/// is not covered by CUDA's minor version compatibility: a newer CUPTI than the driver fails its calls
/// (CUPTI_ERROR_NOT_INITIALIZED), so the minor is checked too, unlike for the runtime.
constexpr int driver_version_needed(std::uint32_t cupti_version) noexcept {
    if (cupti_version < 10000) return 0;  // CUPTI 12 and older number versions otherwise: not checked
    return static_cast<int>(cupti_version / 10000 * 1000 + cupti_version / 100 % 100 * 10);
}

/// Why the driver cannot serve this CUPTI (a CUDA 12 driver passes cuInit and counts its devices, and the
/// first session would fail with a bare CUPTI error), or "" when it can or cannot say. Needs no cuInit.
inline std::string driver_version_problem(const cuda_driver_table& t, std::uint32_t cupti_version) {
    int version = 0;
    if (t.driver_get_version == nullptr || t.driver_get_version(&version) != CUDA_SUCCESS) return {};
    const int needed = driver_version_needed(cupti_version);
    if (version >= needed) return {};
    return fmt::format("the NVIDIA driver supports CUDA {}.{} (cuDriverGetVersion {}); CUPTI {} needs a driver for "
                       "CUDA {}.{} or newer (CUPTI has no minor version compatibility; R580 or newer for CUDA 13.0). "
                       "Fix: update the driver, use the CUPTI of the driver's CUDA version (STINT_CUPTI_LIBRARY), or "
                       "profile the CPU only",
                       version / 1000, version % 1000 / 10, version, cupti_version, needed / 1000,
                       needed % 1000 / 10);
}

/// What can be told of the driver without initialising CUDA (a query must not: a program that forks
/// after cuInit breaks its children): its version, and its devices only when the program already
/// initialised CUDA. "" when nothing is wrong or it cannot say before cuInit.
inline std::string driver_problem_before_init(const cuda_driver_table& t, std::uint32_t cupti_version) {
    if (std::string old = driver_version_problem(t, cupti_version); !old.empty()) return old;
    int count = 0;
    if (t.device_get_count != nullptr && t.device_get_count(&count) == CUDA_SUCCESS && count == 0) {
        return "no CUDA device";
    }
    return {};  // CUDA_ERROR_NOT_INITIALIZED: the first session finds out
}

/// Why CUDA cannot be used once initialised (cuInit, which a session's start calls: CUPTI would too):
/// the stub library, no device. Empty when cuInit and cuDeviceGetCount succeed with a device, or the
/// table has no cuInit (a test's driver).
inline std::string cuda_init_problem(const cuda_driver_table& t) {
    if (t.init == nullptr) return {};
    if (t.device_get_count == nullptr) return "libcuda.so.1 lacks cuDeviceGetCount";
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

/// Why CUDA cannot be used, from the driver itself (CUPTI reports only CUPTI_ERROR_UNKNOWN): no driver, the
/// stub library, no device, a driver too old for `cupti_version` (0: not checked). Calls cuInit: only
/// after a CUPTI call failed in a session.
inline std::string cuda_driver_problem(const cuda_driver_library& driver, std::uint32_t cupti_version = 0) {
    if (!driver.error.empty()) return driver.error;
    if (driver.table.init == nullptr) return "libcuda.so.1 lacks cuInit";
    if (std::string problem = cuda_init_problem(driver.table); !problem.empty()) return problem;
    return driver_version_problem(driver.table, cupti_version);
}

}  // namespace stint::detail
