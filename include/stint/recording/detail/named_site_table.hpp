#pragma once
// The process's table of sites for names given at run time (stint::begin_event, stint::counter): one
// site per (name, kind, inputs captured, flops), made the first time and never freed, so that each event
// is a plain record that points to it. A `const char*` that lives for the process is keyed by its
// address and pointed to; a std::string_view is keyed by its text, copied once into the table (a bounded
// number of texts: a program that makes a new name per event must not grow the table without end). The
// slow path of begin_event and of a counter's first sample, reached through the installed slow-path
// table (recording/slow_path.hpp), so that the annotation header needs none of this.

#include <cstddef>  // std::size_t
#include <functional>  // std::hash
#include <memory>  // std::unique_ptr
#include <mutex>  // std::mutex
#include <string>  // std::string
#include <string_view>  // std::string_view
#include <unordered_map>  // std::unordered_map
#include <vector>  // std::vector

#include "stint/common/event_kind.hpp"
#include "stint/detail/export_macros.hpp"
#include "stint/detail/separate_compilation.hpp"
#include "stint/recording/site.hpp"

namespace stint::detail {

/// How many distinct texts the process interns; past them, begin_event copies the name into each record.
inline constexpr std::size_t max_interned_texts = 16384;

inline namespace STINT_DETAIL_ABI_NAMESPACE {

/// Every site made for a name given at run time. Process-wide and leaked, like the registry: its sites
/// (and the texts they point to) must outlive every record and event.
class named_site_table {
public:
    STINT_DECL const site& intern(const char* name, event_kind kind, bool inputs, bool flops);

    /// Null when max_interned_texts are held already.
    STINT_DECL const site* intern_text(std::string_view name, event_kind kind, bool inputs, bool flops);

private:
    STINT_DECL static const site* make_site(std::string_view text, event_kind kind, bool inputs, bool flops);

    template <class Name>
    struct key {
        Name name;
        event_kind kind;
        bool inputs;
        bool flops;
        bool operator==(const key&) const = default;
    };
    struct key_hash {
        template <class Name>
        std::size_t operator()(const key<Name>& k) const noexcept {
            return std::hash<Name>{}(k.name) * 31 + static_cast<std::size_t>(k.kind) * 4 + (k.inputs ? 2U : 0U) +
                   (k.flops ? 1U : 0U);
        }
    };
    std::mutex mutex_;
    std::unordered_map<key<const char*>, const site*, key_hash> by_address_;
    std::unordered_map<key<std::string_view>, const site*, key_hash> by_text_;  // views of texts_
    std::vector<std::unique_ptr<const std::string>> texts_;
};

STINT_DECL STINT_DETAIL_EXPORT named_site_table& the_named_site_table();

}  // namespace STINT_DETAIL_ABI_NAMESPACE

/// The table's entries for the slow-path table.
STINT_DECL const site* intern_named_site_in_table(const char* name, event_kind kind, bool inputs, bool flops);
STINT_DECL const site* intern_text_site_in_table(std::string_view name, event_kind kind, bool inputs, bool flops);

}  // namespace stint::detail

#if defined(STINT_HEADER_ONLY)
#include "stint/recording/detail/impl/named_site_table.ipp"
#endif
