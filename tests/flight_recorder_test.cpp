// The flight recorder (design §7 "Flight recorder"): a ring that overwrites each thread's oldest records,
// counted exactly; dumps while recording continues; the slow-step trigger.

#include <doctest/doctest.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include <pthread.h>
#include <signal.h>
#include <sys/mman.h>

#include "stint/stint.hpp"
#include "stint/profiler/flight_recorder.hpp"
#include "test_util.hpp"

namespace {

constexpr std::size_t flight_chunk = stint::detail::chunk::total_bytes;

void flight_record_scopes(std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) {
        STINT_SCOPE("flight.work");
    }
}

/// The "flightRecorder" entry of a dump's trace for thread `tid`.
nlohmann::json flight_thread_entry(const nlohmann::json& trace, std::uint64_t tid) {
    for (const auto& t : trace.at("flightRecorder").at("threads")) {
        if (t.at("tid").get<std::uint64_t>() == tid) return t;
    }
    return {};
}

std::uint64_t flight_this_tid() { return stint::detail::current_os_tid(); }

/// A key whose value, set by a thread, gets the thread's alternate signal stack as the thread ends: a
/// key's destructor runs after every thread_local object's (stint's exit guard among them).
pthread_key_t flight_stack_at_exit_key() {
    static const pthread_key_t key = [] {
        pthread_key_t made{};
        ::pthread_key_create(&made, [](void* seen) { ::sigaltstack(nullptr, static_cast<stack_t*>(seen)); });
        return made;
    }();
    return key;
}

struct flight_thread_stacks {
    stack_t while_recording{};
    stack_t at_exit{};
};

/// Runs a thread that records a scope, then calls `after_recording`: its alternate signal stack as it
/// records and once stint's exit guard has run.
template <class After>
flight_thread_stacks flight_stacks_of_thread(After after_recording) {
    flight_thread_stacks seen;
    std::thread([&] {
        // A sanitizer may give each thread a stack of its own (ASan does): this one starts with none.
        stack_t off{};
        off.ss_flags = SS_DISABLE;
        ::sigaltstack(&off, nullptr);
        ::pthread_setspecific(flight_stack_at_exit_key(), &seen.at_exit);
        { STINT_SCOPE("flight.stack"); }
        ::sigaltstack(nullptr, &seen.while_recording);
        after_recording();
    }).join();
    return seen;
}

/// errno as a handler stint's crash handler chains to saw it.
std::atomic<int> flight_errno_in_chained{-1};
void flight_chained_handler(int, siginfo_t*, void*) { flight_errno_in_chained.store(errno); }

stint::profiler_options<> flight_options(std::size_t budget, std::string dir = {}) {
    stint::profiler_options<> options;
    options.flight_recorder = stint::flight_recorder_options{.budget_bytes = budget, .dump_dir = std::move(dir)};
    return options;
}

}  // namespace

