#pragma once
// The protobuf writer's bodies: UTF-8 repair and proto_message's fields.
#include "stint/export/detail/protobuf.hpp"

#include <cstddef>      // std::size_t
#include <string>       // std::string
#include <string_view>  // std::string_view

#include "stint/common/utf8.hpp"

namespace stint::detail::protobuf {

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

proto_message& proto_message::uint(std::uint32_t field, std::uint64_t v) {
    char bytes[20];
    bytes_.append(bytes, static_cast<std::size_t>(put_uint(bytes, field, v) - bytes));
    return *this;
}

proto_message& proto_message::fixed64(std::uint32_t field, std::uint64_t v) {
    char bytes[20];
    bytes_.append(bytes, static_cast<std::size_t>(put_fixed64(bytes, field, v) - bytes));
    return *this;
}

proto_message& proto_message::string(std::uint32_t field, std::string_view text) {
    std::string valid;
    append_utf8(valid, text);
    return bytes(field, valid);
}

proto_message& proto_message::bytes(std::uint32_t field, std::string_view data) {
    char head[20];
    bytes_.append(head, static_cast<std::size_t>(put_length(head, field, data.size()) - head));
    bytes_.append(data);
    return *this;
}


}  // namespace stint::detail::protobuf
