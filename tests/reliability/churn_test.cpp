// Churn: many short threads in one session, and a thread pool whose threads outlive many sessions.

#include <doctest/doctest.h>

#include <condition_variable>
#include <cstdint>
#include <fstream>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <stint/recording/registry.hpp>
#include "../test_util.hpp"
#include "size.hpp"

namespace {

// Resident set size of the process, in bytes (Linux).
std::size_t resident_bytes() { return static_cast<std::size_t>(stint_test::memory_now().resident); }

// A fixed pool of threads that run one task each per round.
class thread_pool {
public:
    explicit thread_pool(int threads) {
        for (int i = 0; i < threads; ++i) workers_.emplace_back([this] { work(); });
    }
    ~thread_pool() {
        {
            std::lock_guard lock(mutex_);
            quit_ = true;
        }
        wake_.notify_all();
        for (std::thread& t : workers_) t.join();
    }
    thread_pool(const thread_pool&) = delete;
    thread_pool& operator=(const thread_pool&) = delete;

    // Runs `task` once on every thread and waits for all of them.
    void run_on_all(std::function<void()> task) {
        std::unique_lock lock(mutex_);
        task_ = std::move(task);
        pending_ = workers_.size();
        ++round_;
        wake_.notify_all();
        done_.wait(lock, [&] { return pending_ == 0; });
    }

private:
    void work() {
        std::uint64_t seen = 0;
        std::unique_lock lock(mutex_);
        for (;;) {
            wake_.wait(lock, [&] { return quit_ || round_ != seen; });
            if (quit_) return;
            seen = round_;
            const std::function<void()> task = task_;
            lock.unlock();
            task();
            lock.lock();
            if (--pending_ == 0) done_.notify_all();
        }
    }

    std::mutex mutex_;
    std::condition_variable wake_;
    std::condition_variable done_;
    std::function<void()> task_;
    std::size_t pending_ = 0;
    std::uint64_t round_ = 0;
    bool quit_ = false;
    std::vector<std::thread> workers_;
};

}  // namespace

TEST_CASE("churn: short threads of three scopes each lose nothing under the default budget") {
    // Full size: 100,000 threads. Before chunks grew from 1 KiB, each thread held a 64 KiB chunk of
    // the budget and a session held at most 8,192 threads.
    const int threads = stint_test::sized(100'000, 12'000);
    stint::profiler<> prof;
    prof.start();
    for (int i = 0; i < threads; ++i) {
        std::thread([] {
            STINT_SCOPE("a");
            { STINT_SCOPE("b"); }
            STINT_SCOPE("c");
        }).join();
    }
    prof.stop();
    const stint::profiler_stats stats = prof.stats();
    CHECK(stats.dropped == 0);
    CHECK(stats.recorded == static_cast<std::uint64_t>(3 * threads));
    CHECK(stats.overhead_events == static_cast<std::uint64_t>(threads));  // each thread's registration
    // Each thread took the smallest chunk.
    CHECK(stats.buffer_bytes == static_cast<std::uint64_t>(threads) * stint::detail::chunk::min_total_bytes);
    // Exited threads' registrations are freed by the drain.
    CHECK(stint::detail::the_registry().registered_threads() < 64);
    MESSAGE(threads << " threads, recorded " << stats.recorded << ", dropped " << stats.dropped << ", buffers "
                    << stats.buffer_bytes << " bytes");
}

TEST_CASE("churn: a thread pool outlives 100 sessions and its memory returns to its starting size") {
    const int sessions = stint_test::sized(1000, 100);
    const int warm_sessions = 10;
    thread_pool pool(8);
    auto& reg = stint::detail::the_registry();
    std::size_t rss_after_warm = 0;
    std::size_t cached_after_warm = 0;
    std::size_t threads_after_warm = 0;
    for (int s = 0; s < sessions; ++s) {
        stint::profiler<> prof;
        prof.start();
        pool.run_on_all([s] {
            for (int i = 0; i < 1000 + 100 * (s % 5); ++i) {
                STINT_SCOPE("task");
                STINT_SCOPE("step");
            }
        });
        prof.stop();
        const stint::profiler_stats stats = prof.stats();
        REQUIRE(stats.dropped == 0);
        REQUIRE(stats.recorded == static_cast<std::uint64_t>(8 * 2 * (1000 + 100 * (s % 5))));
        // Measured from the tenth session on: the first ones warm what the process keeps for any thread
        // it starts (glibc's cache of thread stacks, the arenas of threads, stint's prefault thread among
        // them), which later sessions reuse.
        if (s == warm_sessions - 1) {
            rss_after_warm = resident_bytes();
            cached_after_warm = reg.cached_buffer_bytes();
            threads_after_warm = reg.registered_threads();
        }
    }
    const std::size_t rss_after_last = resident_bytes();
    const std::size_t cached_after_last = reg.cached_buffer_bytes();
    // The chunks kept warm between sessions stay within the pool's bound, however many sessions ran.
    CHECK(reg.cached_buffer_bytes() <= stint::detail::chunk_pool::default_retained_bytes);
    CHECK(reg.registered_threads() == threads_after_warm);
    // No growth with the number of sessions: what one session needs is reused by the next. The chunk
    // cache may fill up to its bound meanwhile (checked above), so it is counted apart.
    if (!stint_test::sanitized) {
        CHECK(rss_after_last - cached_after_last <= rss_after_warm - cached_after_warm + (std::size_t{4} << 20));
    }
    MESSAGE(sessions << " sessions: RSS after the tenth " << rss_after_warm / 1024 << " KiB (chunk cache "
                     << cached_after_warm / 1024 << " KiB), after the last " << rss_after_last / 1024
                     << " KiB (chunk cache " << cached_after_last / 1024 << " KiB)");
}
