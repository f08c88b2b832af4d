#pragma once
// The part of Intel's ITT API that stint::emit_itt needs, loaded the way ITT's static part loads a
// collector (VTune's runtime, or any library that speaks the protocol): the environment variable
// INTEL_LIBITTNOTIFY64 names a shared library; if it exports `__itt_api_init`, that is called with a
// descriptor of the API (an `__itt_global`) whose list of slots it fills with its functions; an older
// collector without it exports the functions by name. stint asks for four: __itt_domain_create,
// __itt_string_handle_create, __itt_task_begin and __itt_task_end. No ITT header or library is needed
// to build (Debian has none). The layouts below are the protocol's (ittnotify.h, ittnotify_config.h:
// 8-byte packing, which is the natural alignment of these members on 64-bit Linux).

#include <dlfcn.h>    // ::dlopen, ::dlsym, ::dlerror
#include <pthread.h>  // pthread_mutex_t, pthread_mutex_init, pthread_mutexattr_settype

#include <atomic>       // std::atomic
#include <cstdint>      // std::uint8_t
#include <cstdlib>      // std::getenv
#include <functional>   // std::less
#include <map>          // std::map
#include <mutex>        // std::mutex, std::lock_guard
#include <string>       // std::string
#include <string_view>  // std::string_view

#include "stint/detail/export_macros.hpp"
#include "stint/common/warning.hpp"

