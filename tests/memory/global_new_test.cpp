// STINT_TRACK_GLOBAL_NEW in a program of its own (it replaces the program's operator new): user
// allocations become [memory] events; stint's own (buffer chunks, thread registration) never do.

#include <doctest/doctest.h>

#include <cstdint>
#include <memory>
#include <thread>
#include <vector>

#include <stint/stint.hpp>

#include "../test_util.hpp"

STINT_TRACK_GLOBAL_NEW();

namespace {

using mem = stint::config<stint::profile_memory>;

using stint_test::memory_events;

struct alignas(128) wide {
    unsigned char bytes[256];
};

// Where the test's blocks escape to: a new/delete pair whose pointer goes nowhere may be elided by
// the compiler ([expr.new]; clang does), and then no operator new runs.
void* volatile escaped = nullptr;

}  // namespace

TEST_CASE("global new: new and delete in a scope are [memory] events with their sizes, aligned ones too") {
    stint::profiler<mem> prof;
    prof.start();
    {
        STINT_SCOPE("allocates");
        int* numbers = new int[100];
        escaped = numbers;
        delete[] numbers;
        auto* w = new wide;
        escaped = w;
        delete w;
    }
    prof.stop();
    const auto memory = memory_events(prof.events());
    REQUIRE(memory.size() == 4);
    CHECK(prof.events().memory_of(*memory[0])->bytes == 400);
    CHECK(prof.events().memory_of(*memory[1])->bytes == -400);
    CHECK(prof.events().memory_of(*memory[2])->bytes == 256);
    CHECK(prof.events().memory_of(*memory[2])->addr % 128 == 0);
    CHECK(prof.events().memory_of(*memory[3])->bytes == -256);
    for (std::optional<stint::event> e : memory) CHECK(prof.events().parent(*e)->name == "allocates");
}

TEST_CASE("global new: stint's own chunks and thread registrations are never reported") {
    stint::profiler<mem> prof;
    prof.start();
    // 200,000 scopes need many buffer chunks (allocated with operator new); the thread's registration
    // allocates too. Nothing else here allocates but the two vectors' blocks below and std::thread.
    std::vector<std::uint8_t>* block = nullptr;
    {
        STINT_SCOPE("user");
        block = new std::vector<std::uint8_t>(1000);
        escaped = block;
    }
    std::thread worker([] {
        for (int i = 0; i < 200'000; ++i) {
            STINT_SCOPE("busy");
        }
    });
    worker.join();
    for (int i = 0; i < 200'000; ++i) {
        STINT_SCOPE("busy");
    }
    delete block;
    prof.stop();
    std::size_t user_blocks = 0;
    std::size_t thread_blocks = 0;
    for (std::optional<stint::event> e : memory_events(prof.events())) {
        std::optional<stint::event> parent = prof.events().parent(*e);
        if (parent != std::nullopt && parent->name == "user") ++user_blocks;
        if (parent == std::nullopt) ++thread_blocks;
    }
    CHECK(user_blocks == 2);  // the vector object and its 1000 bytes
    // At top level: std::thread's state (allocated and freed) and the vector's two frees; no chunk.
    CHECK(thread_blocks == 4);
    CHECK(prof.stats().recorded >= 400'000);
    CHECK(prof.stats().buffer_bytes >= 400'000 * 24);
    CHECK(memory_events(prof.events()).size() == user_blocks + thread_blocks);
}
