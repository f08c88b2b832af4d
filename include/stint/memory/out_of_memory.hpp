#pragma once
// The error stint's tracking adapters throw when their allocator fails: a std::bad_alloc that says
// what it tried to allocate (torch's "Tried to allocate ..." message).

#include <cstddef>
#include <new>

#include <fmt/format.h>

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
        char where_text[24] = {};
        const auto place = where.index >= 0
                               ? fmt::format_to_n(where_text, sizeof(where_text) - 1, "{}:{}",
                                                  device_type_name(where.type), where.index)
                               : fmt::format_to_n(where_text, sizeof(where_text) - 1, "{}",
                                                  device_type_name(where.type));
        where_text[place.size < sizeof(where_text) ? place.size : sizeof(where_text) - 1] = '\0';
        const auto written = fmt::format_to_n(text_, sizeof(text_) - 1,
                                              "stint: tried to allocate {} bytes ({:.2f} MiB) on {} through {}, "
                                              "and the allocator under it failed",
                                              bytes_requested, static_cast<double>(bytes_requested) / 1048576.0,
                                              static_cast<const char*>(where_text), by);
        text_[written.size < sizeof(text_) ? written.size : sizeof(text_) - 1] = '\0';
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
