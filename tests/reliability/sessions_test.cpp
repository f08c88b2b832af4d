// Sessions: back-to-back, stopped under load, destroyed mid-window, driven from several threads; late
// records; a failing on_trace_ready.

#include <doctest/doctest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <stint/recording/registry.hpp>
#include "../test_util.hpp"
#include "size.hpp"

TEST_CASE("1,000 back-to-back sessions each keep exactly what they recorded") {
    const int sessions = stint_test::sized(1000, 1000);
    std::uint64_t recorded = 0;
    for (int s = 0; s < sessions; ++s) {
        stint::profiler<> prof;
        prof.start();
        for (int i = 0; i <= s % 7; ++i) {
            STINT_SCOPE("outer");
            STINT_SCOPE("inner");
        }
        prof.stop();
        const stint::profiler_stats stats = prof.stats();
        REQUIRE(stats.recorded == static_cast<std::uint64_t>(2 * (s % 7 + 1)));
        REQUIRE(stats.dropped == 0);
        REQUIRE(prof.events().size() == stats.recorded + stats.overhead_events);
        recorded += stats.recorded;
    }
    CHECK(recorded > 0);
}

TEST_CASE("stop while 8 threads are inside scopes: no torn record, nesting intact, every session") {
    std::atomic<bool> quit{false};
    std::array<std::atomic<std::uint64_t>, 8> laps{};  // each thread's finished outer scopes
    std::vector<std::thread> threads;
    for (int t = 0; t < 8; ++t) {
        threads.emplace_back([&quit, &lap = laps[static_cast<std::size_t>(t)]] {
            while (!quit.load(std::memory_order_relaxed)) {
                {
                    STINT_SCOPE("outer");
                    STINT_SCOPE("inner");
                    // Mostly inside the scopes, and not so busy that 8 threads starve the one that stops.
                    std::this_thread::sleep_for(std::chrono::microseconds(20));
                }
                lap.fetch_add(1, std::memory_order_release);  // release: pairs with the stopper's acquire
            }
        });
    }
    const int sessions = stint_test::sized(500, 50);
    for (int s = 0; s < sessions; ++s) {
        stint::profiler<> prof;
        prof.start();
        std::array<std::uint64_t, 8> at_start{};
        for (std::size_t t = 0; t < 8; ++t) at_start[t] = laps[t].load(std::memory_order_acquire);
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
        // Two laps more on every thread: at least one outer scope each opened and closed in the session.
        for (std::size_t t = 0; t < 8; ++t) {
            while (laps[t].load(std::memory_order_acquire) < at_start[t] + 2) std::this_thread::yield();
        }
        prof.stop();
        const stint::event_list& events = prof.events();
        std::uint64_t program = 0;
        std::uint64_t outers = 0;
        std::uint64_t inners = 0;
        std::set<std::uint32_t> outer_threads;
        for (const stint::event& e : events) {
            if (e.kind == stint::event_kind::overhead) continue;
            ++program;
            REQUIRE(e.end_ns >= e.start_ns);
            REQUIRE((e.name == "outer" || e.name == "inner"));
            if (e.name == "inner" && e.parent != stint::no_index) REQUIRE(events[e.parent].name == "outer");
            if (e.name == "outer") {
                REQUIRE(e.parent == stint::no_index);
                ++outers;
                outer_threads.insert(e.thread);
            } else {
                ++inners;
            }
        }
        REQUIRE(program == prof.stats().recorded);
        REQUIRE(program == outers + inners);
        REQUIRE(outer_threads.size() == 8);  // every thread's whole lap is in the session
        // Scopes nest, so the two names alternate on each thread: a session's edges can split at most
        // one pair per thread at each end.
        REQUIRE(inners <= outers + 2 * 8);
        REQUIRE(outers <= inners + 2 * 8);
        REQUIRE(prof.stats().dropped == 0);
    }
    quit = true;
    for (std::thread& t : threads) t.join();
}

