#pragma once
// What a session profiles (torch's ProfilerActivity): the CPU, the device, or both.

#include <cstdint>           // std::uint8_t
#include <initializer_list>  // std::initializer_list

namespace stint {

/// One kind of activity a session can profile.
enum class activity : std::uint8_t {
    cpu = 1,   ///< scopes and ops of every thread
    cuda = 2,  ///< CUDA kernels, copies, memsets and API calls (needs stint::cuda_activities in the config)
};

/// A set of activities, as torch's `activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]`.
///
///     stint::profiler<gpu> prof({.activities = {stint::activity::cuda}});   // device only
class activity_set {
public:
    constexpr activity_set() noexcept = default;
    constexpr activity_set(std::initializer_list<activity> list) noexcept {
        for (activity a : list) bits_ |= static_cast<std::uint8_t>(a);
    }
    [[nodiscard]] constexpr bool contains(activity a) const noexcept {
        return (bits_ & static_cast<std::uint8_t>(a)) != 0;
    }
    [[nodiscard]] constexpr bool empty() const noexcept { return bits_ == 0; }
    constexpr activity_set& insert(activity a) noexcept {
        bits_ |= static_cast<std::uint8_t>(a);
        return *this;
    }
    friend constexpr bool operator==(activity_set, activity_set) noexcept = default;

private:
    std::uint8_t bits_ = 0;
};

}  // namespace stint
