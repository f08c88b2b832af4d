#pragma once
// The process's table of sites for names that live for the process (stint::begin_event with a
// `const char*`, stint::counter): one site per (name pointer, kind, inputs captured, flops), made the
// first time and never freed, so that each event is a plain record that points to it. The slow path of
// begin_event and of a counter's first sample, reached through the installed slow-path table
// (recording/slow_path.hpp), so that the annotation header needs none of this.

#include <cstddef>
#include <functional>
#include <mutex>
#include <string_view>
#include <unordered_map>

#include "stint/common/event_kind.hpp"
#include "stint/detail/export_macros.hpp"
#include "stint/recording/site.hpp"

namespace stint::detail {
inline namespace STINT_DETAIL_ABI_NAMESPACE {

/// Every site made for a process-lifetime name, by its address and kind. Process-wide and leaked, like
/// the registry: its sites must outlive every record and event.
class named_site_table {
public:
    const site& intern(const char* name, event_kind kind, bool inputs, bool flops) {
        std::lock_guard lock(mutex_);
        auto [it, added] = sites_.try_emplace(key{name, kind, inputs, flops}, nullptr);
        if (added) {
            try {
                const std::string_view text(name);
                // A counter's records carry its value (stint::counter); an op's, its inputs when captured.
                const payload_kind payload = kind == event_kind::counter ? payload_kind::counter
                                             : inputs                    ? payload_kind::inputs
                                                                         : payload_kind::none;
                it->second = new site{text, kind, payload, {}, flops ? flop_formula(text) : flop_formula()};
            } catch (...) {
                sites_.erase(it);
                throw;
            }
        }
        return *it->second;
    }

private:
    struct key {
        const char* name;
        event_kind kind;
        bool inputs;
        bool flops;
        bool operator==(const key&) const = default;
    };
    struct key_hash {
        std::size_t operator()(const key& k) const noexcept {
            return std::hash<const void*>{}(k.name) * 31 + static_cast<std::size_t>(k.kind) * 4 +
                   (k.inputs ? 2U : 0U) + (k.flops ? 1U : 0U);
        }
    };
    std::mutex mutex_;
    std::unordered_map<key, const site*, key_hash> sites_;
};

STINT_DETAIL_EXPORT inline named_site_table& the_named_site_table() {
    static named_site_table* const instance = new named_site_table();
    return *instance;
}

}  // namespace STINT_DETAIL_ABI_NAMESPACE

/// The table's entry for the slow-path table.
inline const site* intern_named_site_in_table(const char* name, event_kind kind, bool inputs, bool flops) {
    return &the_named_site_table().intern(name, kind, inputs, flops);
}

}  // namespace stint::detail
