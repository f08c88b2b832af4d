#pragma once
// Compiled-region annotations in torch.compile's form, "Torch-Compiled Region: <frame>/<compile>",
// the name trace tools (HTA, Perfetto queries) look for to find the calls of compiled code.

#include <array>          // std::array
#include <atomic>         // std::memory_order_relaxed
#include <cstddef>        // std::size_t
#include <cstdint>        // std::uint64_t, std::uint32_t
#include <mutex>          // std::mutex, std::lock_guard
#include <string>         // std::string, std::to_string
#include <unordered_map>  // std::unordered_map
#include <utility>        // std::move

#include "stint/recording/buffer.hpp"
#include "stint/recording/open_scopes.hpp"
#include "stint/recording/ticks.hpp"
#include "stint/detail/export_macros.hpp"
#include "stint/annotations/detail/interned_site.hpp"
#include "stint/recording/slow_path.hpp"
#include "stint/recording/state.hpp"
#include "stint/recording/site.hpp"

namespace stint::detail {
inline namespace STINT_DETAIL_ABI_NAMESPACE {

/// Every compiled-region site made so far, by (frame, compile) id. Process-wide and leaked, like the
/// registry: its sites must outlive every record and event.
class compiled_region_table {
public:
    const site& intern(std::uint64_t key) {
        std::lock_guard lock(mutex_);
        auto [it, added] = sites_.try_emplace(key, nullptr);
        if (added) {
            try {
                std::string name = "Torch-Compiled Region: " + std::to_string(key >> 32) + "/" +
                                   std::to_string(key & 0xffffffffU);
                it->second =
                    new interned_site(std::move(name), site{"", event_kind::user_annotation, payload_kind::none, {}});
            } catch (...) {
                sites_.erase(it);
                throw;
            }
        }
        return it->second->where;
    }

private:
    std::mutex mutex_;
    std::unordered_map<std::uint64_t, const interned_site*> sites_;
};

STINT_DETAIL_EXPORT inline compiled_region_table& the_compiled_region_table() {
    static compiled_region_table* const instance = new compiled_region_table();
    return *instance;
}

/// Each thread's recent compiled-region sites, direct-mapped: a repeated (frame, compile) finds its
/// site without a lock. Trivial, so the thread_local costs no registration.
struct compiled_region_cache {
    static constexpr std::size_t slots = 64;
    std::array<std::uint64_t, slots> keys{};
    std::array<const site*, slots> sites{};
};
inline constinit thread_local compiled_region_cache tls_compiled_regions{};

}  // namespace STINT_DETAIL_ABI_NAMESPACE

/// The site of a (frame, compile) key, from the thread's cache or the table; nullptr when making it
/// failed (the event is then counted as dropped).
inline const site* compiled_region_site(std::uint64_t key, std::uint32_t state) noexcept {
    compiled_region_cache& cache = tls_compiled_regions;
    const std::size_t slot = (key ^ (key >> 29)) % compiled_region_cache::slots;
    if (cache.sites[slot] != nullptr && cache.keys[slot] == key) return cache.sites[slot];
    try {
        const site* found = &the_compiled_region_table().intern(key);
        cache.keys[slot] = key;
        cache.sites[slot] = found;
        return found;
    } catch (...) {
        thread_buffer& buffer = tls_buffer;
        if (buffer.node != nullptr && buffer.state == state) bump(buffer.node->dropped);
        return nullptr;
    }
}

}  // namespace stint::detail

namespace stint {

/// Annotates one call of compiled code as torch.compile does: a user_annotation named
/// "Torch-Compiled Region: <frame_id>/<compile_id>" (the frame's id, and which compile of it runs:
/// 0 first, 1 after a recompile). The name is made once per pair, not per call; without a session
/// the annotation costs one relaxed load.
///
///     stint::compiled_region region(frame.id, frame.compile_count);
///     frame.run_compiled(inputs);
class compiled_region {
public:
    compiled_region(std::uint32_t frame_id, std::uint32_t compile_id) noexcept
        : state_(detail::recording.value.load(std::memory_order_relaxed)) {
        if (detail::is_recording_state(state_)) {
            where_ = detail::compiled_region_site((std::uint64_t{frame_id} << 32) | compile_id, state_);
            if (where_ != nullptr) opened_on_ = detail::enter_scope_on_this_thread();
            begin_ = read_ticks();
            if (where_ != nullptr) detail::note_scope_entered(state_, where_, begin_);
        }
    }
    ~compiled_region() { end(); }
    compiled_region(const compiled_region&) = delete;
    compiled_region& operator=(const compiled_region&) = delete;

    /// Ends the annotation early; later calls do nothing.
    void end() noexcept {
        if (detail::is_recording_state(state_) && where_ != nullptr) {
            const std::uint64_t end = read_ticks();
            const std::uint32_t depth = detail::leave_scope_on(opened_on_);
            detail::note_scope_left_on(state_, opened_on_, depth);
            detail::append_record(where_, depth, begin_, end, state_);
        }
        state_ = 0;
    }

private:
    std::uint32_t state_;
    const detail::site* where_ = nullptr;
    const void* opened_on_ = nullptr;
    std::uint64_t begin_ = 0;
};

}  // namespace stint
