#pragma once
// Scope names from an object's dynamic type: STINT_SCOPE_DYNAMIC("Optimizer.step", "step", *this)
// in SGD's step records "Optimizer.step#SGD.step" (torch's high-level optimizer and data-loader
// events). The name is made once per call site and type; each call records a 24-byte record that
// points to it, as a static site's does.

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <mutex>
#include <string>
#include <string_view>
#include <type_traits>
#include <typeindex>
#include <typeinfo>
#include <unordered_map>

#if __has_include(<cxxabi.h>)
#include <cxxabi.h>
#define STINT_DETAIL_HAS_CXXABI 1
#else
#define STINT_DETAIL_HAS_CXXABI 0
#endif

#include "stint/recording/buffer.hpp"
#include "stint/recording/ticks.hpp"
#include "stint/config.hpp"
#include "stint/detail/export_macros.hpp"
#include "stint/annotations/detail/interned_site.hpp"
#include "stint/recording/slow_path.hpp"
#include "stint/recording/state.hpp"
#include "stint/scope.hpp"
#include "stint/recording/site.hpp"

namespace stint::detail {

/// The demangled name of a type ("ns::SGD"); the ABI's own name where there is no demangler.
inline std::string demangled_name(const std::type_info& type) {
#if STINT_DETAIL_HAS_CXXABI
    int status = 0;
    char* text = abi::__cxa_demangle(type.name(), nullptr, nullptr, &status);
    if (status == 0 && text != nullptr) {
        std::string out(text);
        std::free(text);
        return out;
    }
    std::free(text);
#endif
    return type.name();
}

/// A demangled class name without what encloses it, as Python's `type(obj).__name__`: namespaces,
/// `(anonymous namespace)`, enclosing classes and enclosing functions of a local class are dropped
/// ("ns::(anonymous namespace)::SGD" and "train()::SGD" give "SGD"); template arguments are kept as
/// the demangler writes them ("ns::adam<ns::half>" gives "adam<ns::half>").
constexpr std::string_view unqualified_name(std::string_view name) noexcept {
    int depth = 0;
    std::size_t start = 0;
    for (std::size_t i = 0; i < name.size(); ++i) {
        const char c = name[i];
        if (c == '<' || c == '(' || c == '[' || c == '{') {
            ++depth;
        } else if (c == '>' || c == ')' || c == ']' || c == '}') {
            --depth;
        } else if (depth == 0 && c == ':' && i + 1 < name.size() && name[i + 1] == ':') {
            start = i + 2;
            ++i;
        }
    }
    return name.substr(start);
}

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
    /// The sites made here for the first types seen: each slot is set once, under the table's mutex,
    /// and never changes, so a call finds its site with a few acquire loads and no lock. A site
    /// called with more types than this finds the others in the table.
    std::atomic<const dynamic_name_entry*> seen[cached_types] = {};
};

/// Every site made for a dynamic type, by call site and type. Process-wide and leaked, like the
/// registry: its sites must outlive every record and event.
class dynamic_name_table {
public:
    /// The site of `type` at `where`, made the first time; cached in `where` when a slot is free.
    const site& intern(dynamic_site& where, const std::type_info& type) {
        std::lock_guard lock(mutex_);
        auto [it, added] = entries_.try_emplace(key{&where, std::type_index(type)}, nullptr);
        if (added) {
            try {
                it->second = new dynamic_name_entry{&type, interned_site(event_name(where, type), site_like(where))};
            } catch (...) {
                entries_.erase(it);
                throw;
            }
        }
        const dynamic_name_entry* entry = it->second;
        for (auto& slot : where.seen) {
            const dynamic_name_entry* cached = slot.load(std::memory_order_relaxed);  // writers hold mutex_
            if (cached == entry) break;
            if (cached == nullptr) {
                // release: pairs with the acquire in find_dynamic_site(); the entry is complete.
                slot.store(entry, std::memory_order_release);
                break;
            }
        }
        return entry->site.where;
    }

private:
    struct key {
        const dynamic_site* where;
        std::type_index type;
        bool operator==(const key&) const = default;
    };
    struct key_hash {
        std::size_t operator()(const key& k) const noexcept {
            return std::hash<const void*>{}(k.where) * 31 + std::hash<std::type_index>{}(k.type);
        }
    };

    static std::string event_name(const dynamic_site& where, const std::type_info& type) {
        const std::string full = demangled_name(type);
        const std::string_view cls = unqualified_name(full);
        std::string name;
        name.reserve(where.prefix.size() + cls.size() + where.method.size() + 2);
        name.append(where.prefix).append(1, '#').append(cls).append(1, '.').append(where.method);
        return name;
    }
    static site site_like(const dynamic_site& where) noexcept {
        return site{"", event_kind::user_annotation, payload_kind::none, where.location};
    }

    std::mutex mutex_;
    std::unordered_map<key, const dynamic_name_entry*, key_hash> entries_;
};

STINT_DETAIL_EXPORT inline dynamic_name_table& the_dynamic_name_table() {
    static dynamic_name_table* const instance = new dynamic_name_table();
    return *instance;
}

}  // namespace STINT_DETAIL_ABI_NAMESPACE

/// The first sight of a type at a site: made under the table's lock. nullptr when that allocation
/// failed; the event is then counted as dropped.
STINT_DETAIL_COLD inline const site* intern_dynamic_site(dynamic_site& where, const std::type_info& type,
                                                         std::uint32_t state) noexcept {
    try {
        return &the_dynamic_name_table().intern(where, type);
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
#define STINT_SCOPE_DYNAMIC(prefix, method, object) static_assert(true, "")
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
