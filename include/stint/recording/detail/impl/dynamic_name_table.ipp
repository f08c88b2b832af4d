#pragma once
// The bodies of recording/detail/dynamic_name_table.hpp: the process's table of dynamic scopes' sites.

#include "stint/recording/detail/dynamic_name_table.hpp"
#include "stint/annotations/dynamic_name.hpp"

#include <cstdlib>  // std::free

#if STINT_DETAIL_HAS_CXXABI
#include <cxxabi.h>  // abi::__cxa_demangle
#endif

namespace stint::detail {

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

inline namespace STINT_DETAIL_ABI_NAMESPACE {

site dynamic_name_table::site_like(const dynamic_site& where) noexcept {
    return site{"", event_kind::user_annotation, payload_kind::none, where.location};
}

const site& dynamic_name_table::intern(dynamic_site& where, const std::type_info& type) {
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

std::string dynamic_name_table::event_name(const dynamic_site& where, const std::type_info& type) {
    const std::string full = demangled_name(type);
    const std::string_view cls = unqualified_name(full);
    std::string name;
    name.reserve(where.prefix.size() + cls.size() + where.method.size() + 2);
    name.append(where.prefix).append(1, '#').append(cls).append(1, '.').append(where.method);
    return name;
}

dynamic_name_table& the_dynamic_name_table() {
    static dynamic_name_table* const instance = new dynamic_name_table();
    return *instance;
}

}  // namespace STINT_DETAIL_ABI_NAMESPACE

const site* intern_dynamic_site_in_table(dynamic_site& where, const std::type_info& type) {
    return &the_dynamic_name_table().intern(where, type);
}

}  // namespace stint::detail
