#pragma once
// The alternate signal stack a crash handler runs on (profiler/crash_dump.hpp): a thread that overflows
// its stack faults with no room left to run a handler there, so a crash dump asks each recording thread
// for a stack of its own (sigaltstack), made on the thread's slow path, never on the hot path.

#include <cstddef>  // std::size_t

#include "stint/detail/export_macros.hpp"
#include "stint/detail/separate_compilation.hpp"
#include "stint/recording/thread_node.hpp"

namespace stint::detail {
inline namespace STINT_DETAIL_ABI_NAMESPACE {

/// Bytes of the stack a crash handler gets (a guard page below it comes on top): the handler's frames
/// are small, but a handler it chains to (a sanitizer's, a runtime's) may want more.
STINT_DECL std::size_t signal_stack_bytes() noexcept;

/// Gives the calling thread (the owner of `node`) an alternate signal stack, unless it has one already
/// (a sanitizer's, the program's, or stint's): kept in `node` and freed with it. Quietly does nothing
/// when the memory cannot be had: the thread's crash then runs on its own stack, as before.
STINT_DECL void ensure_signal_stack(thread_node& node) noexcept;

/// Run by the owner of `node` as its thread ends, before the node is marked exited (the stack is freed
/// after that, while the thread may still run): turns the thread's alternate stack off if it is still
/// the node's. A stack the program installed since stays, as the program left it.
STINT_DECL void leave_signal_stack(thread_node& node) noexcept;

/// Frees the stack of a node whose thread has exited (and left it: leave_signal_stack).
STINT_DECL void free_signal_stack(thread_node& node) noexcept;

}  // namespace STINT_DETAIL_ABI_NAMESPACE
}  // namespace stint::detail

#if defined(STINT_HEADER_ONLY)
#include "stint/recording/impl/signal_stack.ipp"
#endif