TEST_CASE("a scheduled profiler destroyed mid-window delivers the partial window") {
    int windows = 0;
    std::uint64_t steps_seen = 0;
    {
        stint::profiler<> prof({.schedule = stint::schedule({.wait = 1, .warmup = 1, .active = 3}),
                                .on_trace_ready = [&](stint::profiler<>& p) {
                                    ++windows;
                                    for (const stint::event& e : p.events()) {
                                        if (e.name.starts_with("ProfilerStep#")) ++steps_seen;
                                    }
                                }});
        prof.start();
        for (int i = 0; i < 4; ++i) {  // steps 0 (wait) and 1 (warmup), then 2 and 3 of the window 2..4
            STINT_SCOPE("work");
            prof.step();
        }
        CHECK(prof.is_running());
    }
    CHECK(windows == 1);
    CHECK(steps_seen == 3);  // ProfilerStep#2, #3 and the unfinished #4
}

TEST_CASE("start, stop, step and exports from several threads on one profiler take turns") {
    stint_test::temp_dir dir;
    SUBCASE("step() from 4 threads counts every step") {
        std::atomic<int> windows{0};
        stint::profiler<> prof({.schedule = stint::schedule({.wait = 1, .warmup = 1, .active = 2}),
                                .on_trace_ready = [&](stint::profiler<>& p) {
                                    ++windows;
                                    CHECK(p.stats().dropped == 0);
                                }});
        const int per_thread = stint_test::sized(2000, 500);
        std::vector<std::thread> threads;
        for (int t = 0; t < 4; ++t) {
            threads.emplace_back([&] {
                for (int i = 0; i < per_thread; ++i) {
                    STINT_SCOPE("step work");
                    prof.step();
                }
            });
        }
        std::thread exporter([&] {
            for (int i = 0; i < 20; ++i) prof.export_chrome_trace(dir.file("during.json"));
        });
        for (std::thread& t : threads) t.join();
        exporter.join();
        CHECK(prof.step_num() == 4 * per_thread);
        // A window ends every 4 steps (wait, warmup, active, active).
        CHECK(windows.load() == 4 * per_thread / 4);
        prof.stop();
        CHECK(stint_test::read_json(dir.file("during.json")).contains("traceEvents"));
    }
    SUBCASE("start() and stop() racing from 2 threads: each started session is saved once") {
        std::atomic<int> windows{0};
        stint::profiler<> prof({.on_trace_ready = [&](stint::profiler<>&) { ++windows; }});
        std::atomic<int> started{0};
        std::thread starter([&] {
            for (int i = 0; i < 2000; ++i) {
                try {
                    prof.start();
                    ++started;
                } catch (const std::logic_error&) {
                    // already recording: the other thread has not stopped it yet
                }
                STINT_SCOPE("between");
            }
        });
        std::thread stopper([&] {
            for (int i = 0; i < 2000; ++i) {
                prof.stop();
                try {
                    prof.export_chrome_trace(dir.file("racing.json"));
                } catch (const std::logic_error&) {
                    // the starter started again: results are read after stop()
                }
            }
        });
        starter.join();
        stopper.join();
        prof.stop();
        CHECK(started.load() > 0);
        CHECK(windows.load() == started.load());
    }
}

