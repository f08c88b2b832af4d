#pragma once
// Shared objects with copies of their own of stint's process-wide state, linked to the profiler's.
//
// A library built with hidden visibility and loaded with dlopen(..., RTLD_LOCAL) by a program not
// linked with -rdynamic cannot bind to the program's recording flag, slow path or hooks: the program's
// symbols are not in its dynamic table (export_macros.hpp), so the library keeps copies of its own and,
// left alone, records nothing. Each object that includes <stint/annotate.hpp> therefore exports one
// table of where its copies are (object_link.hpp, under a C name carrying the ABI tag:
// <stint/this_object_link.hpp>); the registry finds these tables when a session starts (dl_iterate_phdr,
// dlopen(RTLD_NOLOAD), dlsym: the loader finds an object's exported symbols whatever scope it was loaded
// into) and writes each change of the flag into every copy. The hot path still reads its own object's
// flag, one relaxed load: nothing on it changes.

#include <atomic>   // std::atomic, std::memory_order
#include <cstdint>  // std::uint32_t
#include <mutex>    // std::mutex
#include <string>   // std::string
#include <vector>   // std::vector

#include "stint/detail/export_macros.hpp"
#include "stint/detail/separate_compilation.hpp"
#include "stint/recording/object_link.hpp"
#include "stint/recording/slow_path.hpp"

namespace stint::detail {
inline namespace STINT_DETAIL_ABI_NAMESPACE {

/// The objects found with copies other than this object's, each pinned (kept loaded: its records
/// point at its sites). Two locks, neither held on the hot path: refresh() calls dl_iterate_phdr and
/// dlopen, which take the loader's locks, so it runs outside the registry's lock (a library's static
/// initializer may hold the loader's lock and name its thread, which takes the registry's), under a
/// lock of its own (scan_mutex_); mutex() guards the list of links, which the registry's callers take
/// under the registry's lock: it is never held across a loader call.
class object_links {
public:
    /// Looks for objects loaded since the last call (all of them at the first), linking those whose
    /// recording flag or slow path is not this object's: each gets `path` and a block of flow ids of its
    /// own. Returns the names of the objects linked by this call. Cheap when nothing was loaded since:
    /// one dl_iterate_phdr step.
    STINT_DECL std::vector<std::string> refresh(const std::atomic<std::uint32_t>* own_recording,
                                                const slow_path* path);
    /// Writes `state` into every linked object's recording flag.
    STINT_DECL void set_recording(std::uint32_t state, std::memory_order order) noexcept;
    /// The linked objects' tables.
    STINT_DECL std::vector<const object_link*> linked();
    /// Held across fork() (the registry's fork handlers), so that the child finds it free.
    std::mutex& mutex() noexcept { return mutex_; }
    /// In the child after fork (mutex() held across the fork): a scan the parent was making is dropped.
    STINT_DECL void after_fork_in_child() noexcept;
    /// set_recording() by a caller that holds mutex() (the child after fork).
    void set_recording_locked(std::uint32_t state, std::memory_order order) noexcept {
        for (const object_link* link : links_) link->recording->store(state, order);
    }

private:
    std::mutex mutex_;  // links_
    std::vector<const object_link*> links_;
    std::mutex scan_mutex_;  // refresh(): the members below
    std::vector<std::string> checked_;  // objects looked at (linked or without stint), by name
    unsigned long long adds_ = 0;       // the loader's counters at the last refresh
    unsigned long long subs_ = 0;
    bool scanned_ = false;
};

}  // namespace STINT_DETAIL_ABI_NAMESPACE
}  // namespace stint::detail

#if defined(STINT_HEADER_ONLY)
#include "stint/recording/impl/object_links.ipp"
#endif
