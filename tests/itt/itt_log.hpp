#pragma once
// What the test's fake ITT collector (collector.cpp) saw: every call stint made into it, in order, with
// the thread that made it. Shared by the library and the test, built with the same compiler.

#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

namespace stint_test {

struct itt_call {
    enum kind_t { api_init, domain_create, string_handle_create, task_begin, task_end } kind = api_init;
    std::string name;    // the domain's or string's name; a task's name, from its string handle
    std::string domain;  // a task's domain
    std::uint64_t thread = 0;
};

struct itt_log {
    std::mutex mutex;
    std::vector<itt_call> calls;
    bool descriptor_ok = false;  // __itt_api_init saw ITT's magic and version 3
};

}  // namespace stint_test
