#pragma once
// The process's table of sites for names given at run time (stint::begin_event, stint::counter): one
// site per (name, kind, inputs captured, flops), made the first time and never freed, so that each event
// is a plain record that points to it. A `const char*` that lives for the process is keyed by its
// address and pointed to; a std::string_view is keyed by its text, copied once into the table (a bounded
// number of texts: a program that makes a new name per event must not grow the table without end). The
// slow path of begin_event and of a counter's first sample, reached through the installed slow-path
// table (recording/slow_path.hpp), so that the annotation header needs none of this.

#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "stint/common/event_kind.hpp"
#include "stint/detail/deferred.hpp"
#include "stint/detail/export_macros.hpp"
#include "stint/recording/site.hpp"

namespace stint::detail {

/// How many distinct texts the process interns; past them, begin_event copies the name into each record.
inline constexpr std::size_t max_interned_texts = 16384;

inline namespace STINT_DETAIL_ABI_NAMESPACE {

template <class = void>
class basic_named_site_table;
/// basic_named_site_table's one form (a template, like the registry: compiled only where a profiler is).
using named_site_table = basic_named_site_table<>;

/// Every site made for a name given at run time. Process-wide and leaked, like the registry: its sites
/// (and the texts they point to) must outlive every record and event.
template <class Unused>
class basic_named_site_table {
public:
    const site& intern(const char* name, event_kind kind, bool inputs, bool flops) {
        std::lock_guard lock(mutex_);
        auto [it, added] = by_address_.try_emplace(key<const char*>{name, kind, inputs, flops}, nullptr);
        if (added) {
            try {
                it->second = make_site(std::string_view(name), kind, inputs, flops);
            } catch (...) {
                by_address_.erase(it);
                throw;
            }
        }
        return *it->second;
    }

    /// Null when max_interned_texts are held already.
    const site* intern_text(std::string_view name, event_kind kind, bool inputs, bool flops) {
        std::lock_guard lock(mutex_);
        const auto found = by_text_.find(key<std::string_view>{name, kind, inputs, flops});
        if (found != by_text_.end()) return found->second;
        if (texts_.size() >= max_interned_texts) return nullptr;
        texts_.reserve(texts_.size() + 1);  // so that the push below cannot throw
        auto text = std::make_unique<const std::string>(name);
        const site* made = make_site(*text, kind, inputs, flops);
        try {
            by_text_.emplace(key<std::string_view>{*text, kind, inputs, flops}, made);
        } catch (...) {
            delete made;
            throw;
        }
        texts_.push_back(std::move(text));
        return made;
    }

private:
    static const site* make_site(std::string_view text, event_kind kind, bool inputs, bool flops) {
        // A counter's records carry its value (stint::counter); an op's, its inputs when captured.
        const payload_kind payload = kind == event_kind::counter ? payload_kind::counter
                                     : inputs                    ? payload_kind::inputs
                                                                 : payload_kind::none;
        return new site{text, kind, payload, {}, flops ? flop_formula(text) : flop_formula()};
    }

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
    deferred_t<std::vector<std::unique_ptr<const std::string>>, Unused> texts_;
};

template <class = void>
STINT_DETAIL_EXPORT named_site_table& the_named_site_table() {
    static named_site_table* const instance = new named_site_table();
    return *instance;
}

}  // namespace STINT_DETAIL_ABI_NAMESPACE

/// The table's entries for the slow-path table.
template <class = void>
const site* intern_named_site_in_table(const char* name, event_kind kind, bool inputs, bool flops) {
    return &the_named_site_table().intern(name, kind, inputs, flops);
}
template <class = void>
const site* intern_text_site_in_table(std::string_view name, event_kind kind, bool inputs, bool flops) {
    return the_named_site_table().intern_text(name, kind, inputs, flops);
}

}  // namespace stint::detail
