#include "stint/profiler/step_tracker.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include "stint/common/warning.hpp"
#include "test_util.hpp"

// The tracker is process-wide and other tests step it too: every test uses its own requester names
// and compares the global step with its value at the start of the test.

namespace {

using stint::step_tracker;

using stint_test::warning_capture;

}  // namespace

TEST_CASE("step_tracker counts one global step per iteration with multiple steppers") {
    // test_kineto_profiler_multiple_steppers: an optimizer hook steps alone for niters iterations,
    // then the hook and a profiler's step() both step for niters more; the global step rises by one
    // per iteration, 2 * niters in all.
    const std::string profiler_step = "multiple_steppers.ProfilerStep";
    const std::string yet_another_step = "multiple_steppers.yet_another_step";
    constexpr std::int64_t niters = 8;
    warning_capture capture;

    // A first profiler session without a schedule: registered and erased, never stepped.
    step_tracker::init_step_count(profiler_step);
    CHECK(step_tracker::erase_step_count(profiler_step));

    auto optimizer_step = [&] { return step_tracker::increment_step(yet_another_step); };
    const std::int64_t initial_step = step_tracker::current_step();

    for (std::int64_t i = 0; i < niters; ++i) {
        CHECK(optimizer_step() == initial_step + i + 1);
    }
    CHECK(step_tracker::current_step() == initial_step + niters);

    // profile(schedule=...): registers at construction, steps after each batch, erases at exit.
    CHECK(step_tracker::init_step_count(profiler_step) == initial_step + niters);
    for (std::int64_t i = 0; i < niters; ++i) {
        const std::int64_t after_optimizer = optimizer_step();
        CHECK(after_optimizer == initial_step + niters + i + 1);
        // The profiler's count only catches up with the optimizer's: no second increment.
        CHECK(step_tracker::increment_step(profiler_step) == after_optimizer);
    }
    CHECK(step_tracker::erase_step_count(profiler_step));

    CHECK(step_tracker::current_step() == initial_step + 2 * niters);
    CHECK(capture.seen().empty());
    CHECK(step_tracker::erase_step_count(yet_another_step));
}

TEST_CASE("step_tracker's init_step_count sets the requester to the current global step") {
    const std::string ahead = "init_step_count.ahead";
    const std::string behind = "init_step_count.behind";
    const std::int64_t start = step_tracker::current_step();

    CHECK(step_tracker::init_step_count(behind) == start);
    CHECK(step_tracker::current_step() == start);
    for (int i = 0; i < 5; ++i) step_tracker::increment_step(ahead);
    CHECK(step_tracker::current_step() == start + 5);

    // `behind` is still at `start`: its increments do not move the global step until it catches up.
    CHECK(step_tracker::increment_step(behind) == start + 5);
    CHECK(step_tracker::increment_step(behind) == start + 5);
    CHECK(step_tracker::current_step() == start + 5);

    // Re-initialising brings it level, so its next increment advances the global step.
    CHECK(step_tracker::init_step_count(behind) == start + 5);
    CHECK(step_tracker::increment_step(behind) == start + 6);
    CHECK(step_tracker::increment_step(ahead) == start + 6);  // `ahead` is now level, not above
    CHECK(step_tracker::increment_step(ahead) == start + 7);

    CHECK(step_tracker::erase_step_count(ahead));
    CHECK(step_tracker::erase_step_count(behind));
}

TEST_CASE("step_tracker's erase_step_count says whether the requester existed") {
    const std::string name = "erase_step_count.requester";
    CHECK_FALSE(step_tracker::erase_step_count(name));
    step_tracker::init_step_count(name);
    CHECK(step_tracker::erase_step_count(name));
    CHECK_FALSE(step_tracker::erase_step_count(name));

    // increment_step registers an unknown requester first.
    const std::int64_t start = step_tracker::current_step();
    CHECK(step_tracker::increment_step(name) == start + 1);
    CHECK(step_tracker::erase_step_count(name));
    CHECK_FALSE(step_tracker::erase_step_count(name));

    // An erased requester restarts from the global step, not from zero or its old count.
    CHECK(step_tracker::increment_step(name) == start + 2);
    CHECK(step_tracker::erase_step_count(name));
}

TEST_CASE("step_tracker's current_step never decreases when the leading requester is erased") {
    const std::string name = "never_decreases.requester";
    const std::int64_t start = step_tracker::current_step();
    step_tracker::increment_step(name);
    step_tracker::increment_step(name);
    CHECK(step_tracker::erase_step_count(name));
    CHECK(step_tracker::current_step() == start + 2);
}

