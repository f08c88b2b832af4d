#pragma once
// Scope names from an object's dynamic type: STINT_SCOPE_DYNAMIC("Optimizer.step", "step", *this)
// in SGD's step records "Optimizer.step#SGD.step" (torch's high-level optimizer and data-loader
// events). The name is made once per call site and type; each call records a 24-byte record that
// points to it, as a static site's does.

#include <atomic>       // std::atomic, std::memory_order
#include <cstddef>      // std::size_t
#include <cstdint>      // std::uint32_t, std::uint64_t
#include <string_view>  // std::string_view
#include <type_traits>  // std::conditional_t, std::is_pointer_v
#include <typeinfo>     // std::type_info, typeid

#include "stint/recording/buffer.hpp"
#include "stint/recording/open_scopes.hpp"
#include "stint/recording/ticks.hpp"
#include "stint/config.hpp"
#include "stint/detail/export_macros.hpp"
#include "stint/annotations/detail/interned_site.hpp"
#include "stint/recording/slow_path.hpp"
#include "stint/recording/state.hpp"
#include "stint/scope.hpp"
#include "stint/recording/site.hpp"

namespace stint::detail {

inline namespace STINT_DETAIL_ABI_NAMESPACE {

/// A site made for one dynamic type at one STINT_SCOPE_DYNAMIC site.
struct dynamic_name_entry {
    const std::type_info* type;
    interned_site site;
};

/// A STINT_SCOPE_DYNAMIC call site: what every call shares, and the first types seen there.
struct dynamic_site {
    static constexpr std::size_t cached_types = 4;

    std::string_view prefix;  ///< "Optimizer.step": the event is "<prefix>#<class>.<method>"
    std::string_view method;  ///< "step"
    source_location location;
    /// The sites made here for the first types seen: each slot is set once, under the mutex of the table
    /// (recording/detail/dynamic_name_table.hpp), and never changes, so a call finds its site with a
    /// few acquire loads and no lock. A site called with more types than this finds the others in the table.
    std::atomic<const dynamic_name_entry*> seen[cached_types] = {};
};

}  // namespace STINT_DETAIL_ABI_NAMESPACE

/// The first sight of a type at a site: made by the registry's side (the table of sites by call site
/// and type, recording/detail/dynamic_name_table.hpp). nullptr when that allocation failed; the event
/// is then counted as dropped.
STINT_DETAIL_COLD inline const site* intern_dynamic_site(dynamic_site& where, const std::type_info& type,
                                                         std::uint32_t state) noexcept {
    try {
        const slow_path* path = installed_slow_path.load(std::memory_order_acquire);
        return path != nullptr ? path->intern_dynamic_site(where, type) : nullptr;
    } catch (...) {
        thread_buffer& buffer = tls_buffer;
        if (buffer.node != nullptr && buffer.state == state) bump(buffer.node->dropped);
        return nullptr;
    }
}

/// The site of `type` at `where`: a cached one by identity, then by equality (one type can have two
/// type_info objects across shared objects), else the table's.
STINT_DETAIL_ALWAYS_INLINE const site* find_dynamic_site(dynamic_site& where, const std::type_info& type,
                                                         std::uint32_t state) noexcept {
    for (const auto& slot : where.seen) {
        // acquire: pairs with the release in dynamic_name_table::intern(); the entry is complete.
        const dynamic_name_entry* entry = slot.load(std::memory_order_acquire);
        if (entry == nullptr) break;
        if (entry->type == &type || *entry->type == type) return &entry->site.where;
    }
    return intern_dynamic_site(where, type, state);
}

/// Times the enclosing block under the name of `object`'s dynamic type at `where`. Without a session:
/// one relaxed load. With one: typeid, a few loads to find the site, and a 24-byte record.
class dynamic_scope {
public:
    template <class T>
    STINT_DETAIL_ALWAYS_INLINE dynamic_scope(dynamic_site& where, const T& object) noexcept
        : state_(recording.value.load(std::memory_order_relaxed)) {
        static_assert(!std::is_pointer_v<T>,
                      "stint: STINT_SCOPE_DYNAMIC names the object's type, not a pointer's; pass *this, not this");
        if (is_recording_state(state_)) {
            where_ = find_dynamic_site(where, typeid(object), state_);
            if (where_ != nullptr) enter_recorded_scope();
            begin_ = read_ticks();
            if (where_ != nullptr) note_scope_entered(state_, where_, begin_);
        }
    }
    STINT_DETAIL_ALWAYS_INLINE ~dynamic_scope() {
        if (is_recording_state(state_) && where_ != nullptr) append_scope_record(where_, begin_, read_ticks(), state_);
    }
    dynamic_scope(const dynamic_scope&) = delete;
    dynamic_scope& operator=(const dynamic_scope&) = delete;

private:
    std::uint32_t state_;
    const site* where_ = nullptr;
    std::uint64_t begin_ = 0;
};

/// What STINT_SCOPE_DYNAMIC declares for a disabled configuration: nothing that runs.
class no_dynamic_scope {
public:
    template <class T>
    constexpr no_dynamic_scope(dynamic_site&, const T&) noexcept {}
};

template <class Config>
using dynamic_scope_for = std::conditional_t<Config::enabled, dynamic_scope, no_dynamic_scope>;

}  // namespace stint::detail

#if defined(STINT_DISABLE)
#include "stint/detail/compiled_out.hpp"  // every macro compiled out, in one place
#else
/// Times the rest of the block under a name from `object`'s dynamic type,
/// "<prefix>#<class>.<method>" with the class's unqualified name (see detail::unqualified_name).
/// The name is made once per site and type; `object` (evaluated once, like a function argument)
/// is looked at only while a session records.
///
///     struct sgd : optimizer {
///         void step() override { STINT_SCOPE_DYNAMIC("Optimizer.step", "step", *this); ... }
///     };   // "Optimizer.step#sgd.step", or "Optimizer.step#custom_sgd.step" for a subclass
#define STINT_SCOPE_DYNAMIC(prefix, method, object) STINT_DETAIL_SCOPE_DYNAMIC(prefix, method, object, __COUNTER__)
#define STINT_DETAIL_SCOPE_DYNAMIC(prefix, method, object, id)                                               \
    static constinit ::stint::detail::dynamic_site STINT_DETAIL_CAT(stint_dynamic_site_, id) {               \
        prefix, method,                                                                                      \
            ::stint::detail::source_location{__builtin_FILE(), __builtin_FUNCTION(), __builtin_LINE()}       \
    };                                                                                                       \
    [[maybe_unused]] ::stint::detail::dynamic_scope_for<STINT_CONFIG> STINT_DETAIL_CAT(stint_scope_, id) {   \
        STINT_DETAIL_CAT(stint_dynamic_site_, id), object                                                    \
    }
#endif
