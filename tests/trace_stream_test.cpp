// Streamed sessions (profiler_options::stream_to): a Chrome trace written while the session records.

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <latch>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>
#include <thread>
#include <vector>

#include "child_process.hpp"
#include "nesting_workload.hpp"
#include "stint/export/chrome_trace_records.hpp"
#include "stint/stint.hpp"
#include "stint/drain/session.hpp"
#include "test_util.hpp"

namespace {

// The names of a trace's events per thread, as a multiset (their order is the writer's).
std::map<std::uint64_t, std::multiset<std::string>> names_by_thread(const nlohmann::json& trace) {
    std::map<std::uint64_t, std::multiset<std::string>> names;
    for (const auto& e : stint_test::timed_events(trace)) names[e["tid"]].insert(e["name"].get<std::string>());
    return names;
}

using stint_test::string_sink;

std::multiset<std::string> leaf_names(const nesting::paths& paths) {
    std::multiset<std::string> names;
    for (const std::string& p : paths) names.insert(p.substr(p.rfind('/') == std::string::npos ? 0 : p.rfind('/') + 1));
    return names;
}

}  // namespace

TEST_CASE("a streamed session writes every record while it records, in a budget far smaller than its records") {
    stint_test::temp_dir dir;
    const std::string path = dir.file("stream.json");
    constexpr std::size_t budget = std::size_t{1} << 20;
    constexpr int iterations = 4000;  // about 60,000 events per thread
    std::vector<nesting::recorder> recorders(2);
    std::vector<std::uint64_t> tids(2);
    {
        stint::profiler<> prof({.buffer_budget_bytes = budget, .stream_to = path});
        prof.start();
        const auto work = [&](std::size_t t) {
            tids[t] = stint::detail::current_os_tid();
            for (int i = 0; i < iterations; ++i) {
                nesting::iteration(recorders[t], i);
                // A pace the writer keeps up with on a loaded machine: about 3 MB/s per thread.
                if (i % 50 == 49) std::this_thread::sleep_for(std::chrono::milliseconds(5));
            }
        };
        std::thread other(work, 1);
        work(0);
        other.join();
        prof.stop();
        const stint::profiler_stats stats = prof.stats();
        CHECK(stats.dropped == 0);
        CHECK(stats.recorded * 24 > 2 * budget);  // the buffers were written and reused
        const nlohmann::json trace = stint_test::read_json(path);
        CHECK(trace["stint"]["recorded"].get<std::uint64_t>() == stats.recorded);
        CHECK(trace["stint"]["dropped"] == 0);
        CHECK(trace["stint"]["values_not_streamed"] == 0);
        CHECK(stint_test::all_timed_events(trace).size() == stats.number_of_events);
        // Every event each thread recorded, once, with a distinct id.
        const auto names = names_by_thread(trace);
        for (std::size_t t = 0; t < 2; ++t) {
            INFO("thread " << t);
            REQUIRE(names.count(tids[t]) == 1);
            CHECK(names.at(tids[t]) == leaf_names(recorders[t].done()));
        }
        std::set<std::uint64_t> ids;
        for (const auto& e : stint_test::all_timed_events(trace)) ids.insert(e["args"]["Record function id"].get<std::uint64_t>());
        CHECK(ids.size() == stats.number_of_events);
        CHECK(*ids.begin() == 1);
        // The events were written, not kept.
        CHECK_THROWS_WITH_AS((void)prof.events(),
                             ("stint: events(): the window was streamed to \"" + path +
                              "\" (profiler_options::stream_to); its events are in that file, not kept").c_str(),
                             std::logic_error);
        CHECK_THROWS_AS(prof.export_chrome_trace(dir.file("again.json")), std::logic_error);
    }
}

TEST_CASE("a streamed session whose writer cannot keep up drops records over the budget and counts each") {
    stint_test::temp_dir dir;
    const std::string path = dir.file("fast.json.gz");
    constexpr std::int64_t scopes = 400'000;  // 9.6 MB of records at full speed into 256 KiB
    stint::profiler<> prof({.buffer_budget_bytes = 256 * 1024, .stream_to = path});
    prof.start();
    for (std::int64_t i = 0; i < scopes; ++i) {
        STINT_SCOPE("fast");
    }
    prof.stop();
    const stint::profiler_stats stats = prof.stats();
    CHECK(stats.recorded + stats.dropped == scopes);
    // The records come about 25 times faster than the writer compresses them (about 10 ms of scopes,
    // 9.6 MB to gzip): the budget runs out, and the writer keeps part.
    CHECK(stats.dropped > 0);
    CHECK(stats.recorded >= 256 * 1024 / sizeof(stint::detail::record) / 2);
    const nlohmann::json trace = nlohmann::json::parse(stint_test::read_gzip(path));
    std::uint64_t fast = 0;
    for (const auto& e : stint_test::timed_events(trace)) fast += e["name"] == "fast" ? 1 : 0;
    CHECK(fast == stats.recorded);
    CHECK(trace["stint"]["dropped"].get<std::uint64_t>() == stats.dropped);
    CHECK(trace["stint"]["threads"][0]["dropped"].get<std::uint64_t>() == stats.dropped);
}

