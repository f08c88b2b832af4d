// An NVTX injection library, as NVTX documents them (nvtxDetail/nvtxInit.h): NVTX loads the library
// named by NVTX_INJECTION64_PATH at its first call and calls InitializeInjectionNvtx2, which fills the
// core module's function table. This one records range pushes and pops for tests/nvtx/nvtx_test.cpp,
// which reads them through stint_test_nvtx_log().

#include <nvtx3/nvToolsExt.h>

#include <pthread.h>

#include <cstdint>
#include <mutex>

#include "nvtx_log.hpp"

namespace {

stint_test::nvtx_log the_log;
thread_local int depth = 0;

std::uint64_t this_thread() { return static_cast<std::uint64_t>(pthread_self()); }

int push(const char* message) {
    std::lock_guard lock(the_log.mutex);
    the_log.calls.push_back({true, message != nullptr ? message : "", this_thread()});
    return depth++;
}

int NVTX_API push_a(const char* message) { return push(message); }

int NVTX_API push_ex(const nvtxEventAttributes_t* attributes) {
    const bool ascii = attributes != nullptr && attributes->messageType == NVTX_MESSAGE_TYPE_ASCII;
    return push(ascii ? attributes->message.ascii : "");
}

int NVTX_API pop() {
    std::lock_guard lock(the_log.mutex);
    the_log.calls.push_back({false, "", this_thread()});
    return --depth;
}

}  // namespace

extern "C" {

__attribute__((visibility("default"))) int InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get_export_table) {
    const auto* callbacks = static_cast<const NvtxExportTableCallbacks*>(get_export_table(NVTX_ETID_CALLBACKS));
    if (callbacks == nullptr) return 0;
    NvtxFunctionTable table = nullptr;
    unsigned int size = 0;
    if (callbacks->GetModuleFunctionTable(NVTX_CB_MODULE_CORE, &table, &size) == 0 || table == nullptr ||
        size <= NVTX_CBID_CORE_RangePop) {
        return 0;
    }
    *table[NVTX_CBID_CORE_RangePushA] = reinterpret_cast<NvtxFunctionPointer>(&push_a);
    *table[NVTX_CBID_CORE_RangePushEx] = reinterpret_cast<NvtxFunctionPointer>(&push_ex);
    *table[NVTX_CBID_CORE_RangePop] = reinterpret_cast<NvtxFunctionPointer>(&pop);
    return 1;
}

__attribute__((visibility("default"))) stint_test::nvtx_log* stint_test_nvtx_log() { return &the_log; }

}  // extern "C"
