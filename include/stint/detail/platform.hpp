#pragma once
// The few OS facts stint needs: thread ids and names, the process id, fork hooks.

#include <cstdint>      // std::uint64_t
#include <cstring>      // std::memcpy
#include <string>       // std::string
#include <string_view>  // std::string_view

#if defined(__linux__)
#include <pthread.h>      // pthread_self, pthread_getname_np, pthread_setname_np
#include <sys/syscall.h>  // SYS_gettid
#include <unistd.h>       // ::syscall, ::getpid
#elif defined(__APPLE__)
#include <pthread.h>  // pthread_threadid_np, pthread_getname_np, pthread_setname_np
#include <unistd.h>   // ::getpid
#endif

namespace stint::detail {

/// The kernel's id of the calling thread (what Kineto and perf show as tid).
inline std::uint64_t current_os_tid() noexcept {
#if defined(__linux__)
    return static_cast<std::uint64_t>(::syscall(SYS_gettid));
#elif defined(__APPLE__)
    std::uint64_t id = 0;
    pthread_threadid_np(nullptr, &id);
    return id;
#else
    return 0;
#endif
}

inline std::uint64_t current_pid() noexcept {
#if defined(__linux__) || defined(__APPLE__)
    return static_cast<std::uint64_t>(::getpid());
#else
    return 0;
#endif
}

/// The calling thread's name as the OS knows it ("" when unnamed or unknown).
inline std::string current_thread_name() {
#if defined(__linux__) || defined(__APPLE__)
    char name[64] = {};
    if (pthread_getname_np(pthread_self(), name, sizeof(name)) == 0) return name;
#endif
    return {};
}

/// Names the calling thread for the OS (debuggers, top -H); at most 15 characters on Linux.
inline void name_this_thread(const char* name) noexcept {
#if defined(__linux__)
    (void)pthread_setname_np(pthread_self(), name);
#elif defined(__APPLE__)
    (void)pthread_setname_np(name);
#else
    (void)name;
#endif
}

/// Names the calling thread for the OS from any text, cut to the 15 bytes Linux keeps.
inline void set_os_thread_name(std::string_view name) noexcept {
    char cut[16] = {};
    if (!name.empty()) std::memcpy(cut, name.data(), name.size() < 15 ? name.size() : 15);
    name_this_thread(cut);
}

}  // namespace stint::detail
