#pragma once
// The bodies of recording/detail/named_site_table.hpp: the process's table of sites named at run time.

#include "stint/recording/detail/named_site_table.hpp"

#include <utility>  // std::move

namespace stint::detail {

inline namespace STINT_DETAIL_ABI_NAMESPACE {

const site& named_site_table::intern(const char* name, event_kind kind, bool inputs, bool flops) {
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

const site* named_site_table::intern_text(std::string_view name, event_kind kind, bool inputs, bool flops) {
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

const site* named_site_table::make_site(std::string_view text, event_kind kind, bool inputs, bool flops) {
    // A counter's records carry its value (stint::counter); an op's, its inputs when captured.
    const payload_kind payload = kind == event_kind::counter ? payload_kind::counter
                                 : inputs                    ? payload_kind::inputs
                                                             : payload_kind::none;
    return new site{text, kind, payload, {}, flops ? flop_formula(text) : flop_formula()};
}

named_site_table& the_named_site_table() {
    static named_site_table* const instance = new named_site_table();
    return *instance;
}

}  // namespace STINT_DETAIL_ABI_NAMESPACE

const site* intern_named_site_in_table(const char* name, event_kind kind, bool inputs, bool flops) {
    return &the_named_site_table().intern(name, kind, inputs, flops);
}
const site* intern_text_site_in_table(std::string_view name, event_kind kind, bool inputs, bool flops) {
    return the_named_site_table().intern_text(name, kind, inputs, flops);
}

}  // namespace stint::detail
