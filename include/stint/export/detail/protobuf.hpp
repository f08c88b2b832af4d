#pragma once
// The protobuf wire format, as much of it as the Perfetto writer needs: varints and length-delimited
// fields. A field is a key (field number << 3 | wire type) then its value; a nested message or string
// is a length then its bytes, so a message's size is known before it is written (computed for the
// per-event packets, built in a proto_message for the rare ones).

#include <bit>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "stint/export/utf8.hpp"

namespace stint::detail::protobuf {

enum class wire : std::uint8_t { varint = 0, fixed64 = 1, length = 2 };

/// Bytes of `v` as a varint: 7 bits a byte, 1 to 10.
constexpr std::size_t varint_size(std::uint64_t v) noexcept {
    return 1 + static_cast<std::size_t>(std::bit_width(v | 1) - 1) / 7;
}

constexpr std::uint64_t key(std::uint32_t field, wire type) noexcept {
    return (std::uint64_t{field} << 3) | static_cast<std::uint64_t>(type);
}

template <class = void>
char* put_varint(char* o, std::uint64_t v) noexcept {
    while (v >= 0x80) {
        *o++ = static_cast<char>(v | 0x80);
        v >>= 7;
    }
    *o++ = static_cast<char>(v);
    return o;
}

/// A varint field; int32/int64 values are written as their 64-bit two's complement (10 bytes when
/// negative), as protobuf does.
template <class = void>
char* put_uint(char* o, std::uint32_t field, std::uint64_t v) noexcept {
    return put_varint(put_varint(o, key(field, wire::varint)), v);
}
constexpr std::size_t uint_size(std::uint32_t field, std::uint64_t v) noexcept {
    return varint_size(key(field, wire::varint)) + varint_size(v);
}

/// A fixed64 field (little-endian, as protobuf's wire format is).
template <class = void>
char* put_fixed64(char* o, std::uint32_t field, std::uint64_t v) noexcept {
    o = put_varint(o, key(field, wire::fixed64));
    for (int byte = 0; byte < 8; ++byte) *o++ = static_cast<char>(v >> (8 * byte));
    return o;
}

/// The key and length of a length-delimited field; its `size` bytes follow.
template <class = void>
char* put_length(char* o, std::uint32_t field, std::size_t size) noexcept {
    return put_varint(put_varint(o, key(field, wire::length)), size);
}
constexpr std::size_t length_size(std::uint32_t field, std::size_t size) noexcept {
    return varint_size(key(field, wire::length)) + varint_size(size) + size;
}

/// Appends `text` with each ill-formed UTF-8 subpart replaced by U+FFFD (protobuf strings must be
/// UTF-8; the JSON writer replaces the same way, so a name reads the same in both traces).
template <class = void>
void append_utf8(std::string& out, std::string_view text) {
    const auto* p = reinterpret_cast<const unsigned char*>(text.data());
    const auto* end = p + text.size();
    while (p < end) {
        const auto* run = p;
        while (p < end && *p < 0x80) ++p;
        out.append(reinterpret_cast<const char*>(run), static_cast<std::size_t>(p - run));
        if (p == end) break;
        const int length = utf8_sequence(p, end);
        if (length > 0) {
            out.append(reinterpret_cast<const char*>(p), static_cast<std::size_t>(length));
            p += length;
        } else {
            out.append("\xEF\xBF\xBD");
            p += -length;
        }
    }
}

template <class = void>
class basic_proto_message;
/// basic_proto_message's one form (a template only so that a file that does not use it does not compile it).
using proto_message = basic_proto_message<>;

/// A message built field by field, for the packets written once per trace, track or name.
///     proto_message thread;
///     thread.uint(1, pid).uint(2, tid).string(5, "main");
///     descriptor.message(4, thread);
template <class>
class basic_proto_message {
public:
    basic_proto_message& uint(std::uint32_t field, std::uint64_t v) {
        char bytes[20];
        bytes_.append(bytes, static_cast<std::size_t>(put_uint(bytes, field, v) - bytes));
        return *this;
    }
    basic_proto_message& int64(std::uint32_t field, std::int64_t v) { return uint(field, static_cast<std::uint64_t>(v)); }
    basic_proto_message& fixed64(std::uint32_t field, std::uint64_t v) {
        char bytes[20];
        bytes_.append(bytes, static_cast<std::size_t>(put_fixed64(bytes, field, v) - bytes));
        return *this;
    }
    /// A string field, made valid UTF-8.
    basic_proto_message& string(std::uint32_t field, std::string_view text) {
        std::string valid;
        append_utf8(valid, text);
        return bytes(field, valid);
    }
    basic_proto_message& bytes(std::uint32_t field, std::string_view data) {
        char head[20];
        bytes_.append(head, static_cast<std::size_t>(put_length(head, field, data.size()) - head));
        bytes_.append(data);
        return *this;
    }
    basic_proto_message& message(std::uint32_t field, const basic_proto_message& child) { return bytes(field, child.bytes_); }

    [[nodiscard]] std::string_view view() const noexcept { return bytes_; }
    [[nodiscard]] bool empty() const noexcept { return bytes_.empty(); }
    void clear() noexcept { bytes_.clear(); }

private:
    std::string bytes_;
};

}  // namespace stint::detail::protobuf