TEST_CASE("a flight recorder overwrites each thread's oldest records and counts them exactly") {
    stint_test::temp_dir dir;
    const std::size_t budget = 4 * flight_chunk;
    stint::profiler<> prof(flight_options(budget));
    prof.start();
    constexpr std::size_t total = 100'000;  // 2.4 MB of records through a 256 KiB ring
    flight_record_scopes(total);

    SUBCASE("a dump while recording: the kept and the overwritten add up to what was recorded") {
        const stint::flight_dump d = prof.dump(dir / "now.pt.trace.json");
        const nlohmann::json trace = stint_test::read_json(d.path);
        const std::size_t kept = stint_test::count_named(stint_test::timed_events(trace), "flight.work");
        const nlohmann::json mine = flight_thread_entry(trace, flight_this_tid());
        REQUIRE_FALSE(mine.is_null());
        const auto overwritten = mine.at("overwritten").get<std::uint64_t>();
        CHECK(overwritten > 0);
        CHECK(kept + overwritten == total);
        CHECK(trace.at("flightRecorder").at("overwritten").get<std::uint64_t>() >= overwritten);
        CHECK(d.overwritten == trace.at("flightRecorder").at("overwritten").get<std::uint64_t>());
        // The ring holds at most its budget: fewer records than it could hold at 24 bytes each.
        CHECK(kept * 24 <= budget);
        // Complete from the latest end among the overwritten: every kept record ended at or after it.
        const double complete_from = mine.at("complete_from_us").get<double>();
        CHECK(complete_from > 0);
        for (const auto& e : stint_test::timed_events(trace)) {
            if (e.at("name") != "flight.work" || e.at("tid").get<std::uint64_t>() != flight_this_tid()) continue;
            CHECK(e.at("ts").get<double>() + e.at("dur").get<double>() >= complete_from - 0.001);
        }
        // The table beside it says the same.
        CHECK(d.table_path == dir / "now.pt.trace.txt");
        const std::string table = stint_test::read_file(d.table_path);
        CHECK(table.find("records overwritten") != std::string::npos);
        CHECK(table.find("flight.work") != std::string::npos);
        // Recording went on: more records after the dump, and the stop's window counts them all.
        flight_record_scopes(total);
        prof.stop();
        std::size_t at_stop = stint_test::count_named(prof.events(), "flight.work");
        const nlohmann::json stopped = [&] {
            prof.export_chrome_trace(dir / "stop.json");
            return stint_test::read_json(dir / "stop.json");
        }();
        const auto stop_overwritten = flight_thread_entry(stopped, flight_this_tid()).at("overwritten").get<std::uint64_t>();
        CHECK(at_stop + stop_overwritten == 2 * total);
        CHECK(prof.stats().buffer_bytes <= budget);
    }
    SUBCASE("a Perfetto dump carries the counts too, and the table") {
        const stint::flight_dump d = prof.dump(dir / "now.pftrace");
        CHECK(std::filesystem::file_size(d.path) > 0);
        CHECK(d.table_path == dir / "now.txt");
        const std::string bytes = stint_test::read_file(d.path);
        CHECK(bytes.find("overwritten") != std::string::npos);
        CHECK(bytes.find("complete_from_ns") != std::string::npos);
        CHECK(d.overwritten > 0);
        prof.stop();
    }
    SUBCASE("a gzip dump") {
        const stint::flight_dump d = prof.dump(dir / "now.pt.trace.json.gz");
        const nlohmann::json trace = nlohmann::json::parse(stint_test::read_gzip(d.path));
        CHECK(trace.at("flightRecorder").at("overwritten").get<std::uint64_t>() == d.overwritten);
        prof.stop();
    }
}

TEST_CASE("a flight recorder with a time span keeps only the records of that span") {
    stint::profiler_options<> options;
    options.flight_recorder = stint::flight_recorder_options{.budget_bytes = 64 * flight_chunk,
                                                             .span = std::chrono::microseconds(1)};
    stint::profiler<> prof(options);
    prof.start();
    constexpr std::size_t total = 200'000;
    flight_record_scopes(total);
    prof.stop();
    const std::size_t kept = stint_test::count_named(prof.events(), "flight.work");
    stint_test::temp_dir dir;
    prof.export_chrome_trace(dir / "t.json");
    const auto overwritten =
        flight_thread_entry(stint_test::read_json(dir / "t.json"), flight_this_tid()).at("overwritten").get<std::uint64_t>();
    CHECK(kept + overwritten == total);
    // Each chunk change overwrote every chunk but the one being left: two chunks at most stay.
    CHECK(kept <= 2 * flight_chunk / 24);
    CHECK(prof.stats().buffer_bytes <= 3 * flight_chunk);
}

