// with_stack<native> by frame pointers (STINT_NATIVE_STACK_FRAME_POINTERS=1, set for this file only):
// the walk takes the unwinder's frames where frame pointers exist (tests/meson.build builds the tests
// with -fno-omit-frame-pointer), honours the depth, works on a thread's small stack, and never follows
// a chain out of the stack's bounds. The unwinder itself is what tests/stacks_test.cpp's ops take.
#define STINT_NATIVE_STACK_FRAME_POINTERS 1

#include <doctest/doctest.h>

#include <stint/stint.hpp>
#include <stint/capture/detail/native_symbols.hpp>

#include <pthread.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

namespace {

#if STINT_DETAIL_HAS_FRAME_WALK

using capture_function = std::size_t (*)(std::byte*, std::size_t) noexcept;

std::vector<std::uint64_t> frames_of(const std::byte* bytes, std::size_t size) {
    std::uint32_t count = 0;
    std::memcpy(&count, bytes, sizeof(count));
    REQUIRE(size == stint::detail::native_stack_bytes(count));
    std::vector<std::uint64_t> frames(count);
    std::memcpy(frames.data(), bytes + stint::detail::native_stack_header_bytes, count * sizeof(std::uint64_t));
    return frames;
}

// One call site for both captures, so that their first frames are the same address.
__attribute__((noinline)) std::vector<std::uint64_t> take_stack(capture_function capture, std::size_t depth) {
    std::array<std::byte, stint::detail::native_stack_bytes(128)> buffer{};
    const std::size_t used = capture(buffer.data(), depth);
    asm volatile("" ::: "memory");  // keeps the call from becoming a tail call
    return frames_of(buffer.data(), used);
}

__attribute__((noinline)) std::vector<std::uint64_t> inner(capture_function capture, std::size_t depth) {
    auto frames = take_stack(capture, depth);
    asm volatile("" ::: "memory");
    return frames;
}

__attribute__((noinline)) std::vector<std::uint64_t> outer(capture_function capture, std::size_t depth) {
    auto frames = inner(capture, depth);
    asm volatile("" ::: "memory");
    return frames;
}

__attribute__((noinline)) std::vector<std::uint64_t> recurse(capture_function capture, std::size_t depth, int n) {
    auto frames = n == 0 ? take_stack(capture, depth) : recurse(capture, depth, n - 1);
    asm volatile("" ::: "memory");
    return frames;
}

constexpr capture_function walked = &stint::detail::capture_native_stack_walked;
constexpr capture_function unwound = &stint::detail::capture_native_stack_unwound;

struct both_stacks {
    std::vector<std::uint64_t> walk;
    std::vector<std::uint64_t> unwind;
};

// Both captures from one call site in each function, so that equal stacks are equal addresses.
__attribute__((noinline)) both_stacks take_both(std::size_t depth, int recursion = -1) {
    std::vector<std::uint64_t> taken[2];
    for (int i = 0; i < 2; ++i) {
        asm volatile("" : "+r"(i));  // an unknown trip count: the loop is not unrolled into two calls
        const capture_function capture = i == 0 ? walked : unwound;
        taken[i] = recursion < 0 ? outer(capture, depth) : recurse(capture, depth, recursion);
    }
    return {std::move(taken[0]), std::move(taken[1])};
}

// Where the first frame in `function` is in `frames` (named as at drain), or frames.size().
std::size_t frame_in(const std::vector<std::uint64_t>& frames, std::string_view function) {
    stint::detail::native_symbolizer symbols;
    for (std::size_t i = 0; i < frames.size(); ++i) {
        if (symbols.name_of(frames[i]).find(function) != std::string::npos) return i;
    }
    return frames.size();
}

// The walk ends where frame pointers do (in a C library built without them): it must reach
// `function`, and take the unwinder's frames up to there.
void check_walk_reaches(const both_stacks& stacks, std::string_view function) {
    const std::size_t last = frame_in(stacks.unwind, function);
    CAPTURE(function);
    REQUIRE(last >= 4);  // take_stack, inner, outer, take_both, then the caller
    REQUIRE(last < stacks.unwind.size());
    REQUIRE(stacks.walk.size() > last);
    CHECK(std::equal(stacks.walk.begin(), stacks.walk.begin() + static_cast<std::ptrdiff_t>(last) + 1,
                     stacks.unwind.begin()));
}

void* small_stack_thread(void* arg) {
    *static_cast<both_stacks*>(arg) = take_both(32);
    return nullptr;
}

__attribute__((noinline)) void walked_leaf(int n) {
    STINT_OP(stint::config<stint::with_stack<stint::native_frames<16>>>, "walked::op");
    asm volatile("" ::"r"(n) : "memory");
}

__attribute__((noinline)) void walked_caller(int n) {
    walked_leaf(n);
    asm volatile("" ::: "memory");
}

#endif

}  // namespace

#if STINT_DETAIL_HAS_FRAME_WALK

