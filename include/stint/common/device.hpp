#pragma once
// Where work ran: the CPU or an accelerator (torch's DeviceType and device index). Shared by the
// events (a kernel's device), the device collectors and memory reporting.

#include "stint/detail/require_cxx20.hpp"

#include <cstdint>      // std::int32_t, std::uint8_t
#include <string_view>  // std::string_view

namespace stint {

/// The kind of device, numbered as torch's DeviceType (Kineto writes these numbers as "Device Type").
enum class device_type : std::uint8_t {
    cpu = 0,
    cuda = 1,
};

/// torch's name of a device type ("cpu", "cuda").
constexpr std::string_view device_type_name(device_type type) noexcept {
    switch (type) {
        case device_type::cpu: return "cpu";
        case device_type::cuda: return "cuda";
    }
    return "unknown";
}

/// One device: its type and its index among the devices of that type (-1 for the CPU, as Kineto's
/// "Device Id" of host memory).
///
///     stint::device gpu1{stint::device_type::cuda, 1};
struct device {
    device_type type = device_type::cpu;
    std::int32_t index = -1;

    friend constexpr bool operator==(const device&, const device&) noexcept = default;
};

}  // namespace stint