TEST_CASE("a streamed session whose budget was spent for a moment keeps what its threads record after the writer caught up") {
    // Each thread registered before the start gets a largest chunk set aside (the main thread first):
    // with the main thread alone on a budget of one largest chunk, or with 15 more on a budget of 16,
    // those chunks alone are the whole budget. A burst at full speed spends the budget and drops; after
    // a pause in which the writer gives back what it took, every later record must reach the file, and
    // the drops must be counted exactly.
    for (const auto& setting : {std::pair{1, std::size_t{64} << 10}, std::pair{16, std::size_t{1} << 20}}) {
        const int threads = setting.first;  // (clang 14 captures no structured binding in INFO)
        const std::size_t budget = setting.second;
        INFO(threads << " threads, a budget of " << budget << " bytes");
        stint_test::temp_dir dir;
        const std::string path = dir.file("burst.json");
        constexpr int burst = 100'000;
        constexpr int after = 500;
        const auto n = static_cast<std::size_t>(threads);
        std::latch registered(threads - 1);
        std::latch started(1);
        std::latch charged(threads);  // each thread took its chunk set aside
        std::latch burst_done(threads);
        std::latch resume(1);
        std::vector<std::uint64_t> tids(n);
        const auto record = [](int count, bool bursting) {
            for (int i = 0; i < count; ++i) {
                if (bursting) {
                    STINT_SCOPE("burst");
                } else {
                    STINT_SCOPE("after");
                }
            }
        };
        std::vector<std::thread> workers;
        for (std::size_t t = 1; t < n; ++t) {
            workers.emplace_back([&, t] {
                stint::set_thread_name("burst " + std::to_string(t));  // registers the thread
                tids[t] = stint::detail::current_os_tid();
                registered.count_down();
                started.wait();
                record(1, true);
                charged.arrive_and_wait();
                record(burst - 1, true);
                burst_done.count_down();
                resume.wait();
                record(after, false);
            });
        }
        tids[0] = stint::detail::current_os_tid();
        registered.wait();
        stint::profiler<> prof({.buffer_budget_bytes = budget, .stream_to = path});
        prof.start();
        started.count_down();
        record(1, true);
        charged.arrive_and_wait();
        record(burst - 1, true);
        burst_done.arrive_and_wait();
        // The pause: the writer takes the filled chunks and gives their bytes back.
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
        while (stint::detail::the_registry().session_buffer_bytes() > budget / 2 &&
               std::chrono::steady_clock::now() < deadline) {
            std::this_thread::sleep_for(std::chrono::milliseconds(5));
        }
        CHECK(stint::detail::the_registry().session_buffer_bytes() <= budget / 2);
        resume.count_down();
        record(after, false);
        for (std::thread& w : workers) w.join();
        prof.stop();
        const stint::profiler_stats stats = prof.stats();
        CHECK(stats.dropped > 0);  // the burst did spend the budget
        CHECK(stats.recorded + stats.dropped == n * (burst + after));
        const nlohmann::json trace = stint_test::read_json(path);
        CHECK(trace["stint"]["dropped"].get<std::uint64_t>() == stats.dropped);
        CHECK(trace["stint"]["recorded"].get<std::uint64_t>() == stats.recorded);
        std::map<std::uint64_t, std::uint64_t> dropped_by_tid;
        for (const auto& t : trace["stint"]["threads"]) dropped_by_tid[t["tid"]] += t["dropped"].get<std::uint64_t>();
        const auto names = names_by_thread(trace);
        for (std::size_t t = 0; t < n; ++t) {
            INFO("thread " << t);
            REQUIRE(names.count(tids[t]) == 1);
            CHECK(names.at(tids[t]).count("after") == after);
            CHECK(names.at(tids[t]).count("burst") + dropped_by_tid[tids[t]] == burst);
        }
    }
}

