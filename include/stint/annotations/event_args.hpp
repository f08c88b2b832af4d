#pragma once
// stint::add_args: named arguments (integers, reals, bools, strings) on the innermost event open on the
// calling thread, as a framework's "Sequence number" and "Fwd thread id" that link its forward and
// backward ops. One record holds them all; the drain gives it to the event around it, as it gives
// record_outputs' record to its op, so the event's own 24-byte record stays as it is.

#if __has_include(<bits/stl_algobase.h>)
#include <bits/stl_algobase.h>  // libstdc++'s std::min alone: <algorithm> costs every file more
#else
#include <algorithm>  // std::min
#endif
#include <concepts>          // std::integral, std::signed_integral, std::floating_point, std::same_as
#include <cstddef>           // std::size_t, std::byte
#include <cstdint>           // std::uint32_t, std::uint64_t, std::uint8_t, std::uint16_t
#include <cstring>           // std::memcpy
#include <initializer_list>  // std::initializer_list
#include <span>              // std::span
#include <string_view>       // std::string_view

#include "stint/common/arg_type.hpp"
#include "stint/detail/platform.hpp"
#include "stint/recording/buffer.hpp"
#include "stint/recording/site.hpp"
#include "stint/recording/slow_path.hpp"
#include "stint/recording/state.hpp"
#include "stint/recording/ticks.hpp"

namespace stint {

/// One named argument for add_args. The name and a string value are copied into the record: neither
/// needs to outlive the call.
class arg {
public:
    template <std::integral T>
    constexpr arg(std::string_view name, T value) noexcept : name_(name) {
        if constexpr (std::same_as<T, bool>) {
            type_ = arg_type::boolean;
            bits_ = value ? 1 : 0;
        } else if constexpr (std::signed_integral<T>) {
            type_ = arg_type::integer;
            bits_ = static_cast<std::uint64_t>(static_cast<std::int64_t>(value));
        } else {
            type_ = arg_type::unsigned_integer;
            bits_ = static_cast<std::uint64_t>(value);
        }
    }
    template <std::floating_point T>
    arg(std::string_view name, T value) noexcept : name_(name), type_(arg_type::real) {
        const double real = static_cast<double>(value);
        std::memcpy(&bits_, &real, sizeof real);
    }
    constexpr arg(std::string_view name, std::string_view value) noexcept
        : name_(name), type_(arg_type::string), text_(value) {}
    constexpr arg(std::string_view name, const char* value) noexcept
        : arg(name, std::string_view(value != nullptr ? value : "")) {}

