#pragma once
// The error stint's tracking adapters throw when their allocator fails: a std::bad_alloc that says
// what it tried to allocate (torch's "Tried to allocate ..." message).

#include <cstddef>      // std::size_t
#include <cstdio>       // std::snprintf
#include <new>          // std::bad_alloc
#include <string_view>  // std::string_view

#include "stint/common/device.hpp"

namespace stint {

/// Thrown by tracking_allocator, tracking_resource and STINT_TRACK_GLOBAL_NEW when the allocator under
/// them fails, after an "[OutOfMemory]" event was recorded. Catch it as std::bad_alloc. Its text is
/// built without allocating (there may be no memory left).
///
///     catch (const stint::out_of_memory& e) { log(e.what()); }  // "stint: tried to allocate 4.00 GiB..."
class out_of_memory : public std::bad_alloc {
public:
    out_of_memory(std::size_t bytes_requested, device where, const char* by) noexcept
        : bytes_(bytes_requested), device_(where) {
        // snprintf, not fmt: a non-template body that named fmt would make every file that includes
        // stint.hpp instantiate fmt's formatting core (0.27 s with clang 14).
        const std::string_view type = device_type_name(where.type);
        const int type_size = static_cast<int>(type.size());
        char where_text[24] = {};
        if (where.index >= 0) {
            std::snprintf(where_text, sizeof(where_text), "%.*s:%d", type_size, type.data(), static_cast<int>(where.index));
        } else {
            std::snprintf(where_text, sizeof(where_text), "%.*s", type_size, type.data());
        }
        std::snprintf(text_, sizeof(text_),
                      "stint: tried to allocate %zu bytes (%.2f MiB) on %s through %s, and the allocator under it failed",
                      bytes_requested, static_cast<double>(bytes_requested) / 1048576.0, where_text, by);
    }
    [[nodiscard]] const char* what() const noexcept override { return text_; }
    [[nodiscard]] std::size_t bytes_requested() const noexcept { return bytes_; }
    [[nodiscard]] stint::device device() const noexcept { return device_; }

private:
    std::size_t bytes_;
    stint::device device_;
    char text_[192] = {};
};

}  // namespace stint
