// stint::emit_nvtx against a real NVTX tool: the injection library next to this test (injection.cpp),
// which NVTX loads from NVTX_INJECTION64_PATH at its first call, records every range push and pop.
// Names and nesting must be stint's own events'.

#include <dlfcn.h>
#include <pthread.h>

#include <cstdint>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

// Set before anything in this process calls NVTX.
static const bool injection_set = [] { return ::setenv("NVTX_INJECTION64_PATH", STINT_TEST_NVTX_INJECTION, 1) == 0; }();

#include <doctest/doctest.h>

#include <stint/annotations/nvtx.hpp>
#define STINT_CONFIG ::stint::config<::stint::emit_nvtx>
#include <stint/stint.hpp>

#include "nvtx_log.hpp"

namespace {

using mirrored = stint::config<stint::emit_nvtx>;
using mirrored_shapes = stint::config<stint::emit_nvtx, stint::record_shapes>;

struct tensor {
    std::vector<std::int64_t> dims;
    const std::vector<std::int64_t>& sizes() const { return dims; }
    const char* dtype() const { return "float"; }
};

stint_test::nvtx_log& nvtx_log() {
    void* library = ::dlopen(STINT_TEST_NVTX_INJECTION, RTLD_NOW | RTLD_NOLOAD);
    REQUIRE_MESSAGE(library != nullptr, "NVTX did not load the injection library");
    using get_log = stint_test::nvtx_log* (*)();
    auto* get = reinterpret_cast<get_log>(::dlsym(library, "stint_test_nvtx_log"));
    REQUIRE(reinterpret_cast<void*>(get) != nullptr);
    return *get();
}

// The calls since `from` (the probe stint makes once, a push and pop of "stint", left out).
std::vector<stint_test::nvtx_call> calls_since(std::size_t from) {
    stint_test::nvtx_log& log = nvtx_log();
    std::lock_guard lock(log.mutex);
    std::vector<stint_test::nvtx_call> out;
    for (std::size_t i = from; i < log.calls.size(); ++i) {
        const stint_test::nvtx_call& c = log.calls[i];
        if (c.push && c.message == "stint" && i + 1 < log.calls.size() && !log.calls[i + 1].push) {
            ++i;  // the probe
            continue;
        }
        out.push_back(c);
    }
    return out;
}

std::size_t calls_now() {
    stint_test::nvtx_log& log = nvtx_log();
    std::lock_guard lock(log.mutex);
    return log.calls.size();
}

void workload(const tensor& a, const tensor& b) {
    STINT_SCOPE("outer");
    {
        STINT_SCOPE("inner");
        STINT_OP(mirrored_shapes, "aten::mm", a, b, 3);
    }
    STINT_SCOPE_NAMED(std::string("layer") + std::to_string(2));
    STINT_OP(mirrored, "aten::relu", a);
}

// The pre-order of one thread's stint events, each as its name, with "<" for a push and ">" for a pop.
void pre_order(const stint::event_list& list, const stint::event& e, std::vector<std::string>& out) {
    out.push_back("<" + std::string(e.name));
    for (const stint::event& c : list.children(e)) pre_order(list, c, out);
    out.push_back(">");
}

}  // namespace

TEST_CASE("emit_nvtx mirrors every scope and op as an NVTX range, nested as stint's events, shapes included") {
    REQUIRE(injection_set);
    const tensor a{{64, 32}};
    const tensor b{{32, 16}};
    workload(a, b);  // the first NVTX call loads the injection library
    const std::size_t from = calls_now();
    stint::profiler<> prof;
    prof.start();
    workload(a, b);
    prof.stop();
    const std::vector<stint_test::nvtx_call> calls = calls_since(from);

    std::vector<std::string> seen;
    for (const stint_test::nvtx_call& c : calls) seen.push_back(c.push ? "<" + c.message : ">");
    std::vector<std::string> expected;
    for (const stint::event& e : prof.events()) {
        if (e.is_top_level()) pre_order(prof.events(), e, expected);
    }
    // The op that captured shapes carries them in its range, as torch's emit_nvtx(record_shapes=True).
    for (std::string& name : expected) {
        if (name == "<aten::mm") name = "<aten::mm, sizes = [[64, 32], [32, 16], []]";
    }
    CHECK(seen == expected);
    CHECK(expected.size() == 10);  // outer, inner, aten::mm, layer2, aten::relu: pushed and popped
    for (const stint_test::nvtx_call& c : calls) CHECK(c.thread == static_cast<std::uint64_t>(pthread_self()));
}

TEST_CASE("emit_nvtx ranges are pushed without a session too, on the thread that runs the scope") {
    const tensor a{{2, 3}};
    const tensor b{{3, 4}};
    const std::size_t from = calls_now();
    std::uint64_t worker_thread = 0;
    std::thread worker([&] {
        worker_thread = static_cast<std::uint64_t>(pthread_self());
        workload(a, b);
    });
    worker.join();
    const std::vector<stint_test::nvtx_call> calls = calls_since(from);
    std::vector<std::string> seen;
    for (const stint_test::nvtx_call& c : calls) {
        seen.push_back(c.push ? "<" + c.message : ">");
        CHECK(c.thread == worker_thread);
    }
    // Without a session no inputs are captured: the op's range has its name alone.
    const std::vector<std::string> expected{"<outer", "<inner", "<aten::mm", ">", ">", "<layer2", "<aten::relu",
                                            ">", ">", ">"};
    CHECK(seen == expected);
}

TEST_CASE("a config without emit_nvtx pushes no NVTX range") {
    const std::size_t from = calls_now();
    stint::profiler<> prof;
    prof.start();
    {
        STINT_OP(stint::config<>, "aten::add", 1);
        STINT_OP(stint::config<stint::record_shapes>, "aten::mul", 2);
    }
    prof.stop();
    CHECK(prof.events().size() == 2);
    CHECK(calls_since(from).empty());
}