TEST_CASE("a stream writes the trace a stop writes for the same records, whatever the batches") {
    // The records of one session, written from the records at once and by a stream in batches of one
    // chunk, whose memory is overwritten after each batch (as the pool would reuse it).
    stint::detail::session session;
    session.open(std::size_t{64} << 20);
    std::thread other([] {
        nesting::recorder r;
        for (int i = 0; i < 2000; ++i) nesting::iteration(r, i);
    });
    nesting::recorder r;
    for (int i = 0; i < 2000; ++i) nesting::iteration(r, i);
    other.join();
    stint::detail::record_store records;
    REQUIRE(session.close_records(records));
    REQUIRE(stint::detail::chrome_trace_from_records(records));

    string_sink whole;
    stint::detail::write_chrome_trace(whole, records, 1, {.pid = 7, .truncated_names = 0, .metadata_json = {}});

    string_sink batched;
    {
        stint::detail::json_writer out(batched);
        std::uint64_t id = 1;
        for (const auto& t : records.threads()) {
            if (t.events == 0) continue;
            stint::detail::thread_trace_writer writer(
                out, records.calibration, 7, t.counts.os_tid,
                stint::detail::chrome_records_detail::origin_of(records, t));
            for (const auto& [from, to] : records.ranges(t)) {
                std::vector<std::byte> copy(from, to);  // the batch, in memory the writer may not keep
                stint::detail::for_each_record(copy.data(), copy.data() + copy.size(),
                                               [&](const stint::detail::record& rec,
                                                   const stint::detail::record_payload& payload) {
                                                   writer.add(rec, payload, id++);
                                               });
                writer.own_held_names();
                if (!copy.empty()) std::memset(copy.data(), 0xAB, copy.size());  // (no memset of a null pointer)
            }
            writer.flush();
        }
        out.flush();
    }
    // The same events, in the same order (both write thread by thread, in the order recorded).
    const auto events_of = [](const std::string& text) {
        std::vector<std::string> events;
        const nlohmann::json trace = nlohmann::json::parse(text);
        for (const auto& e : trace["traceEvents"]) {
            if (e["ph"] != "M") events.push_back(e.dump());
        }
        return events;
    };
    const std::vector<std::string> expected = events_of(whole.text);
    const std::vector<std::string> got = events_of("{\"traceEvents\": [{\"ph\": \"M\"}" + batched.text + "]}");
    CHECK(expected.size() > 40'000);
    CHECK(got == expected);
}

TEST_CASE("a stream whose writes fail says so at once, then keeps what it wrote and the records it did not") {
    // RLIMIT_FSIZE stands in for a full disk (a write past it fails with EFBIG, SIGXFSZ ignored); the
    // limit is process-wide, so the session runs in a child, which reports what it saw line by line.
    stint_test::temp_dir dir;
    const std::string path = dir.file("full.json");
    constexpr rlim_t limit = 1024 * 1024;  // a few batches of 64 KiB of records each
    constexpr int slices = 20;
    constexpr int per_slice = 1000;  // about 150 KB of JSON each, written batch by batch
    constexpr int after = 100;
    const std::string report = stint_test::in_child([&]() -> std::string {
        std::signal(SIGXFSZ, SIG_IGN);
        rlimit saved{};
        if (::getrlimit(RLIMIT_FSIZE, &saved) != 0) return "getrlimit failed";
        const rlimit small{limit, saved.rlim_max};
        if (::setrlimit(RLIMIT_FSIZE, &small) != 0) return "setrlimit failed";
        std::vector<std::string> warnings;
        std::atomic<bool> warned{false};
        stint::warning_handler previous = stint::set_warning_handler([&](std::string_view text) {
            warnings.emplace_back(text);
            warned = true;
        });
        stint::profiler<> prof({.stream_to = path});
        prof.start();
        for (int s = 0; s < slices; ++s) {
            for (int i = 0; i < per_slice; ++i) {
                STINT_SCOPE("before");
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(15));
        }
        // The writer says it failed at once, not at the stop.
        for (int i = 0; i < 500 && !warned; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
        const bool warned_before_stop = warned;
        for (int i = 0; i < after; ++i) {
            STINT_SCOPE("after");
        }
        std::ostringstream out;
        try {
            prof.stop();
            out << "stop: returned\n";
        } catch (const std::system_error& e) {
            out << "stop: " << e.what() << "\n";
            out << "efbig: " << (e.code() == std::errc::file_too_large) << "\n";
        }
        if (::setrlimit(RLIMIT_FSIZE, &saved) != 0) return "cannot restore the limit";
        stint::set_warning_handler(std::move(previous));
        out << "warned before stop: " << warned_before_stop << "\n";
        out << "warning: " << (warnings.empty() ? "" : warnings.front()) << "\n";
        std::uint64_t kept_before = 0;
        std::uint64_t kept_after = 0;
        for (const stint::event& e : prof.events()) {
            kept_before += e.name == "before" ? 1 : 0;
            kept_after += e.name == "after" ? 1 : 0;
        }
        out << "kept before: " << kept_before << "\nkept after: " << kept_after << "\n";
        out << "recorded: " << prof.stats().recorded << "\ndropped: " << prof.stats().dropped << "\n";
        prof.export_chrome_trace(dir.file("rest.json"));
        return out.str();
    });
    std::map<std::string, std::string> seen;
    std::istringstream lines(report);
    for (std::string line; std::getline(lines, line);) {
        const std::size_t colon = line.find(": ");
        if (colon != std::string::npos) seen[line.substr(0, colon)] = line.substr(colon + 2);
    }
    INFO(report);
    CHECK(seen["warned before stop"] == "1");
    CHECK(seen["warning"].starts_with("the trace stream to '" + path + "' failed (File too large)"));
    // stop() names the path, where the written part is, and the OS reason.
    const std::string& error = seen["stop"];
    CHECK(error.starts_with("stint: the trace stream to '" + path + "' failed (what it wrote is in '" + path +
                            ".partial', cut off where the write failed; the records it had not written are kept by "
                            "the profiler: events() and the exports read them"));
    CHECK(error.ends_with("): File too large"));
    CHECK(seen["efbig"] == "1");
    std::uint64_t held_lost = 0;
    if (const std::size_t at = error.find(" records it held between batches are lost"); at != std::string::npos) {
        held_lost = std::stoull(error.substr(error.rfind("; ", at) + 2));
    }
    CHECK(held_lost <= 1);  // one thread, each record of its own end
    // The file never lands under its name; what was written is kept beside it.
    CHECK_FALSE(std::filesystem::exists(path));
    const std::string partial = stint_test::read_file(path + ".partial");
    CHECK(partial.size() <= limit);
    CHECK(partial.starts_with("{\n  \"schemaVersion\": 1,\n"));
    std::uint64_t written_before = 0;
    for (std::size_t at = partial.find("\"name\": \"before\""); at != std::string::npos;
         at = partial.find("\"name\": \"before\"", at + 1)) {
        ++written_before;
    }
    CHECK(written_before > 0);
    // Every record is in the file, kept by the profiler, or counted as lost; nothing was dropped.
    const std::uint64_t kept_before = std::stoull(seen["kept before"]);
    CHECK(kept_before > 0);
    CHECK(written_before + kept_before + held_lost >= std::uint64_t{slices} * per_slice);
    CHECK(seen["kept after"] == std::to_string(after));
    CHECK(seen["recorded"] == std::to_string(kept_before + after));
    CHECK(seen["dropped"] == "0");
    std::uint64_t exported_after = 0;
    for (const auto& e : stint_test::timed_events(stint_test::read_json(dir.file("rest.json")))) {
        exported_after += e["name"] == "after" ? 1 : 0;
    }
    CHECK(exported_after == after);
}

TEST_CASE("stream_to refuses what it cannot stream, at construction") {
    const auto refused = [](const auto& make, const std::string& why) {
        CHECK_THROWS_WITH_AS(make(),
                             ("stint: profiler_options::stream_to streams one window of timing-only records; " + why)
                                 .c_str(),
                             std::invalid_argument);
    };
    refused([] { stint::profiler<> p({.schedule = stint::schedule({.active = 1}), .stream_to = "x.json"}); },
            "it takes no schedule (each window would need a file of its own)");
    refused([] { stint::profiler<> p({.accumulate_events = true, .stream_to = "x.json"}); },
            "accumulate_events keeps events, which a stream does not");
    refused([] { stint::profiler<stint::config<stint::record_shapes>> p({.stream_to = "x.json"}); },
            "this config captures values (inputs, stacks, modules, memory or device activity) that only the event "
            "list writes; stream with stint::config<>");
    refused([] { stint::profiler<> p({.stream_to = "x.pftrace"}); },
            "it writes a Chrome trace (.json or .json.gz); export_perfetto_trace() writes Perfetto's format after a "
            "normal stop");
}

TEST_CASE("a stream that cannot open its file fails at start() and records nothing") {
    stint::profiler<> prof({.stream_to = "/nonexistent-dir/stint/trace.json"});
    CHECK_THROWS_AS(prof.start(), std::system_error);
    CHECK_FALSE(prof.is_running());
    stint::profiler<> other;  // no session was left open
    other.start();
    other.stop();
}

TEST_CASE("values that other configs' sites capture are left out of a stream, and counted") {
    using shapes = stint::config<stint::record_shapes>;
    stint_test::temp_dir dir;
    stint::profiler<> prof({.stream_to = dir.file("values.json")});
    prof.start();
    for (int i = 0; i < 10; ++i) {
        STINT_OP(shapes, "aten::add", i, 2.0);
    }
    const std::string name = "named";
    {
        STINT_SCOPE_NAMED(name);
    }
    prof.stop();
    const nlohmann::json trace = stint_test::read_json(dir.file("values.json"));
    std::multiset<std::string> names;
    for (const auto& e : stint_test::timed_events(trace)) {
        names.insert(e["name"].get<std::string>());
        CHECK_FALSE(e["args"].contains("Input type"));
    }
    CHECK(names.count("aten::add") == 10);
    CHECK(names.count("named") == 1);
    CHECK(trace["stint"]["values_not_streamed"] == 10);
}
