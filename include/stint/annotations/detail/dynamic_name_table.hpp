#pragma once
// The process's table of STINT_SCOPE_DYNAMIC's sites, by call site and dynamic type, and the names it
// makes ("Optimizer.step#SGD.step"): the slow path of a dynamic scope, reached through the installed
// slow-path table (recording/slow_path.hpp), so that the annotation header needs none of this.

#include <cstddef>
#include <cstdlib>
#include <functional>
#include <mutex>
#include <string>
#include <string_view>
#include <typeindex>
#include <typeinfo>
#include <unordered_map>

#if __has_include(<cxxabi.h>)
#include <cxxabi.h>
#define STINT_DETAIL_HAS_CXXABI 1
#else
#define STINT_DETAIL_HAS_CXXABI 0
#endif

#include "stint/annotations/dynamic_name.hpp"
#include "stint/detail/export_macros.hpp"

namespace stint::detail {

/// The demangled name of a type ("ns::SGD"); the ABI's own name where there is no demangler.
template <class = void>
std::string demangled_name(const std::type_info& type) {
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

template <class = void>
class basic_dynamic_name_table;
/// basic_dynamic_name_table's one form (a template, like the registry: compiled only where a profiler is).
using dynamic_name_table = basic_dynamic_name_table<>;

/// Every site made for a dynamic type, by call site and type. Process-wide and leaked, like the
/// registry: its sites must outlive every record and event.
template <class>
class basic_dynamic_name_table {
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

template <class = void>
STINT_DETAIL_EXPORT dynamic_name_table& the_dynamic_name_table() {
    static dynamic_name_table* const instance = new dynamic_name_table();
    return *instance;
}

}  // namespace STINT_DETAIL_ABI_NAMESPACE

/// The table's entry for the slow-path table.
template <class = void>
const site* intern_dynamic_site_in_table(dynamic_site& where, const std::type_info& type) {
    return &the_dynamic_name_table().intern(where, type);
}

}  // namespace stint::detail
