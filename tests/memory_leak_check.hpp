#pragma once
// torch's test_mem_leak for stint: many sessions of 1,024 recorded ops each, and resident memory after
// each (VmRSS, stint_test::memory_now()). What stint holds between sessions on purpose (the warm chunk
// cache, whose largest chunks come from 2 MiB slabs) is measured apart from the rest: the cache may
// fill up in one step at any session (when the prefault thread maps a slab), a leak grows with every
// session. The check judges the rest's growth over the late sessions, so that it
// fails for a leak and never for the cache.

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "stint/recording/registry.hpp"

#include "reliability/size.hpp"
#include "test_util.hpp"

namespace stint_test {

/// Resident memory after one session, and the part of it stint's chunk pool holds on purpose.
struct memory_sample {
    std::int64_t resident = 0;
    std::int64_t held = 0;  ///< the chunk pool's cached chunks (warm, resident, from the heap or a slab)
    [[nodiscard]] std::int64_t rest() const { return resident - held; }
};

/// Sessions the check runs (each a few milliseconds); the first ones are left out, since they warm what
/// the process keeps for any later session (malloc's arenas, the prefault thread's stack). Then two
/// windows of sessions, an early and a late one, far enough apart for a leak to show.
inline constexpr int leak_check_sessions = 60;
inline constexpr std::size_t leak_check_warm_sessions = 10;
inline constexpr std::size_t leak_check_window = 15;

/// Runs `session` (one whole profiling session) leak_check_sessions times; the memory after each.
template <class Session>
std::vector<memory_sample> memory_after_sessions(Session&& session) {
    std::vector<memory_sample> samples;
    for (int i = 0; i < leak_check_sessions; ++i) {
        session();
        memory_sample sample;
        sample.resident = memory_now().resident;
        sample.held = static_cast<std::int64_t>(stint::detail::the_registry().cached_buffer_bytes());
        samples.push_back(sample);
    }
    return samples;
}

/// The median of `values` (copied).
inline std::int64_t median_of(std::vector<std::int64_t> values) {
    std::nth_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(values.size() / 2), values.end());
    return values[values.size() / 2];
}

/// How much the rest (resident memory, less what the pool holds) grew and stayed. The rest is first
/// smoothed by a running median of 5 sessions, so that a session whose memory rises and falls back
/// (malloc trimming its heap late) counts for nothing; then the median of the late window, less the
/// median of the early window, less the largest step from one session to the next: memory that a
/// cache takes once is all in one step. A leak of L resident bytes a session shows as about 34 L.
inline std::int64_t sustained_growth(const std::vector<memory_sample>& samples) {
    const std::size_t early = leak_check_warm_sessions;
    if (samples.size() < early + 3 * leak_check_window) throw std::invalid_argument("stint_test: too few sessions to judge");
    std::vector<std::int64_t> smooth;
    for (std::size_t i = early; i < samples.size(); ++i) {
        std::vector<std::int64_t> around;
        for (std::size_t j = std::max(early, i - std::min<std::size_t>(i, 2)); j <= std::min(samples.size() - 1, i + 2); ++j) {
            around.push_back(samples[j].rest());
        }
        smooth.push_back(median_of(around));
    }
    const auto window = [&](std::size_t first) {
        return median_of(std::vector<std::int64_t>(smooth.begin() + static_cast<std::ptrdiff_t>(first),
                                                   smooth.begin() + static_cast<std::ptrdiff_t>(first + leak_check_window)));
    };
    std::int64_t largest_step = 0;
    for (std::size_t i = 1; i < smooth.size(); ++i) largest_step = std::max(largest_step, smooth[i] - smooth[i - 1]);
    return window(smooth.size() - leak_check_window) - window(0) - largest_step;
}

/// The bound on sustained_growth(): a leak of 8 KiB of resident memory a session or more fails (a
/// session of the checks records about 300 KiB of events). Resident memory is what the check can see:
/// a leak that malloc serves from memory the process already freed shows only once that runs out.
inline constexpr std::int64_t leak_bound_bytes = std::int64_t{256} << 10;

/// One line per sample, for the check's message: "resident held rest" in KiB.
inline std::string describe(const std::vector<memory_sample>& samples) {
    std::string text;
    for (const memory_sample& s : samples) {
        text += std::to_string(s.resident >> 10) + " " + std::to_string(s.held >> 10) + " " +
                std::to_string(s.rest() >> 10) + " KiB\n";
    }
    return text;
}

}  // namespace stint_test