TEST_CASE("a record that reaches its buffer after its session's drain is counted as late") {
    using namespace stint::detail;
    static constexpr site late_site{"late scope", stint::event_kind::user_annotation, payload_kind::none, {}};
    stint_test::temp_dir dir;
    std::uint32_t state = 0;
    std::uint64_t begin = 0;
    std::uint64_t end = 0;
    std::mutex mutex;
    std::condition_variable wake;
    int phase = 0;
    const auto advance_to = [&](int next) {
        std::lock_guard lock(mutex);
        phase = next;
        wake.notify_all();
    };
    const auto wait_for = [&](int wanted) {
        std::unique_lock lock(mutex);
        wake.wait(lock, [&] { return phase == wanted; });
    };
    // A thread that records in session A, is "preempted" between its scope's end and its append
    // across A's stop, and appends afterwards; then records nothing in session B.
    std::thread preempted([&] {
        wait_for(1);  // A records
        { STINT_SCOPE("on time"); }  // registers the thread in session A
        state = recording.value.load();
        begin = stint::read_ticks();
        end = stint::read_ticks();
        advance_to(2);
        wait_for(3);  // A has been stopped and drained
        append_record(&late_site, current_depth(), begin, end, state);  // ended before the stop
        append_record(&late_site, current_depth(), stint::read_ticks(), stint::read_ticks(), state);  // ended after it
        advance_to(4);
    });
    stint::profiler<> a;
    a.start();
    advance_to(1);
    wait_for(2);
    a.stop();
    advance_to(3);
    wait_for(4);
    preempted.join();
    CHECK(a.stats().late_records == 0);
    CHECK(a.stats().recorded == 1);
    for (const stint::event& e : a.events()) CHECK(e.name != "late scope");

    stint::profiler<stint::config<stint::with_stack<>>> b;
    b.start();
    { STINT_SCOPE("in b"); }
    b.stop();
    // Found in B's drain: only the record that ended before A stopped is late; the other belongs to
    // no window.
    CHECK(b.stats().late_records == 1);
    CHECK(b.events().late() == 1);
    b.export_chrome_trace(dir.file("b.json"));
    CHECK(stint_test::read_json(dir.file("b.json")).at("stint").at("late") == 1);
    b.export_stacks(dir.file("b.stacks"), "self_cpu_time_total", stint::stack_frames::names);
    CHECK(stint_test::read_file(dir.file("b.stacks")).find("[stint]_1_records_late 1\n") != std::string::npos);
    const std::uint64_t total = the_registry().late_records_total();
    CHECK(total >= 1);

    // Counted once: a later session finds nothing new.
    stint::profiler<> c;
    c.start();
    c.stop();
    CHECK(c.stats().late_records == 0);
    CHECK(the_registry().late_records_total() == total);
}

TEST_CASE("a late record on a thread that records again is counted when its next session begins") {
    using namespace stint::detail;
    static constexpr site late_site{"late again", stint::event_kind::user_annotation, payload_kind::none, {}};
    stint::profiler<> a;
    a.start();
    { STINT_SCOPE("on time"); }
    const std::uint32_t state = recording.value.load();
    const std::uint64_t begin = stint::read_ticks();
    const std::uint64_t end = stint::read_ticks();
    a.stop();
    append_record(&late_site, current_depth(), begin, end, state);
    stint::profiler<> b;
    b.start();
    { STINT_SCOPE("in b"); }  // this thread's first record of B finds the late one
    b.stop();
    CHECK(b.stats().late_records == 1);
    CHECK(b.stats().recorded == 1);
}

TEST_CASE("an exception from on_trace_ready: the step reports it, the last file stays, the next window works") {
    stint_test::temp_dir dir;
    const std::string path = dir.file("window.json");
    int window = 0;
    stint::profiler<> prof({.schedule = stint::schedule({.active = 1}), .on_trace_ready = [&](stint::profiler<>& p) {
                                ++window;
                                if (window == 2) throw std::runtime_error("callback failed in window 2");
                                p.export_chrome_trace(path);
                            }});
    prof.start();
    { STINT_SCOPE("w1"); }
    prof.step();
    const std::string first = stint_test::read_file(path);
    CHECK(first.find("\"w1\"") != std::string::npos);
    { STINT_SCOPE("w2"); }
    CHECK_THROWS_WITH(prof.step(), "callback failed in window 2");
    CHECK(stint_test::read_file(path) == first);
    { STINT_SCOPE("w3"); }
    prof.step();
    CHECK(stint_test::read_file(path).find("\"w3\"") != std::string::npos);
    CHECK(prof.step_num() == 3);
    prof.stop();
}

