#pragma once
// The always-on counters behind STINT_REGION: one per region site, linked once into its kind's list,
// updated with two relaxed atomic adds per region, read by stint::region_counters<Kind>().

#include <array>        // std::array
#include <atomic>       // std::atomic, std::memory_order
#include <cstddef>      // std::size_t
#include <cstdint>      // std::uint64_t
#include <string_view>  // std::string_view

#include "stint/detail/export_macros.hpp"
#include "stint/recording/site.hpp"

namespace stint::detail {
inline namespace STINT_DETAIL_ABI_NAMESPACE {

/// The counters of one STINT_REGION site. Aligned to a cache line so that two regions running on two
/// threads never write one line (the same region from two threads does: regions are meant for
/// coarse phases, a compile or a cache lookup, not inner loops).
struct alignas(64) region_counter {
    const site* where;                      ///< the event: "name (label)"
    std::string_view name;                  ///< the name given to STINT_REGION
    std::atomic<region_counter*>* list;     ///< head of the kind's list
    std::atomic<std::uint64_t> count{0};    ///< regions ended
    std::atomic<std::uint64_t> ticks{0};    ///< their total duration
    std::atomic<bool> linked{false};        ///< in the kind's list (or being linked by one thread)
    region_counter* next = nullptr;         ///< written once, before the counter is published

    /// Adds one region of `elapsed` ticks. Relaxed: the counters order nothing else, and a reader
    /// may see a region's count before its time (documented on region_counters()).
    void add(std::uint64_t elapsed) noexcept {
        count.fetch_add(1, std::memory_order_relaxed);
        ticks.fetch_add(elapsed, std::memory_order_relaxed);
    }
};

/// The counters of every site of one region kind, a lock-free list that only grows. Process-wide (a
/// kind defined with default visibility has one list even across shared objects).
template <class Kind>
struct region_list {
    STINT_DETAIL_EXPORT static inline constinit std::atomic<region_counter*> head{nullptr};
};

/// Links a counter into its kind's list, once: the first region of each site comes here.
STINT_DETAIL_COLD inline void link_region(region_counter& counter) noexcept {
    // relaxed: the exchange only elects the thread that links; the list's own release publishes.
    if (counter.linked.exchange(true, std::memory_order_relaxed)) return;
    region_counter* head = counter.list->load(std::memory_order_relaxed);
    do {
        counter.next = head;
        // release: pairs with the acquire in read_region_list(); `next` and the site are visible.
    } while (!counter.list->compare_exchange_weak(head, &counter, std::memory_order_release,
                                                  std::memory_order_relaxed));
}

/// "name (label)" of a region, built at compile time from a literal name: `text` holds it, the
/// first `name_size` bytes are the name alone.
template <std::size_t Size>
struct region_name {
    std::array<char, Size> text{};
    std::size_t name_size = 0;

    [[nodiscard]] constexpr std::string_view event_name() const noexcept { return {text.data(), Size}; }
    [[nodiscard]] constexpr std::string_view name() const noexcept { return {text.data(), name_size}; }
};

template <class Kind, std::size_t N>
consteval auto make_region_name(const char (&name)[N]) {
    constexpr std::string_view label = Kind::label;
    region_name<N - 1 + label.size() + 3> out;
    std::size_t at = 0;
    for (std::size_t i = 0; i + 1 < N; ++i) out.text[at++] = name[i];
    out.name_size = at;
    out.text[at++] = ' ';
    out.text[at++] = '(';
    for (const char c : label) out.text[at++] = c;
    out.text[at++] = ')';
    return out;
}

/// Named after the rule so that the rejected type shows in the compiler's diagnostic.
template <class T>
struct region_name_must_be_a_literal {
    static constexpr bool value = false;
};

/// Anything but a string literal: a compile error that says so.
template <class Kind, class T>
consteval auto make_region_name(const T&) {
    static_assert(region_name_must_be_a_literal<T>::value,
                  "stint: STINT_REGION needs a string literal name (its event name is built at compile time); "
                  "for a name built at run time use stint::record_function");
    return region_name<1>{};
}

}  // namespace STINT_DETAIL_ABI_NAMESPACE
}  // namespace stint::detail
