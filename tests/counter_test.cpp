// Counters (STINT_COUNTER, stint::counter): samples recorded while a session records, their values
// read back from the event list and the Chrome traces (from the list, from the records, streamed),
// the memory totals as counter tracks, several threads, and drops over the budget.

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "stint/stint.hpp"
#include "test_util.hpp"
#include "trace_from_records.hpp"

namespace {

/// The list's counter samples named `name`, in list order, as doubles.
std::vector<stint::counter_value> samples_of(const stint::event_list& list, std::string_view name) {
    std::vector<stint::counter_value> found;
    for (const stint::event& e : list) {
        if (e.kind != stint::event_kind::counter || e.name != name) continue;
        const std::optional<stint::counter_value> value = list.counter_of(e);
        REQUIRE(value.has_value());
        found.push_back(*value);
    }
    return found;
}

stint::counter_value integer(std::int64_t v) { return {.integer = v}; }
stint::counter_value real(double v) { return {.real = v, .is_real = true}; }

/// A trace's "C" events named `name`: their values (args[name]), in file order.
std::vector<nlohmann::json> counter_events(const nlohmann::json& trace, std::string_view name) {
    std::vector<nlohmann::json> found;
    for (const auto& e : trace.at("traceEvents")) {
        if (e.at("ph") == "C" && e.at("name") == name) found.push_back(e);
    }
    return found;
}

/// Registers this thread with a session of its own, so that the next session sets a largest chunk
/// aside for it and its first record takes no overhead record (exact budget arithmetic below).
void register_this_thread() {
    stint::profiler<> warm;
    warm.start();
    STINT_INSTANT("warm");
    warm.stop();
}

}  // namespace

TEST_CASE("STINT_COUNTER records each value, in order, only while a session records") {
    stint::profiler<> prof;
    int evaluated = 0;
    const auto value = [&](std::int64_t v) {
        ++evaluated;
        return v;
    };
    STINT_COUNTER("queue depth", value(-1));  // no session yet: not even evaluated
    CHECK(evaluated == 0);
    prof.start();
    for (std::int64_t i = 0; i < 5; ++i) STINT_COUNTER("queue depth", value(i * i));
    STINT_COUNTER("loss", 0.25);
    STINT_COUNTER("loss", -3.5f);
    prof.stop();
    STINT_COUNTER("queue depth", value(99));
    CHECK(evaluated == 5);

    const stint::event_list& list = prof.events();
    CHECK(samples_of(list, "queue depth") ==
          std::vector<stint::counter_value>{integer(0), integer(1), integer(4), integer(9), integer(16)});
    CHECK(samples_of(list, "loss") == std::vector<stint::counter_value>{real(0.25), real(-3.5)});
    std::int64_t last = std::numeric_limits<std::int64_t>::min();
    for (const stint::event& e : list) {
        if (e.kind != stint::event_kind::counter) {
            CHECK_FALSE(list.counter_of(e).has_value());
            continue;
        }
        CHECK(e.start_ns == e.end_ns);  // a sample lasts no time
        CHECK(e.start_ns >= last);
        last = e.start_ns;
        REQUIRE(e.location != nullptr);  // a static site: where the macro was
        CHECK(std::string_view(e.location->file).ends_with("counter_test.cpp"));
    }
    CHECK(prof.stats().recorded == 7);
    CHECK(prof.stats().dropped == 0);
}

