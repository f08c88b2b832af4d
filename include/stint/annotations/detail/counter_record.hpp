#pragma once
// The record of a counter's sample: zero-length, at the thread's current depth (as an instant), with the
// value in an 8-byte payload whose header's aux says how to read it. 40 bytes, appended inline as an
// instant's 24 are; a new session or a full chunk goes to append_record_payload.

#include <atomic>       // std::memory_order
#include <cstddef>      // std::size_t, std::byte
#include <cstdint>      // std::uint64_t, std::uint32_t, std::int64_t, INT64_MAX
#include <cstring>      // std::memcpy
#include <new>          // placement new
#include <type_traits>  // std::is_arithmetic_v, std::is_floating_point_v, std::is_unsigned_v

#include "stint/common/event_kind.hpp"
#include "stint/detail/export_macros.hpp"
#include "stint/recording/buffer.hpp"
#include "stint/recording/site.hpp"
#include "stint/recording/slow_path.hpp"
#include "stint/recording/ticks.hpp"

namespace stint::detail {

/// How a counter sample's 8 bytes read: the payload header's aux.
inline constexpr std::uint32_t counter_integer = 0;  ///< a std::int64_t
inline constexpr std::uint32_t counter_real = 1;     ///< a double

/// A value as a counter record holds it.
struct encoded_counter {
    std::uint64_t bits;
    std::uint32_t encoding;
};

/// Whether a counter may hold values of T: integers (bool included) and floating-point numbers.
template <class T>
inline constexpr bool is_counter_value = std::is_arithmetic_v<T>;

/// A double's bits (std::bit_cast without <bit>: this header is the annotation header's).
STINT_DETAIL_ALWAYS_INLINE std::uint64_t bits_of(double value) noexcept {
    std::uint64_t bits;
    std::memcpy(&bits, &value, sizeof(bits));
    return bits;
}

/// Integers become an int64 and floating-point numbers a double; an unsigned value above the int64 range
/// is kept as a double (exact up to 2^53) rather than wrapped to a negative number.
template <class T>
STINT_DETAIL_ALWAYS_INLINE encoded_counter encode_counter(T value) noexcept {
    static_assert(is_counter_value<T>, "stint: a counter's value must be an integer or a floating-point number");
    if constexpr (std::is_floating_point_v<T>) {
        return {bits_of(static_cast<double>(value)), counter_real};
    } else {
        if constexpr (std::is_unsigned_v<T> && sizeof(T) >= sizeof(std::int64_t)) {
            if (value > static_cast<T>(INT64_MAX)) [[unlikely]] {
                return {bits_of(static_cast<double>(value)), counter_real};
            }
        }
        return {static_cast<std::uint64_t>(static_cast<std::int64_t>(value)), counter_integer};
    }
}

/// Bytes a counter sample takes in a buffer: the record, the payload header and the value.
inline constexpr std::size_t counter_record_bytes = sizeof(record) + sizeof(payload_header) + 8;

/// Appends a sample of the counter `where` (a payload_kind::counter site) for the session `state`, now.
STINT_DETAIL_ALWAYS_INLINE void append_counter_record(const site* where, std::uint32_t state,
                                                      encoded_counter value) noexcept {
    const std::uint64_t now = read_ticks();
    thread_buffer& buffer = tls_buffer;
    std::byte* at = buffer.cursor;
    if (buffer.state != state || static_cast<std::size_t>(buffer.limit - at) < counter_record_bytes) [[unlikely]] {
        append_record_payload(where, buffer.depth, now, now, state, value.encoding,
                              payload_bytes{&value.bits, sizeof value.bits});
        return;
    }
    ::new (at) record{where, buffer.depth, now, now};
    const payload_header header{static_cast<std::uint32_t>(counter_record_bytes - sizeof(record)), value.encoding};
    std::memcpy(at + sizeof(record), &header, sizeof(header));
    std::memcpy(at + sizeof(record) + sizeof(header), &value.bits, sizeof(value.bits));
    buffer.cursor = at + counter_record_bytes;
    buffer.current->ring_mixed = true;  // a payload (recording/ring.hpp); the header line published writes
    // release: pairs with the acquire in drain_node(); the record's bytes are visible before its end.
    buffer.current->published.store(buffer.cursor, std::memory_order_release);
}

/// The site of a counter named at run time (a name that lives for the process), made once through the
/// installed slow path (recording/detail/named_site_table.hpp). Null when it cannot be made: the sample
/// is then counted as dropped on this thread (a session records, so a profiler installed the path).
STINT_DETAIL_COLD inline const site* intern_counter_site(const char* name, std::uint32_t state) noexcept {
    const slow_path* path = installed_slow_path.load(std::memory_order_acquire);
    if (path != nullptr) {
        try {
            return path->intern_named_site(name, event_kind::counter, false, false);
        } catch (...) {
            // out of memory: counted below
        }
    }
    thread_buffer& buffer = tls_buffer;
    if (buffer.node != nullptr && buffer.state == state) bump(buffer.node->dropped);
    return nullptr;
}

}  // namespace stint::detail
