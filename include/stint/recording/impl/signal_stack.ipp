#pragma once
// The bodies of recording/signal_stack.hpp.
#include "stint/recording/signal_stack.hpp"

#include <algorithm>  // std::max

#include <signal.h>    // sigaltstack, stack_t, SS_DISABLE
#include <sys/mman.h>  // mmap, mprotect, munmap
#include <unistd.h>    // sysconf, _SC_SIGSTKSZ, _SC_PAGESIZE

namespace stint::detail {
inline namespace STINT_DETAIL_ABI_NAMESPACE {

std::size_t signal_stack_bytes() noexcept {
    long minimum = 0;
#if defined(_SC_SIGSTKSZ)
    minimum = ::sysconf(_SC_SIGSTKSZ);  // the kernel's figure for this CPU's signal frame (AVX-512 is large)
#endif
    return std::max<std::size_t>(64 * 1024, 4 * static_cast<std::size_t>(std::max(minimum, 0L)));
}

void ensure_signal_stack(thread_node& node) noexcept {
    if (node.signal_stack != nullptr) return;
    stack_t current{};
    if (::sigaltstack(nullptr, &current) != 0 || (current.ss_flags & SS_DISABLE) == 0) return;
    const auto page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
    const std::size_t usable = (signal_stack_bytes() + page - 1) / page * page;
    void* memory = ::mmap(nullptr, usable + page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (memory == MAP_FAILED) return;
    ::mprotect(memory, page, PROT_NONE);  // a handler that overflows faults instead of writing below
    stack_t ours{};
    ours.ss_sp = static_cast<char*>(memory) + page;
    ours.ss_size = usable;
    ours.ss_flags = 0;
    if (::sigaltstack(&ours, nullptr) != 0) {
        ::munmap(memory, usable + page);
        return;
    }
    node.signal_stack = memory;
    node.signal_stack_bytes = usable + page;
}

void leave_signal_stack(thread_node& node) noexcept {
    if (node.signal_stack == nullptr) return;
    stack_t current{};
    if (::sigaltstack(nullptr, &current) != 0 || (current.ss_flags & SS_DISABLE) != 0) return;
    const auto page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
    if (current.ss_sp != static_cast<char*>(node.signal_stack) + page) return;  // the program's own
    stack_t off{};
    off.ss_flags = SS_DISABLE;
    ::sigaltstack(&off, nullptr);  // fails (EPERM) only on that stack, which a thread's end never runs on
}

void free_signal_stack(thread_node& node) noexcept {
    if (node.signal_stack == nullptr) return;
    ::munmap(node.signal_stack, node.signal_stack_bytes);
    node.signal_stack = nullptr;
    node.signal_stack_bytes = 0;
}

}  // namespace STINT_DETAIL_ABI_NAMESPACE
}  // namespace stint::detail