TEST_CASE("stint::counter records integers and floating-point values exactly") {
    stint::counter<std::int64_t> depth{"depth"};
    stint::counter<double> ratio{"ratio"};
    stint::counter<std::uint64_t> bytes{"bytes"};
    stint::counter<float> small{"small"};
    CHECK(depth.name() == "depth");
    depth.set(1);  // no session: nothing, and no site made
    stint::profiler<> prof;
    prof.start();
    depth.set(std::numeric_limits<std::int64_t>::min());
    depth.set(std::numeric_limits<std::int64_t>::max());
    depth.set(0);
    ratio.set(0.1);
    ratio.set(-1e300);
    bytes.set(42);
    bytes.set(std::numeric_limits<std::uint64_t>::max());  // beyond int64: kept as a double
    small.set(1.5f);
    stint::counter<std::int64_t> copy = depth;  // the copy shares the site and the name
    copy.set(5);
    CHECK(copy.name() == "depth");
    prof.stop();

    const stint::event_list& list = prof.events();
    CHECK(samples_of(list, "depth") ==
          std::vector<stint::counter_value>{integer(std::numeric_limits<std::int64_t>::min()),
                                            integer(std::numeric_limits<std::int64_t>::max()), integer(0),
                                            integer(5)});
    CHECK(samples_of(list, "ratio") == std::vector<stint::counter_value>{real(0.1), real(-1e300)});
    CHECK(samples_of(list, "bytes") == std::vector<stint::counter_value>{integer(42), real(18446744073709551616.0)});
    CHECK(samples_of(list, "small") == std::vector<stint::counter_value>{real(1.5)});
    CHECK(samples_of(list, "small")[0].as_double() == 1.5);
    CHECK(samples_of(list, "depth")[2].as_double() == 0.0);
    for (const stint::event& e : list) {
        if (e.kind == stint::event_kind::counter) CHECK(e.location == nullptr);  // named at run time
    }
}

TEST_CASE("a counter's sample is a child of the scope around it and changes no table") {
    const auto run = [](stint::profiler<>& prof, bool with_counters) {
        prof.start();
        {
            STINT_SCOPE("f");
            if (with_counters) STINT_COUNTER("depth", 1);
            {
                STINT_SCOPE("f");  // f calling itself once: one call in torch's tables
                if (with_counters) STINT_COUNTER("depth", 2);
            }
            if (with_counters) STINT_COUNTER("depth", 3);
        }
        { STINT_SCOPE("g"); }
        prof.stop();
    };
    stint::profiler<> with;
    stint::profiler<> without;
    run(with, true);
    run(without, false);
    const stint::event_list& list = with.events();
    std::vector<std::string> parents;
    for (const stint::event& e : list) {
        if (e.kind != stint::event_kind::counter) continue;
        REQUIRE(e.parent != stint::no_index);
        parents.push_back(std::string(list[e.parent].name) + "@" + std::to_string(list[e.parent].depth));
        CHECK(e.first_child == stint::no_index);
    }
    CHECK(parents == std::vector<std::string>{"f@0", "f@1", "f@0"});

    // The same rows, counts and columns as without the counters (times differ run to run).
    const auto rows = [](const stint::profiler<>& prof) {
        std::map<std::string, std::int64_t> counts;
        for (const stint::averaged_event& a : prof.key_averages()) counts[a.key] = a.count;
        return counts;
    };
    CHECK(rows(with) == rows(without));
    CHECK(rows(with) == std::map<std::string, std::int64_t>{{"f", 1}, {"g", 1}});
    CHECK(stint_test::table_row_names(stint::table(list)) ==
          stint_test::table_row_names(stint::table(without.events())));
    CHECK(stint_test::table_row_names(with.key_averages().table()) ==
          stint_test::table_row_names(without.key_averages().table()));
    // A sample takes no time from the scope around it.
    for (const stint::event& e : list) {
        if (e.name == "f" && e.depth == 0) {
            std::int64_t children = 0;
            for (const stint::event& c : list.children(e)) children += c.duration_ns();
            CHECK(e.self_ns == e.duration_ns() - children);
        }
    }
}