TEST_CASE("the frame-pointer walk takes the unwinder's frames where frame pointers exist") {
    // take_stack, inner, outer, take_both, this test case's function, doctest's (built with frame
    // pointers), main(); the C library below main() may have none.
    check_walk_reaches(take_both(32), "main");

    SUBCASE("to the depth asked, not one frame more") {
        for (std::size_t depth : {std::size_t{1}, std::size_t{2}, std::size_t{3}}) {
            CAPTURE(depth);
            const both_stacks cut = take_both(depth);
            CHECK(cut.walk.size() == depth);
            CHECK(cut.walk == cut.unwind);
        }
    }
    SUBCASE("through deep recursion, cut at the depth") {
        const both_stacks deep = take_both(128, 200);
        const auto& walk = deep.walk;
        REQUIRE(walk.size() == 128);
        CHECK(walk == deep.unwind);
        // take_stack's call in recurse, then recurse's call of itself, 126 times.
        CHECK(std::count(walk.begin() + 2, walk.end(), walk[2]) == 126);
    }
}

TEST_CASE("the frame-pointer walk works on a thread with a small stack") {
    pthread_attr_t attributes;
    REQUIRE(pthread_attr_init(&attributes) == 0);
    REQUIRE(pthread_attr_setstacksize(&attributes, 64 * 1024) == 0);
    both_stacks result;
    pthread_t thread;
    REQUIRE(pthread_create(&thread, &attributes, small_stack_thread, &result) == 0);
    REQUIRE(pthread_join(thread, nullptr) == 0);
    pthread_attr_destroy(&attributes);
    check_walk_reaches(result, "small_stack_thread(void*)");
}

TEST_CASE("the frame-pointer walk stays inside the stack and ends on a broken chain") {
    // A fake stack of frame records {next, return address}; the walk reads only within [low, high).
    alignas(16) std::array<std::uintptr_t, 32> stack{};
    const auto low = reinterpret_cast<std::uintptr_t>(stack.data());
    const auto high = low + sizeof(stack);
    const auto at = [&](std::size_t slot) { return low + slot * sizeof(std::uintptr_t); };
    constexpr std::uintptr_t code = 0x401000;
    std::array<std::byte, 8 * sizeof(std::uint64_t)> out{};
    const auto walk = [&](std::size_t from, std::size_t depth = 8) {
        std::vector<std::uint64_t> frames(stint::detail::walk_frame_chain(at(from), low, high, out.data(), depth));
        std::memcpy(frames.data(), out.data(), frames.size() * sizeof(std::uint64_t));
        return frames;
    };
    const auto record = [&](std::size_t slot, std::uintptr_t next, std::uintptr_t returns_to) {
        stack[slot] = next;
        stack[slot + 1] = returns_to;
    };

    SUBCASE("a chain that ends in a null frame pointer") {
        record(2, at(8), code + 1);
        record(8, at(20), code + 2);
        record(20, 0, code + 3);
        CHECK(walk(2) == std::vector<std::uint64_t>{code + 1, code + 2, code + 3});
        CHECK(walk(2, 2) == std::vector<std::uint64_t>{code + 1, code + 2});
    }
    SUBCASE("a frame pointer that does not go up: itself, or below") {
        record(4, at(4), code + 1);
        CHECK(walk(4) == std::vector<std::uint64_t>{code + 1});
        record(10, at(2), code + 2);
        CHECK(walk(10) == std::vector<std::uint64_t>{code + 2});
    }
    SUBCASE("a frame pointer at or past the stack's top, or misaligned") {
        record(2, high - sizeof(std::uintptr_t), code + 1);  // its record would end past the top
        CHECK(walk(2) == std::vector<std::uint64_t>{code + 1});
        record(2, high, code + 1);
        CHECK(walk(2) == std::vector<std::uint64_t>{code + 1});
        record(2, at(6) + 4, code + 1);
        CHECK(walk(2) == std::vector<std::uint64_t>{code + 1});
        record(2, ~std::uintptr_t{0} - 7, code + 1);
        CHECK(walk(2) == std::vector<std::uint64_t>{code + 1});
    }
    SUBCASE("a return address that cannot be code: zero, the first page, the stack") {
        record(2, at(6), code + 1);
        record(6, at(10), 0);
        CHECK(walk(2) == std::vector<std::uint64_t>{code + 1});
        record(6, at(10), 4095);
        CHECK(walk(2) == std::vector<std::uint64_t>{code + 1});
        record(6, at(10), at(12));
        CHECK(walk(2) == std::vector<std::uint64_t>{code + 1});
    }
    SUBCASE("a first frame outside the stack reads nothing") {
        CHECK(stint::detail::walk_frame_chain(high, low, high, out.data(), 8) == 0);
        CHECK(stint::detail::walk_frame_chain(low - 16, low, high, out.data(), 8) == 0);
        CHECK(stint::detail::walk_frame_chain(at(1) + 1, low, high, out.data(), 8) == 0);
        CHECK(stint::detail::walk_frame_chain(at(2), low, low + 8, out.data(), 8) == 0);
    }
}

TEST_CASE("with_stack<native> ops walk frame pointers where STINT_NATIVE_STACK_FRAME_POINTERS is 1") {
    static_assert(STINT_NATIVE_STACK_FRAME_POINTERS == 1);
    using walking = stint::config<stint::with_stack<stint::native_frames<16>>>;
    stint::profiler<walking> prof;
    prof.start();
    walked_caller(1);
    prof.stop();
    REQUIRE(prof.events().size() == 1);
    const auto stack = prof.events().stack(*prof.events().begin());
    REQUIRE(stack.size() >= 3);
    CHECK(stack[0].find("walked_leaf(int)") != std::string::npos);
    CHECK(stack[1].find("walked_caller(int)") != std::string::npos);
    CHECK(stack[2].find("DOCTEST_ANON_FUNC") != std::string::npos);
}

#endif
