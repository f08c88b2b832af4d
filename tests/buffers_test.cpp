// Record buffers between sessions: what a session used is reported, a reserve is faulted in before
// start() and reused, and a profiler's buffers go back to the system with it.
#include <doctest/doctest.h>

#if defined(__linux__)
#include <sys/mman.h>
#include <unistd.h>
#endif

#include <array>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include <stint/stint.hpp>
#include <stint/recording/registry.hpp>
#include "test_util.hpp"

namespace {

constexpr std::size_t chunk_bytes = stint::detail::chunk::total_bytes;

std::size_t cached() { return stint::detail::the_registry().cached_buffer_bytes(); }

void record(int scopes) {
    for (int i = 0; i < scopes; ++i) {
        STINT_SCOPE("scope");
    }
}

/// Polls `done` for up to 10 s (the prefault thread runs on its own schedule).
template <class Done>
bool eventually(Done&& done) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (!done()) {
        if (std::chrono::steady_clock::now() > deadline) return false;
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return true;
}

/// Empties the pool's cache, so that what it holds next is what the prefault thread faulted in.
struct empty_pool {
    empty_pool() { stint::detail::the_registry().set_retained_buffers(0); }
    ~empty_pool() { stint::detail::the_registry().release_buffers(); }  // back to the default retention
    empty_pool(const empty_pool&) = delete;
    empty_pool& operator=(const empty_pool&) = delete;
};

#if defined(__linux__)
/// Threads of this process named `name` (/proc/self/task/*/comm).
int threads_named(const std::string& name) {
    int found = 0;
    for (const auto& task : std::filesystem::directory_iterator("/proc/self/task")) {
        std::ifstream comm(task.path() / "comm");
        std::string line;
        if (std::getline(comm, line) && line == name) ++found;
    }
    return found;
}
#endif

}  // namespace