TEST_CASE("a Chrome trace draws counters as ph C events, from the records and from the list alike") {
    stint_test::temp_dir dir;
    stint::counter<double> load{"load"};
    stint::profiler<> prof;
    prof.start();
    {
        STINT_SCOPE("step");
        STINT_COUNTER("queue \"depth\"", 3);
        load.set(0.75);
        STINT_COUNTER("queue \"depth\"", -7);
        load.set(std::nan(""));
        load.set(-std::numeric_limits<double>::infinity());
    }
    prof.stop();
    // Written from the records first (the window is timing-only: counters keep it so), then from the list.
    const records_trace::compared both = records_trace::check_same_as_list(prof, dir);
    for (const nlohmann::json* trace : {&both.from_records, &both.from_list}) {
        const std::vector<nlohmann::json> depth = counter_events(*trace, "queue \"depth\"");
        REQUIRE(depth.size() == 2);
        CHECK(depth[0].at("args") == nlohmann::json{{"queue \"depth\"", 3}});
        CHECK(depth[1].at("args") == nlohmann::json{{"queue \"depth\"", -7}});
        CHECK(depth[0].at("pid") == trace->at("traceEvents")[0].at("pid"));
        CHECK(depth[0].at("ts").get<double>() <= depth[1].at("ts").get<double>());
        const std::vector<nlohmann::json> loads = counter_events(*trace, "load");
        // JSON has no NaN or infinity: the NaN sample left out, -inf as the lowest finite value.
        REQUIRE(loads.size() == 2);
        CHECK(loads[0].at("args").at("load").get<double>() == 0.75);
        CHECK(loads[1].at("args").at("load").get<double>() == -std::numeric_limits<double>::max());
        // Nothing else of them: no slice or instant carries a counter's name.
        std::size_t others = 0;
        for (const nlohmann::json& e : stint_test::all_timed_events(*trace)) {
            if (e.at("ph") != "C" && (e.at("name") == "load" || e.at("name") == "queue \"depth\"")) ++others;
        }
        CHECK(others == 0);
    }
}

TEST_CASE("a streamed session writes its counters' samples too") {
    stint_test::temp_dir dir;
    const std::string path = dir.file("stream.json");
    {
        stint::profiler<> prof({.stream_to = path});
        prof.start();
        for (std::int64_t i = 0; i < 1000; ++i) STINT_COUNTER("i", i);
        prof.stop();
    }
    const std::vector<nlohmann::json> samples = counter_events(stint_test::read_json(path), "i");
    REQUIRE(samples.size() == 1000);
    for (std::size_t i = 0; i < samples.size(); ++i) CHECK(samples[i].at("args").at("i") == i);
}

TEST_CASE("memory totals are counter tracks in the Chrome trace, one pair per device") {
    using mem = stint::config<stint::profile_memory>;
    stint_test::temp_dir dir;
    stint::profiler<mem> prof;
    prof.start();
    int a = 0;
    int b = 0;
    {
        STINT_OP(mem, "aten::empty");
        stint::report_alloc(&a, 400);
        stint::report_alloc(&b, 1000, stint_test::cuda0, {.allocated = 1000, .reserved = 2048});
    }
    stint::report_free(&a);
    prof.stop();
    const std::string path = dir.file("memory.json");
    prof.export_chrome_trace(path);
    const nlohmann::json trace = stint_test::read_json(path);
    const auto values = [&](std::string_view name) {
        std::vector<std::int64_t> v;
        for (const nlohmann::json& e : counter_events(trace, name)) v.push_back(e.at("args").at(std::string(name)));
        return v;
    };
    CHECK(values("Total Allocated (cpu)") == std::vector<std::int64_t>{400, 0});
    CHECK(values("Total Reserved (cpu)") == std::vector<std::int64_t>{400, 0});
    CHECK(values("Total Allocated (cuda:0)") == std::vector<std::int64_t>{1000});
    CHECK(values("Total Reserved (cuda:0)") == std::vector<std::int64_t>{2048});
    // Each sample at its memory event's time.
    std::vector<double> memory_ts;
    for (const nlohmann::json& e : stint_test::all_timed_events(trace)) {
        if (e.at("name") == "[memory]") memory_ts.push_back(e.at("ts").get<double>());
    }
    REQUIRE(memory_ts.size() == 3);
    CHECK(counter_events(trace, "Total Allocated (cpu)")[1].at("ts").get<double>() == memory_ts[2]);
    CHECK(counter_events(trace, "Total Reserved (cuda:0)")[0].at("ts").get<double>() == memory_ts[1]);
}

