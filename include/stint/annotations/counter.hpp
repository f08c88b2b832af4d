#pragma once
// Counters: a value (a queue's depth, a loss, bytes in flight) sampled at the current time while a
// session records. Each sample is an event of kind `counter` at the thread's current depth, with its
// value in the record; the traces draw one counter track per name in the process (Chrome's "ph": "C",
// a Perfetto counter track). One relaxed load when nothing records; an instant's work, 16 bytes more,
// when a session does.

#include <atomic>       // std::atomic, std::memory_order
#include <cstdint>      // std::uint32_t
#include <string_view>  // std::string_view

#include "stint/annotations/detail/counter_record.hpp"
#include "stint/common/event_kind.hpp"
#include "stint/config.hpp"
#include "stint/recording/site.hpp"
#include "stint/recording/state.hpp"

namespace stint::detail {

/// Samples the counter site `where` with the value `value_of()` returns, evaluated only while a session
/// records (STINT_COUNTER).
template <class ValueOf>
STINT_DETAIL_ALWAYS_INLINE void sample_counter(const site& where, ValueOf&& value_of) {
    const std::uint32_t state = recording.value.load(std::memory_order_relaxed);
    if (is_recording_state(state)) append_counter_record(&where, state, encode_counter(value_of()));
}

}  // namespace stint::detail

namespace stint {

/// A named counter for a hot loop, of integer or floating-point values: set() records the value now,
/// while a session records. Its name must live for the process (a string literal): its samples point
/// to it, and all counters of one name, on any thread, draw one track.
///
///     stint::counter<std::int64_t> depth{"queue depth"};
///     depth.set(static_cast<std::int64_t>(queue.size()));
///
/// The first sample in the process makes the counter's site (once, under a lock); later ones cost what
/// STINT_COUNTER's do. One counter may be set from several threads.
template <class T>
class counter {
    static_assert(detail::is_counter_value<T>,
                  "stint: stint::counter<T> needs an integer or floating-point T (std::int64_t, double, ...)");

public:
    explicit counter(const char* name) noexcept : name_(name) {}
    counter(const counter& other) noexcept : name_(other.name_), site_(other.site_.load(std::memory_order_acquire)) {}
    counter& operator=(const counter& other) noexcept {
        name_ = other.name_;
        site_.store(other.site_.load(std::memory_order_acquire), std::memory_order_release);
        return *this;
    }

    /// Records `value` at the current time; one relaxed load when no session records.
    STINT_DETAIL_ALWAYS_INLINE void set(T value) noexcept {
        const std::uint32_t state = detail::recording.value.load(std::memory_order_relaxed);
        if (!detail::is_recording_state(state)) return;
        // acquire: pairs with the release below, on the thread that made the site.
        const detail::site* where = site_.load(std::memory_order_acquire);
        if (where == nullptr) [[unlikely]] {
            where = detail::intern_counter_site(name_, state);
            if (where == nullptr) return;  // counted as dropped
            site_.store(where, std::memory_order_release);
        }
        detail::append_counter_record(where, state, detail::encode_counter(value));
    }

    [[nodiscard]] std::string_view name() const noexcept { return name_; }

private:
    const char* name_;
    std::atomic<const detail::site*> site_{nullptr};  // the interned site, once a sample made it
};

}  // namespace stint

#if defined(STINT_DISABLE)
#include "stint/detail/compiled_out.hpp"  // every macro compiled out, in one place
#else
/// Records the counter `name` (a string literal) at `value` (an integer or floating-point number) now.
/// `value` is evaluated only while a session records.
///
///     STINT_COUNTER("queue depth", queue.size());
///     STINT_COUNTER("loss", loss);
#define STINT_COUNTER(name, value)                                                                           \
    do {                                                                                                     \
        static_assert(__builtin_constant_p(::std::string_view(name).size()),                                 \
                      "stint: STINT_COUNTER needs a name known at compile time (a string literal); for a "   \
                      "counter named at run time use stint::counter");                                       \
        static constexpr ::stint::detail::site stint_counter_site_{                                          \
            name, ::stint::event_kind::counter, ::stint::detail::payload_kind::counter,                      \
            ::stint::detail::source_location{__builtin_FILE(), __builtin_FUNCTION(), __builtin_LINE()}};     \
        if constexpr (STINT_CONFIG::enabled)                                                                 \
            ::stint::detail::sample_counter(stint_counter_site_, [&] { return (value); });                   \
    } while (false)
#endif
