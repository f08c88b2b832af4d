#pragma once
// What the test's NVTX injection library (injection.cpp) saw: every range push and pop, in order, with
// the thread that made it. Shared by the library and the test, built with the same compiler.

#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

namespace stint_test {

struct nvtx_call {
    bool push = false;     // a push (with its message), else a pop
    std::string message;
    std::uint64_t thread = 0;
};

struct nvtx_log {
    std::mutex mutex;
    std::vector<nvtx_call> calls;
};

}  // namespace stint_test
