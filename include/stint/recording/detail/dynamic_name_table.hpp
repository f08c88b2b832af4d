#pragma once
// The process's table of STINT_SCOPE_DYNAMIC's sites, by call site and dynamic type, and the names it
// makes ("Optimizer.step#SGD.step"): the slow path of a dynamic scope, reached through the installed
// slow-path table (recording/slow_path.hpp), so that the annotation header needs none of this.

#include <cstddef>  // std::size_t
#include <functional>  // std::hash
#include <mutex>  // std::mutex
#include <string>  // std::string
#include <string_view>  // std::string_view
#include <typeindex>  // std::type_index
#include <typeinfo>  // std::type_info
#include <unordered_map>  // std::unordered_map

#if __has_include(<cxxabi.h>)
#define STINT_DETAIL_HAS_CXXABI 1
#else
#define STINT_DETAIL_HAS_CXXABI 0
#endif

#include "stint/detail/export_macros.hpp"
#include "stint/detail/separate_compilation.hpp"
#include "stint/recording/site.hpp"

namespace stint::detail {

inline namespace STINT_DETAIL_ABI_NAMESPACE {
struct dynamic_site;        // annotations/dynamic_name.hpp: a STINT_SCOPE_DYNAMIC call site
struct dynamic_name_entry;  // annotations/dynamic_name.hpp: a type's site, cached at its call site
}  // namespace STINT_DETAIL_ABI_NAMESPACE

/// The demangled name of a type ("ns::SGD"); the ABI's own name where there is no demangler.
STINT_DECL std::string demangled_name(const std::type_info& type);

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

/// Every site made for a dynamic type, by call site and type. Process-wide and leaked, like the
/// registry: its sites must outlive every record and event.
class dynamic_name_table {
public:
    /// The site of `type` at `where`, made the first time; cached in `where` when a slot is free.
    STINT_DECL const site& intern(dynamic_site& where, const std::type_info& type);

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

    STINT_DECL static std::string event_name(const dynamic_site& where, const std::type_info& type);
    STINT_DECL static site site_like(const dynamic_site& where) noexcept;

    std::mutex mutex_;
    std::unordered_map<key, const dynamic_name_entry*, key_hash> entries_;
};

STINT_DECL STINT_DETAIL_EXPORT dynamic_name_table& the_dynamic_name_table();

}  // namespace STINT_DETAIL_ABI_NAMESPACE

/// The table's entry for the slow-path table.
STINT_DECL const site* intern_dynamic_site_in_table(dynamic_site& where, const std::type_info& type);

}  // namespace stint::detail

#if defined(STINT_HEADER_ONLY)
#include "stint/recording/detail/impl/dynamic_name_table.ipp"
#endif
