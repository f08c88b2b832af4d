// A flight recorder that records for a long time stays within its budget (issue 35): four threads record
// without pause into a 16 MiB ring, and resident memory stays flat once the ring has filled. The full
// size (STINT_RELIABILITY_FULL=1) is the 10 minutes; the reduced one keeps the check running.

#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "../test_util.hpp"
#include "size.hpp"

// Skipped (and counted so) under sanitizers: their shadow memory and quarantine make RSS say nothing.
TEST_CASE("a flight recorder's resident memory stays flat while its ring turns" * doctest::skip(stint_test::sanitized)) {
    const double seconds = stint_test::sized(600.0, 2.0);
    constexpr std::size_t budget = std::size_t{16} << 20;
    stint::profiler_options<> options;
    options.flight_recorder = stint::flight_recorder_options{.budget_bytes = budget};
    stint::profiler<> prof(options);
    std::atomic<bool> done{false};
    std::atomic<std::uint64_t> recorded{0};
    prof.start();
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t) {
        threads.emplace_back([&] {
            std::uint64_t n = 0;
            while (!done.load(std::memory_order_relaxed)) {
                for (int i = 0; i < 100; ++i) {
                    STINT_SCOPE("flight.outer");
                    STINT_SCOPE("flight.inner");
                }
                n += 200;
            }
            recorded.fetch_add(n);
        });
    }
    std::int64_t low = 0;
    std::int64_t high = 0;
    int samples = 0;
    const auto begin = std::chrono::steady_clock::now();
    for (;;) {
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
        const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
        if (elapsed >= seconds) break;
        if (elapsed < 0.5) continue;  // the ring fills first (16 MiB: well under a second)
        const std::int64_t rss = stint_test::memory_now().resident;
        low = samples == 0 ? rss : std::min(low, rss);
        high = std::max(high, rss);
        ++samples;
    }
    done = true;
    for (std::thread& t : threads) t.join();
    prof.stop();
    stint_test::temp_dir dir;
    prof.export_chrome_trace(dir / "t.json");
    const nlohmann::json trace = stint_test::read_json(dir / "t.json");
    const auto overwritten = trace.at("flightRecorder").at("overwritten").get<std::uint64_t>();
    const std::uint64_t kept = stint_test::count_named(prof.events(), "flight.outer") +
                               stint_test::count_named(prof.events(), "flight.inner");
    MESSAGE(recorded.load() << " records in " << seconds << " s, " << kept << " kept, " << overwritten
                            << " overwritten; RSS " << (low >> 20) << " to " << (high >> 20) << " MiB over " << samples
                            << " samples");
    REQUIRE(samples >= 10);
    CHECK(kept + overwritten == recorded.load());
    CHECK(prof.stats().dropped == 0);
    CHECK(prof.stats().buffer_bytes <= budget);
    // Kept whole, the records would grow RSS by 24 bytes each: hundreds of MiB at the reduced size.
    CHECK(high - low <= static_cast<std::int64_t>(budget / 4));
}
