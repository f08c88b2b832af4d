#pragma once
// The protobuf wire format, as much of it as the Perfetto writer needs: varints and length-delimited
// fields. A field is a key (field number << 3 | wire type) then its value; a nested message or string
// is a length then its bytes, so a message's size is known before it is written (computed for the
// per-event packets, built in a proto_message for the rare ones).

#include <bit>          // std::bit_width
#include <cstddef>      // std::size_t
#include <cstdint>      // std::uint64_t
#include <string>       // std::string
#include <string_view>  // std::string_view

#include "stint/detail/separate_compilation.hpp"

namespace stint::detail::protobuf {

enum class wire : std::uint8_t { varint = 0, fixed64 = 1, length = 2 };

/// Bytes of `v` as a varint: 7 bits a byte, 1 to 10.
constexpr std::size_t varint_size(std::uint64_t v) noexcept {
    return 1 + static_cast<std::size_t>(std::bit_width(v | 1) - 1) / 7;
}

constexpr std::uint64_t key(std::uint32_t field, wire type) noexcept {
    return (std::uint64_t{field} << 3) | static_cast<std::uint64_t>(type);
}

inline char* put_varint(char* o, std::uint64_t v) noexcept {
    while (v >= 0x80) {
        *o++ = static_cast<char>(v | 0x80);
        v >>= 7;
    }
    *o++ = static_cast<char>(v);
    return o;
}

/// A varint field; int32/int64 values are written as their 64-bit two's complement (10 bytes when
/// negative), as protobuf does.
inline char* put_uint(char* o, std::uint32_t field, std::uint64_t v) noexcept {
    return put_varint(put_varint(o, key(field, wire::varint)), v);
}
constexpr std::size_t uint_size(std::uint32_t field, std::uint64_t v) noexcept {
    return varint_size(key(field, wire::varint)) + varint_size(v);
}

/// A fixed64 field (little-endian, as protobuf's wire format is).
inline char* put_fixed64(char* o, std::uint32_t field, std::uint64_t v) noexcept {
    o = put_varint(o, key(field, wire::fixed64));
    for (int byte = 0; byte < 8; ++byte) *o++ = static_cast<char>(v >> (8 * byte));
    return o;
}

/// The key and length of a length-delimited field; its `size` bytes follow.
inline char* put_length(char* o, std::uint32_t field, std::size_t size) noexcept {
    return put_varint(put_varint(o, key(field, wire::length)), size);
}
constexpr std::size_t length_size(std::uint32_t field, std::size_t size) noexcept {
    return varint_size(key(field, wire::length)) + varint_size(size) + size;
}

/// Appends `text` with each ill-formed UTF-8 subpart replaced by U+FFFD (protobuf strings must be
/// UTF-8; the JSON writer replaces the same way, so a name reads the same in both traces).
STINT_DECL void append_utf8(std::string& out, std::string_view text);

/// A message built field by field, for the packets written once per trace, track or name.
///     proto_message thread;
///     thread.uint(1, pid).uint(2, tid).string(5, "main");
///     descriptor.message(4, thread);
class proto_message {
public:
    STINT_DECL proto_message& uint(std::uint32_t field, std::uint64_t v);
    proto_message& int64(std::uint32_t field, std::int64_t v) { return uint(field, static_cast<std::uint64_t>(v)); }
    STINT_DECL proto_message& fixed64(std::uint32_t field, std::uint64_t v);
    /// A string field, made valid UTF-8.
    STINT_DECL proto_message& string(std::uint32_t field, std::string_view text);
    STINT_DECL proto_message& bytes(std::uint32_t field, std::string_view data);
    proto_message& message(std::uint32_t field, const proto_message& child) { return bytes(field, child.bytes_); }

    [[nodiscard]] std::string_view view() const noexcept { return bytes_; }
    [[nodiscard]] bool empty() const noexcept { return bytes_.empty(); }
    void clear() noexcept { bytes_.clear(); }

private:
    std::string bytes_;
};

}  // namespace stint::detail::protobuf

#if defined(STINT_HEADER_ONLY)
#include "stint/export/detail/impl/protobuf.ipp"
#endif