TEST_CASE("two threads record while dumps copy their rings") {
    stint_test::temp_dir dir;
    stint::profiler<> prof(flight_options(16 * flight_chunk));
    prof.start();
    std::atomic<bool> stop{false};
    std::atomic<std::uint64_t> done[2] = {0, 0};
    std::vector<std::thread> threads;
    for (int t = 0; t < 2; ++t) {
        threads.emplace_back([&, t] {
            while (!stop.load(std::memory_order_relaxed)) {
                flight_record_scopes(100);
                done[t].fetch_add(100, std::memory_order_relaxed);
            }
        });
    }
    for (int i = 0; i < 4; ++i) {
        while (done[0].load() + done[1].load() < static_cast<std::uint64_t>(i + 1) * 200'000) std::this_thread::yield();
        const stint::flight_dump d = prof.dump(dir / ("d" + std::to_string(i) + ".pt.trace.json"));
        const nlohmann::json trace = stint_test::read_json(d.path);
        // Each event whole and each thread's records a true window: as many as recorded at most.
        std::uint64_t kept = stint_test::count_named(stint_test::timed_events(trace), "flight.work");
        CHECK(kept + d.overwritten <= done[0].load() + done[1].load() + 200);
        CHECK(kept > 0);
    }
    stop = true;
    for (std::thread& t : threads) t.join();
    prof.stop();
    prof.export_chrome_trace(dir / "stop.json");
    const nlohmann::json trace = stint_test::read_json(dir / "stop.json");
    const auto overwritten = trace.at("flightRecorder").at("overwritten").get<std::uint64_t>();
    CHECK(stint_test::count_named(prof.events(), "flight.work") + overwritten == done[0].load() + done[1].load());
}

TEST_CASE("a flight recorder refuses what it cannot do, at start") {
    stint_test::temp_dir dir;
    SUBCASE("a budget too small for a chunk per thread") {
        stint::profiler<> prof(flight_options(1000));
        try {
            prof.start();
            FAIL("start() accepted a 1000-byte ring");
        } catch (const std::invalid_argument& e) {
            const std::string what = e.what();
            CHECK(what.starts_with("stint: flight_recorder.budget_bytes = 1000 is too small: the ring needs one 64 KiB "
                                   "chunk for each of the "));
            CHECK(what.find("at least ") != std::string::npos);
        }
        CHECK_FALSE(prof.is_running());
    }
    SUBCASE("a dump directory that cannot be written") {
        auto options = flight_options(4 * flight_chunk, dir / "missing");
        options.flight_recorder->slow_step.factor = 3;
        stint::profiler<> prof(options);
        CHECK_THROWS_WITH_AS(prof.start(),
                             doctest::Contains(("stint: flight_recorder.dump_dir \"" + dir / "missing" + "\" cannot be written").c_str()),
                             std::system_error);
    }
    SUBCASE("a dump path that cannot be written, and a format it does not know") {
        stint::profiler<> prof(flight_options(4 * flight_chunk));
        prof.start();
        CHECK_THROWS_AS(prof.dump(dir / "missing/x.pt.trace.json"), std::system_error);
        CHECK_THROWS_WITH_AS(prof.dump(dir / "x.csv"),
                             doctest::Contains("give .json, .json.gz or .pftrace"), std::invalid_argument);
        prof.stop();
        CHECK_THROWS_WITH_AS(prof.dump(dir / "x.json"), "stint: dump(): the flight recorder is not recording; call start() first",
                             std::logic_error);
    }
    SUBCASE("dump() of a profiler that is no flight recorder") {
        stint::profiler<> prof;
        prof.start();
        CHECK_THROWS_WITH_AS(prof.dump(dir / "x.json"),
                             "stint: dump(): this profiler is not a flight recorder; set profiler_options::flight_recorder",
                             std::logic_error);
        prof.stop();
    }
    SUBCASE("options it cannot take") {
        auto options = flight_options(4 * flight_chunk);
        options.schedule = stint::schedule({.warmup = 1, .active = 1});
        CHECK_THROWS_WITH_AS(stint::profiler<>{options}, doctest::Contains("it takes no schedule"), std::invalid_argument);
        options = flight_options(4 * flight_chunk);
        options.flight_recorder->slow_step.factor = 0.5;
        CHECK_THROWS_WITH_AS(stint::profiler<>{options}, doctest::Contains("give a factor above 1"), std::invalid_argument);
    }
}

TEST_CASE("the slow-step detector fires once for one slow step in 1,000 and not for noise") {
    constexpr std::int64_t ms = 1'000'000;
    // Steps of 10 ms with +-30 % noise from a fixed sequence.
    std::uint64_t seed = 12345;
    const auto noisy = [&] {
        seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
        return 10 * ms + static_cast<std::int64_t>((seed >> 33) % (6 * ms)) - 3 * ms;
    };
    SUBCASE("one slow step in 1,000") {
        stint::detail::slow_step_detector detector(3.0, 5 * ms, 60'000 * ms);
        std::int64_t now = 0;
        int fired = 0;
        int fired_at = -1;
        for (int i = 0; i < 1000; ++i) {
            const std::int64_t d = i == 700 ? 50 * ms : noisy();
            now += d;
            if (detector.observe(d, now)) {
                ++fired;
                fired_at = i;
            }
        }
        CHECK(fired == 1);
        CHECK(fired_at == 700);
    }
    SUBCASE("noise alone") {
        stint::detail::slow_step_detector detector(3.0, 5 * ms, 60'000 * ms);
        std::int64_t now = 0;
        int fired = 0;
        for (int i = 0; i < 1000; ++i) {
            const std::int64_t d = noisy();
            now += d;
            fired += detector.observe(d, now) ? 1 : 0;
        }
        CHECK(fired == 0);
    }
    SUBCASE("a program that slows down for good writes once per interval") {
        stint::detail::slow_step_detector detector(3.0, 5 * ms, 1'000 * ms);
        std::int64_t now = 0;
        int fired = 0;
        for (int i = 0; i < 1000; ++i) {
            const std::int64_t d = i < 500 ? noisy() : 40 * ms;  // 500 steps of 40 ms: 20 s
            now += d;
            fired += detector.observe(d, now) ? 1 : 0;
        }
        // Slow until the median itself catches up (about 50 steps, 2 s): at most one per second.
        CHECK(fired >= 1);
        CHECK(fired <= 3);
    }
    SUBCASE("a short step is never slow, however fast the others") {
        stint::detail::slow_step_detector detector(3.0, 5 * ms, 0);
        std::int64_t now = 0;
        int fired = 0;
        for (int i = 0; i < 100; ++i) {
            const std::int64_t d = i == 50 ? 4 * ms : ms / 100;
            now += d;
            fired += detector.observe(d, now) ? 1 : 0;
        }
        CHECK(fired == 0);
    }
}

TEST_CASE("a slow step dumps the last steps to the dump directory, named by its step number") {
    stint_test::temp_dir dir;
    auto options = flight_options(16 * flight_chunk, dir.path().string());
    options.flight_recorder->slow_step = {.factor = 4, .min_duration = std::chrono::milliseconds(40), .steps = 3};
    stint::profiler<> prof(options);
    prof.start();
    for (int i = 0; i < 30; ++i) {
        {
            STINT_SCOPE("flight.step_work");
            if (i == 20) std::this_thread::sleep_for(std::chrono::milliseconds(200));
        }
        prof.step();
    }
    prof.stop();
    const std::vector<std::string> files = stint_test::entries(dir.path());
    REQUIRE(std::find(files.begin(), files.end(), "slow_step_20.pt.trace.json") != files.end());
    CHECK(std::find(files.begin(), files.end(), "slow_step_20.pt.trace.txt") != files.end());
    const nlohmann::json trace = stint_test::read_json(dir / "slow_step_20.pt.trace.json");
    CHECK(trace.at("flightRecorder").at("trigger") == "slow step");
    // The last three steps: 18, 19 and the slow 20.
    const auto events = stint_test::timed_events(trace);
    CHECK(stint_test::count_named(events, "flight.step_work") == 3);
    CHECK(stint_test::count_named(events, "ProfilerStep#20") == 1);
    CHECK(stint_test::count_named(events, "ProfilerStep#17") == 0);
}

TEST_CASE("the hang watchdog dumps once when no step comes, naming the open step and where threads were") {
    stint_test::temp_dir dir;
    auto options = flight_options(16 * flight_chunk, dir.path().string());
    options.flight_recorder->hang_timeout = std::chrono::milliseconds(100);
    stint::profiler<> prof(options);
    prof.start();
    for (int i = 0; i < 5; ++i) {
        { STINT_SCOPE("flight.step_work"); }
        prof.step();
    }
    { STINT_SCOPE("flight.before_the_hang"); }
    // The program hangs in step 5: no step() until the watchdog has dumped, and one timeout more.
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (prof.triggered_dumps().empty() && std::chrono::steady_clock::now() < give_up) {
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    const std::vector<stint::flight_dump> dumps = prof.triggered_dumps();
    REQUIRE(dumps.size() == 1);
    CHECK(dumps[0].path == dir / "hang_step_5.pt.trace.json");
    prof.step();
    prof.stop();
    const nlohmann::json trace = stint_test::read_json(dumps[0].path);
    const nlohmann::json& flight = trace.at("flightRecorder");
    CHECK(flight.at("trigger") == "hang");
    REQUIRE(flight.at("open_scopes").size() == 1);
    CHECK(flight.at("open_scopes")[0].at("name") == "ProfilerStep#5");
    CHECK(flight.at("open_scopes")[0].at("still_open") == true);
    CHECK(flight.at("open_scopes")[0].at("tid").get<std::uint64_t>() == flight_this_tid());
    bool seen = false;
    for (const auto& l : flight.at("last_seen")) {
        if (l.at("tid").get<std::uint64_t>() == flight_this_tid()) {
            seen = true;
            CHECK(l.at("name") == "flight.before_the_hang");
        }
    }
    CHECK(seen);
    CHECK(stint_test::count_named(stint_test::timed_events(trace), "ProfilerStep#4") == 1);
    const std::string table = stint_test::read_file(dumps[0].table_path);
    CHECK(table.find("still open on thread") != std::string::npos);
}

namespace {
/// Opens `levels` nested scopes, then waits inside the innermost until `release`.
void flight_nest(int levels, const std::atomic<bool>& release, std::atomic<bool>& inside) {
    STINT_SCOPE("flight.nested");
    if (levels > 1) {
        flight_nest(levels - 1, release, inside);
        return;
    }
    inside = true;
    while (!release) std::this_thread::sleep_for(std::chrono::milliseconds(1));
}
}  // namespace

TEST_CASE("a hang's dump names every thread's open scopes, outermost first, with their start times") {
    stint_test::temp_dir dir;
    auto options = flight_options(16 * flight_chunk, dir.path().string());
    options.flight_recorder->hang_timeout = std::chrono::milliseconds(100);
    stint::profiler<> prof(options);
    prof.start();
    for (int i = 0; i < 3; ++i) {
        { STINT_SCOPE("flight.step_work"); }
        prof.step();
    }
    std::atomic<bool> release{false};
    std::atomic<bool> worker_inside{false};
    std::atomic<bool> deep_inside{false};
    std::atomic<std::uint64_t> worker_tid{0};
    std::atomic<std::uint64_t> deep_tid{0};
    // A thread that starts during the session and hangs three scopes deep, one named at run time.
    std::thread worker([&] {
        worker_tid = flight_this_tid();
        { STINT_SCOPE("flight.worker_done_before"); }
        STINT_SCOPE("flight.worker_loop");
        stint::record_function waits("worker waits for a lock that never comes");
        STINT_SCOPE("flight.worker_wait");
        worker_inside = true;
        while (!release) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    });
    // One deeper than the stacks keep.
    std::thread deep([&] {
        deep_tid = flight_this_tid();
        flight_nest(70, release, deep_inside);
    });
    while (!worker_inside || !deep_inside) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    std::vector<stint::flight_dump> dumps;
    {
        STINT_SCOPE("flight.main_waits");
        const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(20);
        while ((dumps = prof.triggered_dumps()).empty() && std::chrono::steady_clock::now() < give_up) {
            std::this_thread::sleep_for(std::chrono::milliseconds(5));
        }
    }
    release = true;
    worker.join();
    deep.join();
    prof.stop();
    REQUIRE(dumps.size() == 1);
    const nlohmann::json flight = stint_test::read_json(dumps[0].path).at("flightRecorder");
    std::map<std::uint64_t, std::vector<nlohmann::json>> open;
    for (const auto& o : flight.at("open_scopes")) open[o.at("tid").get<std::uint64_t>()].push_back(o);
    const auto names = [&](std::uint64_t tid) {
        std::vector<std::string> out;
        for (const auto& o : open[tid]) out.push_back(o.at("name").get<std::string>());
        return out;
    };
    CHECK(names(flight_this_tid()) == std::vector<std::string>{"ProfilerStep#3", "flight.main_waits"});
    CHECK(names(worker_tid) ==
          std::vector<std::string>{"flight.worker_loop", "worker waits for a lock ...", "flight.worker_wait"});
    for (auto& [tid, scopes] : open) {
        for (std::size_t i = 0; i < scopes.size(); ++i) {
            CHECK(scopes[i].at("still_open") == true);
            CHECK(scopes[i].at("depth").get<std::uint32_t>() == i);
            if (i > 0) CHECK(scopes[i].at("start_us").get<double>() >= scopes[i - 1].at("start_us").get<double>());
        }
    }
    // The deep thread: its outermost 64 kept, the 6 below them counted.
    CHECK(names(deep_tid) == std::vector<std::string>(64, "flight.nested"));
    CHECK(flight.at("detail").get<std::string>().find("6 open scopes deeper than 64 not kept") != std::string::npos);
    const std::string table = stint_test::read_file(dumps[0].table_path);
    const std::string worker_line = "still open on thread " + std::to_string(worker_tid.load()) + " (";
    REQUIRE(table.find(worker_line) != std::string::npos);
    CHECK(table.find("):     flight.worker_wait since", table.find(worker_line)) != std::string::npos);
    // Every thread is named, the deep one too, which had written no record yet.
    for (const auto& o : flight.at("open_scopes")) CHECK_FALSE(o.at("thread").get<std::string>().empty());
}

TEST_CASE("a thread that begins after the ring is full takes the oldest chunks of the thread holding most") {
    stint::profiler<> prof(flight_options(8 * flight_chunk));
    prof.start();
    flight_record_scopes(200'000);  // this thread fills the ring and turns it
    std::uint64_t late_tid = 0;
    std::thread late([&] {
        late_tid = flight_this_tid();
        flight_record_scopes(50'000);
    });
    late.join();
    prof.stop();
    CHECK(prof.stats().dropped == 0);
    stint_test::temp_dir dir;
    prof.export_chrome_trace(dir / "t.json");
    const nlohmann::json trace = stint_test::read_json(dir / "t.json");
    std::uint64_t late_kept = 0;
    for (const auto& e : stint_test::timed_events(trace)) {
        if (e.at("name") == "flight.work" && e.at("tid").get<std::uint64_t>() == late_tid) ++late_kept;
    }
    const auto late_overwritten = flight_thread_entry(trace, late_tid).at("overwritten").get<std::uint64_t>();
    CHECK(late_kept + late_overwritten == 50'000);
    CHECK(late_kept >= 2 * flight_chunk / 24);  // it came to hold more than one chunk
    const auto total = trace.at("flightRecorder").at("overwritten").get<std::uint64_t>();
    CHECK(stint_test::count_named(prof.events(), "flight.work") + total == 250'000);
}

#if defined(STINT_TEST_CRASH_PROGRAM) && defined(STINT_TEST_CRASHDUMP_TOOL)
TEST_CASE("a crash leaves a dump that decodes to a trace ending where each thread was") {
    stint_test::temp_dir dir;
    const std::string dump = dir / "crash.stint";
    const std::string trace_path = dir / "crash.pt.trace.json";
    const auto run = [&](const std::string& mode) {
        return stint_test::run_program(std::string(STINT_TEST_CRASH_PROGRAM) + " " + mode + " " + dump);
    };
    const auto decode = [&] {
        const stint_test::program_result decoded = stint_test::run_program(
            std::string(STINT_TEST_CRASHDUMP_TOOL) + " " + dump + " " + trace_path);
        INFO(decoded.output);
        REQUIRE(decoded.status == 0);
        return stint_test::read_json(trace_path);
    };
    const auto check_threads = [&](const nlohmann::json& trace) {
        const nlohmann::json& crash = trace.at("crash");
        CHECK(crash.at("complete") == true);
        bool main_seen = false;
        bool worker_seen = false;
        for (const auto& t : crash.at("threads")) {
            if (t.at("crashed") == true) {
                main_seen = true;
                CHECK(t.at("last_events").back() == "crash.last_before_crash");
                CHECK(t.at("inside") == nlohmann::json::array({"ProfilerStep#0", "crash.main_loop", "crash.request 42"}));
            } else if (t.at("name") == "crash worker") {
                worker_seen = true;
                CHECK(t.at("last_events").back() == "crash.worker_step");
                CHECK(t.at("inside") == nlohmann::json::array({"crash.worker_wait"}));
            }
        }
        CHECK(main_seen);
        CHECK(worker_seen);
        // The open scopes are drawn, ending at the crash after the last event that ended.
        double last_end = 0;
        double open_end = 0;
        int open = 0;
        for (const auto& e : trace.at("traceEvents")) {
            if (e.at("ph") != "X") continue;
            const double end = e.at("ts").get<double>() + e.at("dur").get<double>();
            if (e.contains("args") && e.at("args").contains("still open at the crash")) {
                ++open;
                open_end = end;
            } else {
                last_end = std::max(last_end, end);
            }
        }
        CHECK(open == 4);  // the step's annotation too: a flight recorder's steps are annotated
        CHECK(open_end >= last_end);
        // Every record of the session is there: the ring never turned.
        CHECK(stint_test::count_named(trace.at("traceEvents").get<std::vector<nlohmann::json>>(), "crash.main_step") == 10000);
        CHECK(stint_test::count_named(trace.at("traceEvents").get<std::vector<nlohmann::json>>(), "crash.worker_step") == 1000);
    };
    SUBCASE("a null dereference") {
        const stint_test::program_result died = run("null");
        CHECK(died.status != 0);  // 128 + SIGSEGV, or the sanitizer's report: the previous handler ran
        const nlohmann::json trace = decode();
        CHECK(trace.at("crash").at("signal") == SIGSEGV);
        check_threads(trace);
    }
    SUBCASE("abort") {
        CHECK(run("abort").status == 128 + SIGABRT);
        const nlohmann::json trace = decode();
        CHECK(trace.at("crash").at("signal") == SIGABRT);
        check_threads(trace);
    }
    SUBCASE("an exception through noexcept: std::terminate, then the previous terminate handler") {
        const stint_test::program_result died = run("noexcept");
        CHECK(died.status == 128 + SIGABRT);
        CHECK(died.output.find("through noexcept") != std::string::npos);  // the default handler still ran
        const nlohmann::json trace = decode();
        CHECK(trace.at("crash").at("signal") == 0);
        check_threads(trace);
    }
    SUBCASE("a second crash handler over stint's is reported") {
        const stint_test::program_result died = run("second_handler");
        CHECK(died.status == 3);
        CHECK(died.output.find("signal 11 (SEGV): another handler replaced stint's crash dump") != std::string::npos);
        CHECK_FALSE(std::filesystem::exists(dump));
    }
}
#endif

TEST_CASE("a crash dump path that cannot be written is refused at start") {
    stint_test::temp_dir dir;
    stint::profiler_options<> options;
    options.flight_recorder = stint::flight_recorder_options{.budget_bytes = 4 * flight_chunk,
                                                             .crash_dump_path = dir / "missing/crash.stint"};
    stint::profiler<> prof(options);
    CHECK_THROWS_WITH_AS(prof.start(),
                         doctest::Contains(("stint: flight_recorder.crash_dump_path \"" + dir / "missing/crash.stint" +
                                            "\" cannot be written").c_str()),
                         std::system_error);
    CHECK_FALSE(prof.is_running());
    CHECK(stint::check_crash_handlers().empty());
    // Installed and removed with the session; stint's handlers gone with it.
    options.flight_recorder->crash_dump_path = dir / "crash.stint";
    stint::profiler<> ok(options);
    ok.start();
    CHECK(stint::check_crash_handlers().empty());
    struct sigaction now {};
    ::sigaction(SIGSEGV, nullptr, &now);
    CHECK((now.sa_flags & SA_SIGINFO) != 0);
    ok.stop();
    ::sigaction(SIGSEGV, nullptr, &now);
    CHECK((now.sa_flags & SA_SIGINFO) == 0);
    CHECK_FALSE(std::filesystem::exists(dir / "crash.stint"));
}

TEST_CASE("a recording thread's signal stack is turned off as it ends; a stack the program set since is kept") {
    stint_test::temp_dir dir;
    stint::profiler_options<> options = flight_options(16 * flight_chunk);
    options.flight_recorder->crash_dump_path = dir / "crash.stint";
    stint::profiler<> prof(options);
    prof.start();
    // stint's stack: on while the thread records, off before a drain may free it with the node.
    const flight_thread_stacks stints = flight_stacks_of_thread([] {});
    CHECK((stints.while_recording.ss_flags & SS_DISABLE) == 0);
    CHECK((stints.at_exit.ss_flags & SS_DISABLE) != 0);
    // The program's own stack, set after stint's: left on, as the program left it. Mapped and never
    // unmapped here: under ASan the thread's end unmaps whatever stack the thread has then.
    constexpr std::size_t own_bytes = 256 * 1024;
    void* const own = ::mmap(nullptr, own_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    REQUIRE(own != MAP_FAILED);
    bool set = false;
    const flight_thread_stacks owns = flight_stacks_of_thread([&] {
        stack_t mine{};
        mine.ss_sp = own;
        mine.ss_size = own_bytes;
        set = ::sigaltstack(&mine, nullptr) == 0;
    });
    REQUIRE(set);
    CHECK((owns.while_recording.ss_flags & SS_DISABLE) == 0);
    CHECK(owns.while_recording.ss_sp != own);
    CHECK((owns.at_exit.ss_flags & SS_DISABLE) == 0);
    CHECK(owns.at_exit.ss_sp == own);
    prof.stop();
}

TEST_CASE("a second flight recorder that fails to start leaves the first one's signal stacks on") {
    stint_test::temp_dir dir;
    stint::profiler_options<> options = flight_options(16 * flight_chunk);
    options.flight_recorder->crash_dump_path = dir / "a.stint";
    stint::profiler<> first(options);
    first.start();
    options.flight_recorder->crash_dump_path = dir / "b.stint";
    stint::profiler<> second(options);
    CHECK_THROWS(second.start());  // one recording profiler at a time
    CHECK(first.is_running());
    // A thread that begins to record in the first one's session still gets its stack.
    const flight_thread_stacks seen = flight_stacks_of_thread([] {});
    CHECK((seen.while_recording.ss_flags & SS_DISABLE) == 0);
    first.stop();
    // Both requests gone: a thread of a session with no crash dump gets none.
    stint::profiler<> plain(flight_options(16 * flight_chunk));
    plain.start();
    const flight_thread_stacks none = flight_stacks_of_thread([] {});
    CHECK((none.while_recording.ss_flags & SS_DISABLE) != 0);
    plain.stop();
}

TEST_CASE("a crash handler leaves errno as the interrupted code had it, to the handler it chains to and after") {
    stint_test::temp_dir dir;
    const std::filesystem::path gone = std::filesystem::path(dir.path()) / "gone";
    std::filesystem::create_directory(gone);
    struct sigaction mine {};
    mine.sa_sigaction = &flight_chained_handler;
    mine.sa_flags = SA_SIGINFO;
    sigemptyset(&mine.sa_mask);
    struct sigaction before {};
    REQUIRE(::sigaction(SIGBUS, &mine, &before) == 0);
    stint::profiler_options<> options = flight_options(16 * flight_chunk);
    options.flight_recorder->crash_dump_path = (gone / "crash.stint").string();
    stint::profiler<> prof(options);
    prof.start();
    std::filesystem::remove(gone);  // the dump's open() fails, setting errno
    errno = EDOM;
    ::raise(SIGBUS);  // stint's handler, then mine, then back here
    const int after = errno;
    prof.stop();
    ::sigaction(SIGBUS, &before, nullptr);
    CHECK(flight_errno_in_chained.load() == EDOM);
    CHECK(after == EDOM);
}

TEST_CASE("a slow step with no interval dumps once: the dump's own time is no step's") {
    stint_test::temp_dir dir;
    auto options = flight_options(16 << 20, dir.path().string());
    // Slow: 20 x the median (3 ms steps), a margin for a loaded machine's sleeps; the dump of a full
    // 16 MiB ring takes longer than that.
    options.flight_recorder->slow_step = {.factor = 20, .min_duration = std::chrono::milliseconds(0), .steps = 3,
                                          .interval = std::chrono::nanoseconds(0)};
    stint::profiler<> prof(options);
    prof.start();
    // Two threads keep the ring full, so that each dump takes far longer than a step.
    std::atomic<bool> done{false};
    std::vector<std::thread> recorders;
    for (int k = 0; k < 2; ++k) {
        recorders.emplace_back([&] {
            while (!done.load(std::memory_order_relaxed)) {
                STINT_SCOPE("flight.background");
            }
        });
    }
    for (int i = 0; i < 40; ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(i == 20 ? 300 : 3));
        prof.step();
    }
    done = true;
    for (auto& t : recorders) t.join();
    const std::vector<stint::flight_dump> dumps = prof.triggered_dumps();
    prof.stop();
    if (dumps.size() != 1) for (const stint::flight_dump& d : dumps) MESSAGE(d.path << ": " << d.events << " events");
    REQUIRE(dumps.size() == 1);
    CHECK(dumps[0].path.find("slow_step_20") != std::string::npos);
}

TEST_CASE("a dump whose table cannot be written writes neither file, and keeps the previous pair") {
    stint_test::temp_dir dir;
    stint::profiler<> prof(flight_options(16 * flight_chunk));
    prof.start();
    { STINT_SCOPE("flight.first"); }
    const std::string path = dir / "pair.pt.trace.json";
    const stint::flight_dump first = prof.dump(path);
    const std::string trace_before = stint_test::read_file(path);
    const std::string table_before = stint_test::read_file(first.table_path);
    { STINT_SCOPE("flight.second"); }
    // The table's place taken by a directory: the table cannot be written.
    std::filesystem::rename(first.table_path, dir / "table.kept");
    std::filesystem::create_directory(first.table_path);
    const std::string refused = "cannot write flight recorder table '" + first.table_path + "'";
    CHECK_THROWS_WITH_AS(prof.dump(path), doctest::Contains(refused.c_str()), std::system_error);
    CHECK(stint_test::read_file(path) == trace_before);
    std::filesystem::remove(first.table_path);
    std::filesystem::rename(dir / "table.kept", first.table_path);
    // With its place back, the next dump writes both.
    const stint::flight_dump again = prof.dump(path);
    CHECK(stint_test::read_file(path) != trace_before);
    CHECK(stint_test::read_file(again.table_path) != table_before);
    prof.stop();
}