    [[nodiscard]] constexpr std::string_view name() const noexcept { return name_; }
    [[nodiscard]] constexpr arg_type type() const noexcept { return type_; }
    /// The number's bits: an integer as int64, an unsigned one as uint64, a real as a double's bits.
    [[nodiscard]] constexpr std::uint64_t bits() const noexcept { return bits_; }
    [[nodiscard]] constexpr std::string_view text() const noexcept { return text_; }

private:
    std::string_view name_;
    arg_type type_ = arg_type::integer;
    std::uint64_t bits_ = 0;
    std::string_view text_;
};

namespace detail {

// The record's payload: per argument a 4-byte head (type, name length, value length: 8 for a
// number), the name's bytes, the value's bytes. The header's aux is the count, with args_cut set
// when an argument did not fit (names past 255 bytes and strings past 65,535 are cut and flagged too).
inline constexpr std::uint32_t args_cut = 1U << 31;
inline constexpr std::size_t max_args_bytes = 1024;
inline constexpr std::size_t max_arg_name_bytes = 255;

struct arg_head {
    std::uint8_t type;
    std::uint8_t name_size;
    std::uint16_t value_size;
};
static_assert(sizeof(arg_head) == 4);

/// Encodes `args[0, size)` into `out` (max_args_bytes); returns the bytes used and sets `aux`. (Pointer and
/// size, not std::span: see payload_bytes.)
inline std::size_t encode_args(const arg* args, std::size_t size, std::byte* out, std::uint32_t& aux) noexcept {
    std::size_t used = 0;
    std::uint32_t count = 0;
    bool cut = false;
    for (const arg* end = args + size; args != end; ++args) {
        const arg& a = *args;
        const std::size_t name_size = std::min(a.name().size(), max_arg_name_bytes);
        const bool text = a.type() == arg_type::string;
        std::size_t value_size = text ? std::min<std::size_t>(a.text().size(), 65535) : 8;
        cut = cut || name_size < a.name().size() || (text && value_size < a.text().size());
        const std::size_t room = max_args_bytes - used;
        if (sizeof(arg_head) + name_size + (text ? 0 : 8) > room) {  // no room for even its head and number
            cut = true;
            break;
        }
        if (sizeof(arg_head) + name_size + value_size > room) {  // a string cut to the room left
            value_size = room - sizeof(arg_head) - name_size;
            cut = true;
        }
        const arg_head head{static_cast<std::uint8_t>(a.type()), static_cast<std::uint8_t>(name_size),
                            static_cast<std::uint16_t>(value_size)};
        std::memcpy(out + used, &head, sizeof head);
        used += sizeof head;
        if (name_size != 0) std::memcpy(out + used, a.name().data(), name_size);
        used += name_size;
        if (text) {
            if (value_size != 0) std::memcpy(out + used, a.text().data(), value_size);
        } else {
            const std::uint64_t bits = a.bits();
            std::memcpy(out + used, &bits, 8);
        }
        used += value_size;
        ++count;
    }
    aux = count | (cut ? args_cut : 0U);
    return used;
}

/// Appends the args record at `depth` (one more than its event's): the drain gives it to the first later
/// scope record of depth one less. `ticks` only place it in time (any tick inside its event).
STINT_DETAIL_NOINLINE inline void append_args_at(std::uint32_t state, std::uint32_t depth, std::uint64_t ticks,
                                          const arg* args, std::size_t size) noexcept {
    alignas(8) std::byte buffer[max_args_bytes];
    std::uint32_t aux = 0;
    const std::size_t used = encode_args(args, size, buffer, aux);
    append_record_payload(&args_site, depth, ticks, ticks, state, aux, payload_bytes{buffer, used});
}

STINT_DETAIL_NOINLINE inline void append_args(std::uint32_t state, const arg* args, std::size_t size) noexcept {
    const std::uint32_t depth = current_depth();
    if (depth == 0) return;  // no event open on this thread: nothing to attach them to
    append_args_at(state, depth, read_ticks(), args, size);
}

}  // namespace detail

/// Adds `args` to the innermost event open on this thread (a begin_event token, an op, a scope, a
/// module; event_token::add_args names its event instead): the Chrome trace shows them in the event's "args", the Perfetto trace as its debug
/// annotations, the event list in event_args::named_args; the execution trace takes "Sequence number"
/// as a node's seq_id and "Fwd thread id" as its fw_tid, as torch's does. Call it while that event is the
/// innermost one (right after beginning it). Costs one relaxed load unless a session records; outside
/// every event it does nothing. A name given twice on one event keeps its last value. At most 1 KiB
/// of names and values per call: what does not fit is left out, and the event says so ("Args
/// truncated").
///
///     auto op = stint::begin_event(stint::event_kind::cpu_op, fn.name());
///     stint::add_args({{"Sequence number", fn.seqNr()}, {"Fwd thread id", fn.forwardThreadId()}});
inline void add_args(std::initializer_list<arg> args) noexcept {
    const std::uint32_t state = detail::recording.value.load(std::memory_order_relaxed);
    if (!detail::is_recording_state(state)) return;
    detail::append_args(state, args.begin(), args.size());
}

/// add_args for a list built at run time.
inline void add_args(std::span<const arg> args) noexcept {
    const std::uint32_t state = detail::recording.value.load(std::memory_order_relaxed);
    if (!detail::is_recording_state(state)) return;
    detail::append_args(state, args.data(), args.size());
}

}  // namespace stint