namespace stint::detail::itt {

/// __itt_domain: `flags` is set by the collector (zero: the domain is off, and calls on it are skipped).
struct domain {
    volatile int flags;
    const char* name_a;
    void* name_w;
    int extra1;
    void* extra2;
    domain* next;
};

/// __itt_string_handle: made by the collector, passed back to it.
struct string_handle {
    const char* str_a;
    void* str_w;
    int extra1;
    void* extra2;
    string_handle* next;
};

/// __itt_id (__itt_null is all zero).
struct id {
    unsigned long long d1, d2, d3;
};

/// __itt_api_info: one slot of the API; a collector's __itt_api_init finds slots by name and writes
/// its function to *func_ptr.
struct api_info {
    const char* name;
    void** func_ptr;
    void* init_func;
    void* null_func;
    int group;  ///< __itt_group_id
};

/// __itt_global: the API's descriptor handed to __itt_api_init. Collectors check the magic and the
/// version, and may lock `mutex` and keep their domains and strings on its lists.
struct global {
    unsigned char magic[8];
    unsigned long version_major;
    unsigned long version_minor;
    unsigned long version_build;
    volatile long api_initialized;
    volatile long mutex_initialized;
    volatile long atomic_counter;
    pthread_mutex_t mutex;
    void* lib;
    void* error_handler;
    const char** dll_path_ptr;
    api_info* api_list_ptr;
    global* next;
    void* thread_list;
    domain* domain_list;
    string_handle* string_list;
    int state;  ///< __itt_collection_state
    void* counter_list;
    unsigned int ipt_collect_events;
    void* histogram_list;
    void* counter_metadata_list;
};

inline constexpr unsigned char magic[8] = {0xED, 0xAB, 0xAB, 0xEC, 0x0D, 0xEE, 0xDA, 0x30};
inline constexpr unsigned long version_major = 3;
inline constexpr unsigned long version_minor = 0;
inline constexpr unsigned long version_build = 20250807;  ///< the protocol's date stamp stint follows
inline constexpr int group_structure = 1 << 12;        ///< domains, strings, tasks
inline constexpr int group_all = -1;
inline constexpr int collection_init_successful = 4;

using domain_create_fn = domain* (*)(const char*);
using string_handle_create_fn = string_handle* (*)(const char*);
using task_begin_fn = void (*)(const domain*, id, id, string_handle*);
using task_end_fn = void (*)(const domain*);
using api_init_fn = void (*)(global*, int);

/// The environment variable that names the collector (64-bit processes).
inline constexpr const char* collector_variable = "INTEL_LIBITTNOTIFY64";

inline namespace STINT_DETAIL_ABI_NAMESPACE {

/// A loaded collector and stint's one domain in it ("PyTorch", as torch's emit_itt). Made once per
/// process (instance()); never unloaded, since tasks may end on threads that outlive any owner.
class collector {
public:
    /// Loads the collector at `path` (nullptr or "": none) and makes the domain `domain_name`. A
    /// library that cannot be loaded, or lacks the four functions, is reported once through stint's
    /// warnings; the collector is then inactive and every call is a no-op.
    collector(const char* path, const char* domain_name) noexcept {
        init_global();
        if (path == nullptr || *path == '\0') return;
        void* lib = ::dlopen(path, RTLD_LAZY | RTLD_LOCAL);
        if (lib == nullptr) {
            const char* why = ::dlerror();
            report(path, why != nullptr ? why : "dlopen failed");
            return;
        }
        global_.lib = lib;
        global_.state = collection_init_successful;
        if (auto init = reinterpret_cast<api_init_fn>(::dlsym(lib, "__itt_api_init")); init != nullptr) {
            init(&global_, group_all);
        } else {
            // A collector older than __itt_api_init exports each function under its slot's name.
            for (api_info* slot = api_; slot->name != nullptr; ++slot) *slot->func_ptr = ::dlsym(lib, slot->name);
        }
        global_.api_initialized = 1;
        if (domain_create_ == nullptr || string_handle_create_ == nullptr || task_begin_ == nullptr ||
            task_end_ == nullptr) {
            report(path, "it does not provide __itt_domain_create, __itt_string_handle_create, __itt_task_begin "
                         "and __itt_task_end");
            return;
        }
        domain_ = reinterpret_cast<domain_create_fn>(domain_create_)(domain_name);
    }

    collector(const collector&) = delete;
    collector& operator=(const collector&) = delete;
    ~collector() = default;

    /// Whether tasks reach a collector.
    [[nodiscard]] bool active() const noexcept { return domain_ != nullptr; }

    /// Begins a task named `name` on the calling thread (its string handle made once per name). As
    /// ITT's own macros, skipped while the collector has the domain off (flags 0).
    void begin(std::string_view name) noexcept {
        if (domain_ == nullptr || domain_->flags == 0) return;
        reinterpret_cast<task_begin_fn>(task_begin_)(domain_, id{}, id{}, handle(name));
    }

    /// Ends the calling thread's innermost task.
    void end() noexcept {
        if (domain_ == nullptr || domain_->flags == 0) return;
        reinterpret_cast<task_end_fn>(task_end_)(domain_);
    }

    /// The process's collector, from INTEL_LIBITTNOTIFY64, with the domain "PyTorch"; loaded at the
    /// first call. One per process, also when several shared libraries include stint.
    STINT_DETAIL_EXPORT static collector& instance() noexcept {
        static collector* const the = new collector(std::getenv(collector_variable), "PyTorch");  // leaked: see above
        return *the;
    }

private:
    void init_global() noexcept {
        for (int i = 0; i < 8; ++i) global_.magic[i] = magic[i];
        global_.version_major = version_major;
        global_.version_minor = version_minor;
        global_.version_build = version_build;
        pthread_mutexattr_t attributes;
        pthread_mutexattr_init(&attributes);
        pthread_mutexattr_settype(&attributes, PTHREAD_MUTEX_RECURSIVE);  // as ITT's static part makes it
        pthread_mutex_init(&global_.mutex, &attributes);
        pthread_mutexattr_destroy(&attributes);
        global_.mutex_initialized = 1;
        global_.api_list_ptr = api_;
    }

    static void report(const char* path, const char* why) {
        try {
            warn_once(std::string("itt collector ") + path,
                      std::string("emit_itt: cannot use the ITT collector '") + path + "' named by " +
                          collector_variable + ": " + why + "; ITT tasks are off, recording goes on");
        } catch (...) {
        }
    }

    // The string handle of `name`: from this thread's cache, else the process's map (made there once).
    string_handle* handle(std::string_view name) noexcept {
        try {
            thread_local std::map<std::string, string_handle*, std::less<>> cache;
            thread_local const collector* cache_owner = nullptr;  // handles belong to one collector
            if (cache_owner != this) {
                cache.clear();
                cache_owner = this;
            }
            if (auto it = cache.find(name); it != cache.end()) return it->second;
            string_handle* h = nullptr;
            {
                std::lock_guard lock(handles_mutex_);
                auto it = handles_.find(name);
                if (it == handles_.end()) {
                    it = handles_.emplace(std::string(name), nullptr).first;
                    it->second = reinterpret_cast<string_handle_create_fn>(string_handle_create_)(it->first.c_str());
                }
                h = it->second;
            }
            cache.emplace(std::string(name), h);
            return h;
        } catch (...) {
            // Out of memory: the task keeps its place in the nesting, not its name.
            return reinterpret_cast<string_handle_create_fn>(string_handle_create_)("[stint] name lost");
        }
    }

    global global_{};
    // The API's slots, as the collector writes them (void*: what a slot holds), cast at each call.
    void* domain_create_ = nullptr;
    void* string_handle_create_ = nullptr;
    void* task_begin_ = nullptr;
    void* task_end_ = nullptr;
    api_info api_[5] = {
        {"__itt_domain_create", &domain_create_, nullptr, nullptr, group_structure},
        {"__itt_string_handle_create", &string_handle_create_, nullptr, nullptr, group_structure},
        {"__itt_task_begin", &task_begin_, nullptr, nullptr, group_structure},
        {"__itt_task_end", &task_end_, nullptr, nullptr, group_structure},
        {nullptr, nullptr, nullptr, nullptr, 0},
    };
    domain* domain_ = nullptr;
    std::mutex handles_mutex_;
    std::map<std::string, string_handle*, std::less<>> handles_;
};

/// What emit_itt's pushes and pops check first, process-wide: the collector is not loaded yet, there
/// is none (or it failed), or it takes tasks. Written once, by the first push.
enum class state : std::uint8_t { unknown = 0, off = 1, on = 2 };
STINT_DETAIL_EXPORT inline constinit std::atomic<state> the_state{state::unknown};

}  // namespace STINT_DETAIL_ABI_NAMESPACE

}  // namespace stint::detail::itt