TEST_CASE("stats().buffer_bytes is the chunks a session took: 24 bytes per timing-only record, rounded up") {
    stint::profiler<> prof;
    prof.start();
    record(10'000);
    prof.stop();
    const auto& stats = prof.stats();
    CHECK(stats.recorded == 10'000);
    const std::size_t per_chunk = stint::detail::chunk::data_bytes / sizeof(stint::detail::record);
    const std::size_t chunks = (10'000 + per_chunk - 1) / per_chunk;
    CHECK(stats.buffer_bytes == chunks * chunk_bytes);
    CHECK(static_cast<double>(stats.buffer_bytes) / 10'000.0 < 32.0);  // design §6: <= 32 bytes per record
}

TEST_CASE("reserve_buffer_bytes faults chunks in before start() and the session records into them") {
    // Twice what the prefault thread keeps warm at a session's start: it never tops this pool up, so
    // what the pool holds is the reserve less what the session took (the counts below are exact).
    const std::size_t reserve = 2 * stint::detail::chunk_pool::initial_prefault_bytes;
    static_assert(2 * stint::detail::chunk_pool::initial_prefault_bytes >= 64 * chunk_bytes);
    {
        stint::profiler<> prof({.reserve_buffer_bytes = reserve});
        prof.start();
        // Nothing recorded yet: the reserve waits in the pool, but for the chunk set aside for this
        // (registered) thread's first records.
        CHECK(cached() >= reserve - chunk_bytes);
        record(50'000);              // about 19 chunks
        const std::size_t left = cached();
        CHECK(left < reserve);
        CHECK(left >= reserve - 32 * chunk_bytes);
        prof.stop();
        CHECK(prof.stats().recorded == 50'000);
        CHECK(prof.stats().dropped == 0);
        // The window's records stay in their chunks until its events are built (or the next start()
        // discards them); then the chunks go back to the pool, which keeps the reserve.
        CHECK(cached() < reserve - 16 * chunk_bytes);
        CHECK(stint_test::program_event_count(prof.events()) == 50'000);
        CHECK(cached() >= reserve - 2 * chunk_bytes);

        prof.start();  // the next session starts warm
        record(1'000);
        prof.stop();
        CHECK(prof.stats().recorded == 1'000);
    }
    // The profiler is gone: the pool keeps no more than its default.
    CHECK(cached() <= stint::detail::chunk_pool::default_retained_bytes);
}

TEST_CASE("a reserve larger than the budget is cut to the budget") {
    const std::size_t budget = 8 * chunk_bytes;
    // From an empty cache (earlier tests leave up to the default cached), so that what start() reserves
    // is all that is cached.
    stint::detail::the_registry().set_retained_buffers(0);
    stint::detail::the_registry().release_buffers();
    REQUIRE(cached() == 0);
    stint::profiler<> prof({.buffer_budget_bytes = budget, .reserve_buffer_bytes = std::size_t{1} << 30});
    prof.start();
    CHECK(cached() <= budget);
    CHECK(cached() >= budget - chunk_bytes);  // the reserve, cut to the budget, not dropped
    record(100'000);
    prof.stop();
    const auto& stats = prof.stats();
    CHECK(stats.recorded + stats.dropped == 100'000);
    CHECK(stats.dropped > 0);
    CHECK(stats.buffer_bytes <= budget);
}

TEST_CASE("with a schedule, each window's buffers stay warm for the next window") {
    std::vector<std::size_t> window_bytes;
    std::vector<std::size_t> cached_after;
    {
        stint::profiler<> prof({.schedule = stint::schedule({.wait = 1, .warmup = 1, .active = 2, .repeat = 2}),
                                .on_trace_ready = [&](stint::profiler<>& p) {
                                    window_bytes.push_back(p.stats().buffer_bytes);
                                    (void)p.events();  // built from the records, which go back to the pool
                                    cached_after.push_back(cached());
                                }});
        for (int step = 0; step < 8; ++step) {
            record(400'000);  // about 150 chunks per step: windows beyond the default cache
            prof.step();
        }
    }
    REQUIRE(window_bytes.size() == 2);
    for (std::size_t i = 0; i < 2; ++i) {
        CHECK(window_bytes[i] > stint::detail::chunk_pool::default_retained_bytes);
        // All of the window's chunks but the ones threads keep writing into are cached again.
        CHECK(cached_after[i] + 2 * chunk_bytes >= window_bytes[i]);
    }
    CHECK(cached() <= stint::detail::chunk_pool::default_retained_bytes);
}

#if defined(__linux__)
TEST_CASE("with default options a thread of stint's faults chunks in ahead of the records, only while recording") {
    const empty_pool empty;
    REQUIRE(cached() == 0);
    stint::profiler<> prof;
    CHECK(threads_named("stint prefault") == 0);
    record(1);  // registers this thread before the session, so that it takes no fault for that
    prof.start();
    CHECK(eventually([] { return threads_named("stint prefault") == 1; }));
    // It keeps 4 MiB of largest chunks warm before any record needs them.
    CHECK(eventually([] { return cached() >= stint::detail::chunk_pool::initial_prefault_bytes; }));
    CHECK(cached() <= stint::detail::chunk_pool::max_prefault_bytes);
    // 3 MiB of records (48 chunks): each chunk this thread takes was faulted in by the prefault thread,
    // none by the thread itself.
    const std::uint64_t on_demand_before = stint::detail::the_registry().chunks_faulted_on_demand();
    record(130'000);
    CHECK(stint::detail::the_registry().chunks_faulted_on_demand() == on_demand_before);
    prof.stop();
    CHECK(prof.stats().recorded == 130'000);
    CHECK(prof.stats().dropped == 0);
    // Joined at stop: no thread of stint's runs while nothing records.
    CHECK(threads_named("stint prefault") == 0);
    // And the warm chunks beyond what the pool keeps between sessions went back.
    CHECK(cached() == 0);
}

TEST_CASE("the prefault thread faults in no more than the session's budget could pay for") {
    const empty_pool empty;
    const std::size_t budget = 3 * chunk_bytes;
    stint::profiler<> prof({.buffer_budget_bytes = budget});
    prof.start();
    CHECK(eventually([] { return cached() > 0; }));
    std::this_thread::sleep_for(std::chrono::milliseconds(50));  // time to overshoot, were it to
    CHECK(cached() <= budget);
    record(100'000);
    prof.stop();
    CHECK(prof.stats().recorded + prof.stats().dropped == 100'000);
    CHECK(prof.stats().dropped > 0);
    CHECK(prof.stats().buffer_bytes <= budget);
}
#endif

TEST_CASE("chunk memory takes the way that costs least per chunk, trying each first and the dearer every 64th time") {
    using stint::detail::chunk_memory;
    std::atomic<std::uint32_t> decisions{0};
    CHECK(chunk_memory::prefer_slab(0, 0, decisions));      // untried: a slab first
    CHECK_FALSE(chunk_memory::prefer_slab(500, 0, decisions));  // then one heap chunk
    CHECK(decisions.load() == 0);
    int slabs = 0;
    for (int i = 0; i < 128; ++i) slabs += chunk_memory::prefer_slab(100, 900, decisions) ? 1 : 0;
    CHECK(slabs == 126);  // the cheaper way, but for two retries of the dearer
    int singles = 0;
    for (int i = 0; i < 128; ++i) singles += chunk_memory::prefer_slab(900, 100, decisions) ? 0 : 1;
    CHECK(singles == 126);
}

#if defined(__linux__)
TEST_CASE("a slab's chunks are 2 MiB-aligned and resident, and the slab is unmapped when its last chunk comes back") {
    using stint::detail::chunk;
    using stint::detail::chunk_memory;
    chunk_memory memory;
    std::array<chunk*, chunk_memory::chunks_per_slab> out{};
    REQUIRE(memory.allocate_slab(out));
    CHECK(memory.slabs() == 1);
    auto* const base = reinterpret_cast<std::byte*>(out[0]);
    CHECK(reinterpret_cast<std::uintptr_t>(base) % chunk_memory::slab_bytes == 0);
    const auto page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
    std::vector<unsigned char> resident(chunk_memory::slab_bytes / page);
    REQUIRE(::mincore(base, chunk_memory::slab_bytes, resident.data()) == 0);
    std::size_t pages_in = 0;
    for (unsigned char r : resident) pages_in += r & 1U;
    CHECK(pages_in == resident.size());  // faulted in before any record needs them
    for (std::size_t i = 0; i < out.size(); ++i) {
        CHECK(reinterpret_cast<std::byte*>(out[i]) == base + i * chunk::total_bytes);
        CHECK(out[i]->in_slab);
        CHECK(out[i]->size_class == chunk::size_classes - 1);
        std::memset(out[i]->data(), 0xab, chunk::data_bytes);  // all of it writable (ASan would say)
    }
    for (std::size_t i = 0; i + 1 < out.size(); ++i) memory.deallocate(out[i]);
    CHECK(memory.slabs() == 1);  // one chunk still out
    memory.deallocate(out.back());
    CHECK(memory.slabs() == 0);
    CHECK(::mincore(base, chunk_memory::slab_bytes, resident.data()) != 0);  // ENOMEM: no longer mapped
}

TEST_CASE("allocate_largest measures both ways, and a small budget never gets a slab") {
    using stint::detail::chunk;
    using stint::detail::chunk_memory;
    chunk_memory memory;
    std::vector<chunk*> taken;
    std::array<chunk*, chunk_memory::chunks_per_slab> out{};
    // Not allowed a slab: one heap chunk, however cheap slabs are.
    CHECK(memory.allocate_largest(out, false) == 1);
    CHECK_FALSE(out[0]->in_slab);
    taken.push_back(out[0]);
    CHECK(memory.slabs() == 0);
    CHECK(memory.single_ns_per_chunk() > 0);
    // Allowed: a slab is tried, as it is untried.
    REQUIRE(memory.allocate_largest(out, true) == chunk_memory::chunks_per_slab);
    taken.insert(taken.end(), out.begin(), out.end());
    CHECK(memory.slab_ns_per_chunk() > 0);
    CHECK(memory.slabs() == 1);
    for (chunk* c : taken) memory.deallocate(c);
    CHECK(memory.slabs() == 0);
}
#endif
