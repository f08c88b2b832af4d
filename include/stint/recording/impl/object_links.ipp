#pragma once
// Finding the objects with copies of their own of stint's process-wide state (object_links.hpp).

#include "stint/recording/object_links.hpp"

#include <algorithm>  // std::find, std::none_of
#include <cstddef>    // std::size_t, offsetof
#include <exception>  // std::exception_ptr, std::current_exception, std::rethrow_exception
#include <memory>     // std::construct_at

#if defined(__linux__)
#include <dlfcn.h>  // dlopen, dlsym, dlclose, RTLD_NOLOAD
#include <link.h>   // dl_iterate_phdr
#endif

namespace stint::detail {
inline namespace STINT_DETAIL_ABI_NAMESPACE {

#if defined(__linux__)
namespace object_links_detail {

struct loader_counters {
    unsigned long long adds = 0;
    unsigned long long subs = 0;
};

// The loader's counts of objects loaded and unloaded, from the first object it reports.
inline loader_counters read_loader_counters() {
    loader_counters out;
    ::dl_iterate_phdr(
        [](dl_phdr_info* info, std::size_t size, void* data) -> int {
            if (size >= offsetof(dl_phdr_info, dlpi_subs) + sizeof(info->dlpi_subs)) {
                auto* counters = static_cast<loader_counters*>(data);
                counters->adds = info->dlpi_adds;
                counters->subs = info->dlpi_subs;
            }
            return 1;  // one is enough
        },
        &out);
    return out;
}

}  // namespace object_links_detail
#endif

std::vector<std::string> object_links::refresh(const std::atomic<std::uint32_t>* own_recording,
                                               const slow_path* path) {
    std::vector<std::string> linked_now;
    // One scan at a time, across the loader's calls; mutex_ only for the short reads and the linking,
    // never across a loader call (a thread holding the loader's lock may be waiting for it).
    std::lock_guard scanning(scan_mutex_);
#if defined(__linux__)
    const auto counters = object_links_detail::read_loader_counters();
    if (scanned_ && counters.adds == adds_ && counters.subs == subs_) return linked_now;
    // An object unloaded since: a name looked at may now be another object (linked ones stay pinned).
    if (scanned_ && counters.subs != subs_) checked_.clear();
    struct walk {
        std::vector<std::string> names;
        std::exception_ptr error;  // an exception must not unwind through the loader's C frames
    } w;
    // The names first: dlopen is not called from inside the loader's iteration.
    ::dl_iterate_phdr(
        [](dl_phdr_info* info, std::size_t, void* data) -> int {
            try {
                // The program itself has no name here, and its symbols are what a follower cannot reach.
                if (info->dlpi_name != nullptr && info->dlpi_name[0] != '\0') {
                    static_cast<walk*>(data)->names.emplace_back(info->dlpi_name);
                }
                return 0;
            } catch (...) {
                static_cast<walk*>(data)->error = std::current_exception();
                return 1;
            }
        },
        &w);
    if (w.error) std::rethrow_exception(w.error);
    const std::vector<std::string>& names = w.names;
    for (const std::string& name : names) {
        if (std::find(checked_.begin(), checked_.end(), name) != checked_.end()) continue;
        checked_.push_back(name);
        // RTLD_NOLOAD: a handle to the loaded object, never a load (nor a change of its scope).
        void* handle = ::dlopen(name.c_str(), RTLD_LAZY | RTLD_NOLOAD);
        if (handle == nullptr) continue;
        const auto* link =
            static_cast<const object_link*>(::dlsym(handle, STINT_DETAIL_LINK_STRING(STINT_DETAIL_OBJECT_LINK)));
        // gcc makes inline variables unique symbols, which the loader may bind across RTLD_LOCAL objects one
        // by one: an object whose flag is the program's may still have a slow path of its own. Writing a
        // copy that is the program's is harmless (the same values; a hook table told twice passes it on once).
        bool follower = link != nullptr && link->size == sizeof(object_link) &&
                        (link->recording != own_recording || link->installed_path != &installed_slow_path);
        if (follower) {
            const std::lock_guard lock(mutex_);
            follower = std::none_of(links_.begin(), links_.end(), [&](const object_link* known) {
                return known->recording == link->recording && known->installed_path == link->installed_path;
            });
            if (follower) {
                // Kept open (pinned): the follower's records point at its sites until they are drained,
                // and its copies are written at every start and stop.
                link->installed_path->store(path, std::memory_order_release);  // release: the table is built
                // Flow ids of its own: the high 16 bits name the object (the program's count from 1).
                const std::uint64_t block = static_cast<std::uint64_t>(links_.size() + 1) << 48;
                std::uint64_t id = link->next_point_id->load(std::memory_order_relaxed);
                while (id < block &&
                       !link->next_point_id->compare_exchange_weak(id, block, std::memory_order_relaxed)) {
                }
                links_.push_back(link);
            }
        }
        if (!follower) {
            ::dlclose(handle);
            continue;
        }
        linked_now.push_back(name);
    }
    adds_ = counters.adds;
    subs_ = counters.subs;
    scanned_ = true;
#else
    (void)own_recording;
    (void)path;
#endif
    return linked_now;
}

void object_links::after_fork_in_child() noexcept {
    if (scan_mutex_.try_lock()) {
        scan_mutex_.unlock();
        return;
    }
    // A thread of the parent's was scanning: it is gone, its lock held for ever and what it was changing
    // half changed. A fresh lock and a scan from nothing (a linked object is known by links_, which
    // mutex_ kept whole: before_fork() held it). The old list is left, not freed: it may be torn.
    std::construct_at(&scan_mutex_);
    std::construct_at(&checked_);
    scanned_ = false;
}

void object_links::set_recording(std::uint32_t state, std::memory_order order) noexcept {
    std::lock_guard lock(mutex_);
    set_recording_locked(state, order);
}

std::vector<const object_link*> object_links::linked() {
    std::lock_guard lock(mutex_);
    return links_;
}

}  // namespace STINT_DETAIL_ABI_NAMESPACE
}  // namespace stint::detail