TEST_CASE("a counter set from several threads keeps each thread's samples, in order") {
    constexpr int threads = 4;
    constexpr std::int64_t per_thread = 2000;
    stint::counter<std::int64_t> shared{"shared"};
    stint::profiler<> prof;
    prof.start();
    std::vector<std::thread> workers;
    for (int t = 0; t < threads; ++t) {
        workers.emplace_back([&, t] {
            for (std::int64_t i = 0; i < per_thread; ++i) {
                shared.set(t * per_thread + i);
                STINT_COUNTER("per thread", i);
            }
        });
    }
    for (std::thread& w : workers) w.join();
    prof.stop();
    REQUIRE(prof.stats().dropped == 0);
    const stint::event_list& list = prof.events();
    std::map<std::uint32_t, std::vector<std::int64_t>> shared_by_thread;
    std::map<std::uint32_t, std::vector<std::int64_t>> own_by_thread;
    for (const stint::event& e : list) {
        if (e.kind != stint::event_kind::counter) continue;
        const std::int64_t v = list.counter_of(e)->integer;
        (e.name == "shared" ? shared_by_thread : own_by_thread)[e.thread].push_back(v);
    }
    REQUIRE(shared_by_thread.size() == threads);
    REQUIRE(own_by_thread.size() == threads);
    for (const auto& [thread, values] : shared_by_thread) {
        REQUIRE(values.size() == per_thread);
        const std::int64_t base = values[0];
        CHECK(base % per_thread == 0);
        for (std::int64_t i = 0; i < per_thread; ++i) CHECK(values[static_cast<std::size_t>(i)] == base + i);
    }
    for (const auto& [thread, values] : own_by_thread) {
        REQUIRE(values.size() == per_thread);
        for (std::int64_t i = 0; i < per_thread; ++i) CHECK(values[static_cast<std::size_t>(i)] == i);
    }
}

TEST_CASE("counter samples over the buffer budget are dropped and each is counted") {
    register_this_thread();
    // One 64 KiB chunk of budget, set aside for this thread: each sample takes 24 bytes + an 8-byte
    // header + 8 bytes of value, so exactly 65472 / 40 = 1636 fit.
    stint_test::temp_dir dir;
    stint::counter<double> typed{"typed"};
    stint::profiler<> prof({.buffer_budget_bytes = stint::detail::chunk::total_bytes});
    prof.start();
    for (int i = 0; i < 1000; ++i) STINT_COUNTER("macro", i);
    for (int i = 0; i < 1000; ++i) typed.set(i);
    prof.stop();
    CHECK(prof.stats().recorded == 1636);
    CHECK(prof.stats().dropped == 364);
    const std::string path = dir.file("dropped.json");
    prof.export_chrome_trace(path);  // from the records
    const nlohmann::json trace = stint_test::read_json(path);
    CHECK(trace.at("stint").at("dropped") == 364);
    CHECK(counter_events(trace, "macro").size() == 1000);
    CHECK(counter_events(trace, "typed").size() == 636);
    CHECK(prof.events().dropped() == 364);
    CHECK(samples_of(prof.events(), "typed").back() == real(635));
}

TEST_CASE("counter samples JSON cannot hold: infinity as the largest finite value, NaN left out, both said") {
    stint_test::temp_dir dir;
    stint::profiler<> prof;
    prof.start();
    STINT_COUNTER("odd", 1.5);
    STINT_COUNTER("odd", std::numeric_limits<double>::infinity());
    STINT_COUNTER("odd", std::numeric_limits<double>::quiet_NaN());
    STINT_COUNTER("odd", -std::numeric_limits<double>::infinity());
    prof.stop();
    const std::string path = dir / "odd.pt.trace.json";
    prof.export_chrome_trace(path);
    const nlohmann::json trace = stint_test::read_json(path);  // strict: a NaN token would not parse
    std::vector<double> values;
    std::string note;
    for (const auto& e : trace.at("traceEvents")) {
        if (e.at("ph") == "C" && e.at("name") == "odd") {
            REQUIRE(e.at("args").at("odd").is_number());  // a number, never a string
            values.push_back(e.at("args").at("odd").get<double>());
        }
        if (e.at("ph") == "i" && e.at("name").get<std::string>().find("counter samples not finite") != std::string::npos) {
            note = e.at("name").get<std::string>();
        }
    }
    CHECK(values == std::vector<double>{1.5, std::numeric_limits<double>::max(), -std::numeric_limits<double>::max()});
    CHECK(note.find("stint: 3 counter samples not finite") == 0);
}
