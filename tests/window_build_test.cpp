// A window's events built while memory runs out: the profiler must stay consistent, so that a later
// call never returns part of the window. The program's operator new fails on demand (only on the
// thread that asks for it), so this is a binary of its own.

#include <doctest/doctest.h>

#include <cstddef>
#include <cstdlib>
#include <new>
#include <stdexcept>
#include <string>
#include <thread>

#include "stint/stint.hpp"
#include "test_util.hpp"

namespace {

// While `counting`, allocations on this thread are counted, and the `fail_at`-th fails.
constinit thread_local bool counting = false;
constinit thread_local long allocations = 0;
constinit thread_local long fail_at = -1;

// Runs `call` counting allocations; the `fail`-th (from 1; -1: none) throws std::bad_alloc.
template <class Call>
long count_allocations(Call&& call, long fail = -1) {
    allocations = 0;
    fail_at = fail;
    counting = true;
    try {
        call();
    } catch (...) {
        counting = false;
        throw;
    }
    counting = false;
    return allocations;
}

constexpr int named_scopes = 20'000;

// Two threads (two buffers) of scopes with names of their own, which the build copies as it goes.
void record_window(stint::profiler<>& prof) {
    const auto work = [](const char* prefix) {
        for (int i = 0; i < named_scopes; ++i) {
            const std::string name = std::string(prefix) + " scope number " + std::to_string(i);
            STINT_SCOPE_NAMED(name);
        }
    };
    prof.start();
    std::thread other(work, "other");
    work("main");
    other.join();
    prof.stop();
}

// Out of line: gcc would otherwise see a free() of what operator new returned and warn.
[[gnu::noinline]] void* system_allocate(std::size_t size) noexcept { return std::malloc(size == 0 ? 1 : size); }
[[gnu::noinline]] void system_free(void* p) noexcept { std::free(p); }

}  // namespace

void* operator new(std::size_t size) {
    if (counting && ++allocations == fail_at) throw std::bad_alloc();
    if (void* p = system_allocate(size)) return p;
    throw std::bad_alloc();
}
void operator delete(void* p) noexcept { system_free(p); }
void operator delete(void* p, std::size_t) noexcept { system_free(p); }

TEST_CASE("a build of the window's events that runs out of memory never leaves part of the window to read") {
    stint::profiler<> measured;
    record_window(measured);
    const long needed = count_allocations([&] { (void)measured.events(); });
    REQUIRE(needed > 10);
    const std::size_t events = stint_test::program_event_count(measured.events());
    REQUIRE(events == 2 * named_scopes);

    SUBCASE("failing before any record went back: the records stay, and a retry builds them all") {
        stint::profiler<> prof;
        record_window(prof);
        CHECK_THROWS_AS(count_allocations([&] { (void)prof.events(); }, 1), std::bad_alloc);
        CHECK(stint_test::program_event_count(prof.events()) == events);
    }
    SUBCASE("failing after records went back: every later read says the window is lost") {
        stint::profiler<> prof;
        record_window(prof);
        CHECK_THROWS_AS(count_allocations([&] { (void)prof.events(); }, needed * 3 / 4), std::bad_alloc);
        const std::string lost =
            "stint: the last window's events are lost: building them failed (std::bad_alloc) after its records had "
            "begun to go back to the pool; stats() still counts them";
        CHECK_THROWS_WITH_AS((void)prof.events(), lost.c_str(), std::runtime_error);
        stint_test::temp_dir dir;
        CHECK_THROWS_WITH_AS(prof.export_chrome_trace(dir.file("lost.json")), lost.c_str(), std::runtime_error);
        CHECK(prof.stats().recorded == 2 * named_scopes);
        // The next window is whole again.
        record_window(prof);
        CHECK(stint_test::program_event_count(prof.events()) == events);
    }
}
