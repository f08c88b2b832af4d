// A plugin: a library that includes only <stint/annotate.hpp>, built with hidden visibility and loaded
// with dlopen(RTLD_LOCAL) by a program not linked with -rdynamic (plugin_test.cpp), as Python loads
// extension modules. It cannot bind to the program's copies of stint's state; the profiler links its
// own copies (recording/object_links.hpp). One object, linked into one module per test case.
#include <atomic>
#include <cstdint>
#include <string_view>
#include <vector>

#include <stint/annotate.hpp>

namespace {

struct tensor {
    std::vector<std::int64_t> shape;
    [[nodiscard]] const std::vector<std::int64_t>& sizes() const { return shape; }
    [[nodiscard]] std::string_view dtype() const { return "float"; }
};

// What the plugin's recording hook was last told (hooks of its own table, run by the profiler).
std::atomic<int> hook_calls{0};
std::atomic<bool> hook_recording{false};
void on_recording(bool on, void*) {
    hook_recording.store(on, std::memory_order_relaxed);
    hook_calls.fetch_add(1, std::memory_order_relaxed);
}
stint::recording_hook hook{&on_recording};

}  // namespace

/// A scope around an op with two rank-2 inputs, and a flow's start; returns the flow's id.
extern "C" __attribute__((visibility("default"))) std::uint64_t plugin_work(std::int64_t rows) {
    STINT_SCOPE("plugin::work");
    const tensor a{{rows, 3}};
    const tensor b{{3, 3}};
    STINT_OP(stint::config<stint::record_shapes>, "plugin::matmul", a, b);
    const std::uint64_t id = stint::new_flow_id();
    stint::flow_begin(id);
    return id;
}

/// Whether the plugin's recording hook was told that recording is on, and how often it was called.
extern "C" __attribute__((visibility("default"))) bool plugin_hook_recording() {
    return hook_recording.load(std::memory_order_relaxed);
}
extern "C" __attribute__((visibility("default"))) int plugin_hook_calls() {
    return hook_calls.load(std::memory_order_relaxed);
}
