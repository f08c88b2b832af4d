// A fake ITT collector, as ITT's collector protocol has them: the static part loads the library named by
// INTEL_LIBITTNOTIFY64 and calls its __itt_api_init with the API's descriptor, whose slots (found by
// name) the collector fills. This one fills the four stint uses and records every call for
// tests/itt/itt_test.cpp, which reads them through stint_test_itt_log(). Its types are declared here
// from the protocol, not taken from stint, so that the test checks stint's layout against them.

#include <pthread.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>

#include "itt_log.hpp"

namespace {

struct itt_domain {
    volatile int flags;
    const char* nameA;
    void* nameW;
    int extra1;
    void* extra2;
    itt_domain* next;
};
struct itt_string_handle {
    const char* strA;
    void* strW;
    int extra1;
    void* extra2;
    itt_string_handle* next;
};
struct itt_id {
    unsigned long long d1, d2, d3;
};
struct itt_api_info {
    const char* name;
    void** func_ptr;
    void* init_func;
    void* null_func;
    int group;
};
struct itt_global {  // the leading part of __itt_global, up to the slots
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
    itt_api_info* api_list_ptr;
};

stint_test::itt_log the_log;

std::uint64_t this_thread() { return static_cast<std::uint64_t>(pthread_self()); }

void record(stint_test::itt_call::kind_t kind, std::string name, std::string domain = {}) {
    std::lock_guard lock(the_log.mutex);
    the_log.calls.push_back({kind, std::move(name), std::move(domain), this_thread()});
}

itt_domain* domain_create(const char* name) {
    record(stint_test::itt_call::domain_create, name);
    auto* d = new itt_domain{};  // kept for the process, as a collector keeps its domains
    d->flags = 1;
    d->nameA = ::strdup(name);
    return d;
}

itt_string_handle* string_handle_create(const char* name) {
    record(stint_test::itt_call::string_handle_create, name);
    auto* h = new itt_string_handle{};
    h->strA = ::strdup(name);
    return h;
}

void task_begin(const itt_domain* domain, itt_id id, itt_id parent, itt_string_handle* name) {
    const bool null_ids = id.d1 == 0 && id.d2 == 0 && id.d3 == 0 && parent.d1 == 0 && parent.d2 == 0 && parent.d3 == 0;
    record(stint_test::itt_call::task_begin, std::string(name != nullptr ? name->strA : "<null>") + (null_ids ? "" : " <ids>"),
           domain->nameA);
}

void task_end(const itt_domain* domain) { record(stint_test::itt_call::task_end, {}, domain->nameA); }

}  // namespace

extern "C" {

__attribute__((visibility("default"))) void __itt_api_init(itt_global* global, int /*groups*/) {
    static const unsigned char magic[8] = {0xED, 0xAB, 0xAB, 0xEC, 0x0D, 0xEE, 0xDA, 0x30};
    {
        std::lock_guard lock(the_log.mutex);
        the_log.descriptor_ok = std::memcmp(global->magic, magic, 8) == 0 && global->version_major == 3 &&
                                global->mutex_initialized == 1;
    }
    record(stint_test::itt_call::api_init, {});
    if (std::getenv("STINT_TEST_ITT_FILL_NOTHING") != nullptr) return;  // a collector for another API
    pthread_mutex_lock(&global->mutex);  // as a collector does while it fills the slots
    for (itt_api_info* api = global->api_list_ptr; api->name != nullptr; ++api) {
        const std::string name = api->name;
        if (name == "__itt_domain_create") *api->func_ptr = reinterpret_cast<void*>(&domain_create);
        if (name == "__itt_string_handle_create") *api->func_ptr = reinterpret_cast<void*>(&string_handle_create);
        if (name == "__itt_task_begin") *api->func_ptr = reinterpret_cast<void*>(&task_begin);
        if (name == "__itt_task_end") *api->func_ptr = reinterpret_cast<void*>(&task_end);
    }
    pthread_mutex_unlock(&global->mutex);
}

__attribute__((visibility("default"))) stint_test::itt_log* stint_test_itt_log() { return &the_log; }

}  // extern "C"