TEST_CASE("step_tracker's jump warning has torch's text and a Python dict repr") {
    using stint::detail::step_count_entry;
    const std::vector<step_count_entry> counts{{"ProfilerStep", 3}, {"yet_another_step", 5}};
    CHECK(stint::detail::step_jump_warning(3, counts) ==
          "Profiler step count has increased more than 1 - current_step = 3 step dict = "
          "{'ProfilerStep': 3, 'yet_another_step': 5}");
    CHECK(stint::detail::format_step_dict({}) == "{}");
    CHECK(stint::detail::format_step_dict(std::vector<step_count_entry>{{"a", -1}}) == "{'a': -1}");
}

TEST_CASE("requester names are quoted as Python's repr quotes them") {
    auto repr = [](std::string_view text) {
        std::string out;
        stint::detail::append_python_repr(out, text);
        return out;
    };
    CHECK(repr("ProfilerStep") == "'ProfilerStep'");
    CHECK(repr("") == "''");
    CHECK(repr("it's") == "\"it's\"");
    CHECK(repr("say \"hi\"") == "'say \"hi\"'");
    CHECK(repr("both ' and \"") == "'both \\' and \"'");
    CHECK(repr("back\\slash") == "'back\\\\slash'");
    CHECK(repr("tab\tnew\nret\r") == "'tab\\tnew\\nret\\r'");
    const std::string controls = std::string("nul") + '\0' + "bell\x07" + "del\x7f";
    CHECK(repr(controls) == "'nul\\x00bell\\x07del\\x7f'");
    CHECK(repr("caf\xc3\xa9") == "'caf\xc3\xa9'");
}

TEST_CASE("step_tracker is a set of static functions") {
    static_assert(!std::is_default_constructible_v<step_tracker>);
    CHECK(step_tracker::profiler_step_name == "ProfilerStep");
}

TEST_CASE("step_tracker counts every increment of a requester shared by four threads") {
    const std::string name = "threads.shared";
    constexpr int threads = 4;
    constexpr int per_thread = 2000;
    warning_capture capture;
    const std::int64_t start = step_tracker::current_step();

    std::vector<std::vector<std::int64_t>> returned(threads);
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t) {
        pool.emplace_back([&, t] {
            for (int i = 0; i < per_thread; ++i) returned[t].push_back(step_tracker::increment_step(name));
        });
    }
    for (auto& th : pool) th.join();

    CHECK(step_tracker::current_step() == start + threads * per_thread);
    // Each increment raised the global step by exactly one, so every value was handed out once.
    std::vector<std::int64_t> all;
    for (const auto& r : returned) {
        CHECK(std::is_sorted(r.begin(), r.end()));
        all.insert(all.end(), r.begin(), r.end());
    }
    std::sort(all.begin(), all.end());
    std::vector<std::int64_t> expected(threads * per_thread);
    for (std::size_t i = 0; i < expected.size(); ++i) expected[i] = start + 1 + static_cast<std::int64_t>(i);
    CHECK(all == expected);
    CHECK(capture.seen().empty());
    CHECK(step_tracker::erase_step_count(name));
}

TEST_CASE("step_tracker stays consistent when four threads step their own requesters") {
    constexpr int threads = 4;
    constexpr int per_thread = 2000;
    warning_capture capture;
    const std::int64_t start = step_tracker::current_step();

    std::vector<std::thread> pool;
    std::vector<std::int64_t> last(threads);
    for (int t = 0; t < threads; ++t) {
        pool.emplace_back([&, t] {
            const std::string name = "threads.own." + std::to_string(t);
            std::int64_t previous = 0;
            bool monotonic = true;
            for (int i = 0; i < per_thread; ++i) {
                const std::int64_t now = step_tracker::increment_step(name);
                monotonic = monotonic && now >= previous;
                previous = now;
                (void)step_tracker::current_step();
            }
            last[t] = monotonic ? previous : -1;
        });
    }
    for (auto& th : pool) th.join();

    const std::int64_t end = step_tracker::current_step();
    // Each requester starts at the global step when it first steps, so the global step ends between
    // one thread's worth and all threads' worth of increments, never by more than one at a time.
    CHECK(end >= start + per_thread);
    CHECK(end <= start + threads * per_thread);
    for (auto value : last) {
        CHECK(value >= start + 1);
        CHECK(value <= end);
    }
    CHECK(capture.seen().empty());
    for (int t = 0; t < threads; ++t) CHECK(step_tracker::erase_step_count("threads.own." + std::to_string(t)));
}
