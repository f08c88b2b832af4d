#pragma once
// torch's test_mem_leak for stint: many sessions of 1,024 recorded ops each, and resident memory after
// each (VmRSS, stint_test::memory_now()). What stint holds between sessions on purpose
// (the warm chunk cache, the 2 MiB slabs its largest chunks come from) is measured apart from the
// rest: the cache may fill up in one step at any session (when the prefault thread maps a slab), a
// leak grows with every session. The check judges the rest's growth over the late sessions, so that it
// fails for a leak and never for the cache.

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "stint/recording/registry.hpp"

#include "reliability/size.hpp"
#include "test_util.hpp"

namespace stint_test {

/// Resident memory after one session, and the part of it stint's chunk pool holds on purpose.
struct memory_sample {
    std::int64_t resident = 0;
    std::int64_t held = 0;  ///< the chunk pool's cached heap chunks and mapped slabs
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
        sample.held = static_cast<std::int64_t>(stint::detail::the_registry().held_buffer_bytes());
        samples.push_back(sample);
    }
    return samples;
}

/// How much the rest (resident memory, less what the pool holds) grew and stayed: its lowest value in
/// the late window, less its highest in the early window, less its largest step from one session to
/// the next. Resident memory that rises and falls back (malloc trimming its heap) does not count; nor
/// does memory that a cache takes once, all in one step; a leak of L bytes a session grows by L at
/// each of the 21 steps between the windows' near ends, and shows as about 20 L.
inline std::int64_t sustained_growth(const std::vector<memory_sample>& samples) {
    const std::size_t early = leak_check_warm_sessions;
    const std::size_t late = samples.size() - std::min(samples.size(), leak_check_window);
    if (late < early + leak_check_window) return 0;  // too few sessions to judge: the callers run enough
    std::int64_t early_high = samples[early].rest();
    for (std::size_t i = early; i < early + leak_check_window; ++i) early_high = std::max(early_high, samples[i].rest());
    std::int64_t late_low = samples[late].rest();
    for (std::size_t i = late; i < samples.size(); ++i) late_low = std::min(late_low, samples[i].rest());
    std::int64_t largest_step = 0;
    for (std::size_t i = early + 1; i < samples.size(); ++i) {
        largest_step = std::max(largest_step, samples[i].rest() - samples[i - 1].rest());
    }
    return late_low - early_high - largest_step;
}

/// The bound on sustained_growth(): a leak of 13 KiB a session or more fails (a session of the checks
/// records about 300 KiB of events; malloc's jitter between sessions of the same work is a few pages).
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