TEST_CASE("a late record that needs its thread's first or next chunk after the stop is counted, not lost") {
    using namespace stint::detail;
    static constexpr site late_site{"late, no room", stint::event_kind::user_annotation, payload_kind::none, {}};
    std::mutex mutex;
    std::condition_variable wake;
    int phase = 0;
    const auto advance_to = [&](int next) {
        std::lock_guard lock(mutex);
        phase = next;
        wake.notify_all();
    };
    const auto wait_for = [&](int wanted) {
        std::unique_lock lock(mutex);
        wake.wait(lock, [&] { return phase == wanted; });
    };
    std::uint32_t state = 0;
    // `fresh` has not recorded in session A: its late record is its first of the session. `full` has
    // filled its chunk: its late record needs the next one.
    std::thread fresh([&] {
        wait_for(1);
        const std::uint64_t begin = stint::read_ticks();
        const std::uint64_t end = stint::read_ticks();
        advance_to(2);
        wait_for(3);
        append_record(&late_site, current_depth(), begin, end, state);
        advance_to(4);
    });
    std::thread full([&] {
        wait_for(4);
        do {
            STINT_INSTANT("filling");
        } while (static_cast<std::size_t>(tls_buffer.limit - tls_buffer.cursor) >= sizeof(record));
        const std::uint64_t begin = stint::read_ticks();
        const std::uint64_t end = stint::read_ticks();
        advance_to(5);
        wait_for(6);
        append_record(&late_site, current_depth(), begin, end, state);                            // late
        append_record(&late_site, current_depth(), stint::read_ticks(), stint::read_ticks(), state);  // after
        advance_to(7);
    });
    stint::profiler<> a;
    a.start();
    state = recording.value.load();
    advance_to(1);
    wait_for(2);
    advance_to(4);  // `fresh` waits for 3: let `full` fill its chunk first
    wait_for(5);
    a.stop();
    advance_to(6);
    wait_for(7);
    advance_to(3);
    wait_for(4);
    fresh.join();
    full.join();
    const std::uint64_t recorded_in_a = a.stats().recorded;
    CHECK(a.stats().dropped == 0);
    CHECK(recorded_in_a > 0);  // the instants that filled the chunk
    stint::profiler<> b;
    b.start();
    b.stop();
    CHECK(b.stats().late_records == 2);
    CHECK(b.stats().dropped == 0);
}

TEST_CASE("a profiler destroyed inside its own on_trace_ready stops the process with a message") {
    int fds[2];
    REQUIRE(::pipe(fds) == 0);
    const pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        std::signal(SIGABRT, SIG_DFL);  // not doctest's crash report: the parent checks the signal
        ::close(fds[0]);
        ::dup2(fds[1], STDERR_FILENO);  // the default warning handler's line goes to the parent
        stint::set_warning_handler(stint::default_warning_handler);
        auto* prof = new stint::profiler<>({.on_trace_ready = [](stint::profiler<>& p) { delete &p; }});
        prof->start();
        prof->stop();
        std::_Exit(0);  // not reached
    }
    ::close(fds[1]);
    std::string said;
    char block[4096];
    for (ssize_t n = 0; (n = ::read(fds[0], block, sizeof block)) != 0;) {
        if (n > 0) said.append(block, static_cast<std::size_t>(n));
        else if (errno != EINTR) break;
    }
    ::close(fds[0]);
    int status = 0;
    REQUIRE(waitpid(pid, &status, 0) == pid);
    CHECK(WIFSIGNALED(status));
    CHECK(WTERMSIG(status) == SIGABRT);
    INFO("the child's stderr: " << said);
    CHECK(said.find("stint: warning: a profiler was destroyed inside its own on_trace_ready; destroy it after "
                    "the step() or stop() that called the callback returns\n") != std::string::npos);
}
