// Flows (STINT_FLOW_BEGIN/END, stint::flow_token) and async spans (stint::async_scope): the points are
// bound to the scopes open around them, paired by id, counted when unpaired, drawn as Chrome's "s"/"f"
// and "b"/"e" events, and async spans are rows of their own in key_averages.

#include <doctest/doctest.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include <stint/analysis/event_tree.hpp>

#include "test_util.hpp"

namespace {

using namespace std::chrono_literals;

using stint_test::find;

// The trace's event of phase `ph` with this id, or null.
const nlohmann::json* point(const std::vector<nlohmann::json>& events, std::string_view ph, std::uint64_t id) {
    for (const auto& e : events) {
        if (e.at("ph") == ph && e.contains("id") && e.at("id").is_number() && e.at("id").get<std::uint64_t>() == id) {
            return &e;
        }
    }
    return nullptr;
}

// Whether the point lies inside the complete event named `name` on its thread, by the trace's numbers.
bool inside(const std::vector<nlohmann::json>& events, const nlohmann::json& p, std::string_view name) {
    for (const auto& e : events) {
        if (e.at("ph") != "X" || e.at("name") != name || e.at("tid") != p.at("tid")) continue;
        const double ts = e.at("ts").get<double>();
        const double at = p.at("ts").get<double>();
        if (ts <= at && at <= ts + e.at("dur").get<double>()) return true;
    }
    return false;
}

}  // namespace

TEST_CASE("a flow token joins the scope that submitted the work to the scope that ran it, on another thread") {
    stint_test::temp_dir dir;
    stint::profiler<> prof;
    prof.start();
    stint::flow_token token;
    {
        STINT_SCOPE("submit");
        token = stint::flow_token::begin();
    }
    CHECK(token.id() != 0);
    const std::uint64_t id = token.id();
    std::thread worker([&] {
        STINT_SCOPE("run");
        token.end();
        STINT_SCOPE("work");
    });
    worker.join();
    CHECK(token.id() == 0);
    prof.stop();

    const stint::event_list& list = prof.events();
    REQUIRE(list.flows().size() == 1);
    const stint::flow_link& flow = list.flows()[0];
    CHECK(flow.id == id);
    const stint::event& begin = list[flow.begin];
    const stint::event& end = list[flow.end];
    CHECK(begin.kind == stint::event_kind::flow_begin);
    CHECK(end.kind == stint::event_kind::flow_end);
    REQUIRE(list.parent(begin) != std::nullopt);
    REQUIRE(list.parent(end) != std::nullopt);
    CHECK(list.parent(begin)->name == "submit");
    CHECK(list.parent(end)->name == "run");
    CHECK(begin.thread != end.thread);
    CHECK(list.point_id(begin) == id);
    CHECK(list.point_id(*find(list, "run")) == 0);
    CHECK(list.unmatched().total() == 0);
    // A point takes no time from the scope around it.
    CHECK(list.parent(begin)->self_ns == list.parent(begin)->duration_ns());

    const std::string path = dir.file("flow.json");
    prof.export_chrome_trace(path);
    const nlohmann::json trace = stint_test::read_json(path);
    const auto events = stint_test::all_timed_events(trace);
    const nlohmann::json* s = point(events, "s", id);
    const nlohmann::json* f = point(events, "f", id);
    REQUIRE(s != nullptr);
    REQUIRE(f != nullptr);
    CHECK(s->at("cat") == "flow");
    CHECK(f->at("cat") == "flow");
    CHECK(s->at("name") == f->at("name"));
    CHECK(f->at("bp") == "e");  // bound to the enclosing slice, as viewers draw it
    CHECK_FALSE(s->contains("bp"));
    CHECK(s->at("tid") != f->at("tid"));
    CHECK(inside(events, *s, "submit"));
    CHECK(inside(events, *f, "run"));
    CHECK(trace.at("stint").at("unmatched") ==
          nlohmann::json({{"flow_begins", 0}, {"flow_ends", 0}, {"async_open", 0}, {"async_ends", 0}}));
}

TEST_CASE("STINT_FLOW_BEGIN/END pair each begin with the next end of its id, and count what has no partner") {
    stint_test::temp_dir dir;
    stint::profiler<> prof;
    prof.start();
    STINT_FLOW_END(7);  // its begin was before the session: no partner
    for (int round = 0; round < 3; ++round) {
        {
            STINT_SCOPE("producer");
            STINT_FLOW_BEGIN(7);  // the id is reused once its flow has ended
        }
        std::this_thread::sleep_for(50us);
        std::thread([] {
            STINT_SCOPE("consumer");
            STINT_FLOW_END(7);
        }).join();
    }
    {
        STINT_SCOPE("producer");
        STINT_FLOW_BEGIN(8);  // never runs in this session
    }
    prof.stop();

    const stint::event_list& list = prof.events();
    REQUIRE(list.flows().size() == 3);
    std::int64_t last_end = -1;
    for (const stint::flow_link& f : list.flows()) {
        CHECK(f.id == 7);
        CHECK(list.parent(list[f.begin])->name == "producer");
        CHECK(list.parent(list[f.end])->name == "consumer");
        CHECK(list[f.begin].start_ns <= list[f.end].start_ns);
        CHECK(list[f.begin].start_ns >= last_end);  // each begin pairs with the end after it, not a later one
        last_end = list[f.end].start_ns;
    }
    CHECK(list.unmatched().flow_begins == 1);
    CHECK(list.unmatched().flow_ends == 1);

    const std::string path = dir.file("flows.json");
    prof.export_chrome_trace(path);
    const nlohmann::json trace = stint_test::read_json(path);
    CHECK(trace.at("stint").at("unmatched").at("flow_begins") == 1);
    CHECK(trace.at("stint").at("unmatched").at("flow_ends") == 1);
    std::size_t s = 0;
    std::size_t f = 0;
    for (const auto& e : stint_test::all_timed_events(trace)) {
        s += e.at("ph") == "s" ? 1 : 0;
        f += e.at("ph") == "f" ? 1 : 0;
    }
    CHECK(s == 4);  // every point is in the trace: viewers pair them by id, in time
    CHECK(f == 4);
    // Flow points are no rows of key_averages.
    for (const stint::averaged_event& a : prof.key_averages()) CHECK(a.key != "flow");
}

TEST_CASE("an async span begins on one thread and ends on another, with a row of its own in key_averages") {
    stint_test::temp_dir dir;
    stint::profiler<> prof;
    prof.start();
    stint::async_scope span;
    std::uint64_t id = 0;
    {
        STINT_SCOPE("accept");
        span = stint::async_scope("request \"42\"");
        id = span.id();
    }
    CHECK(id != 0);
    std::thread worker([&] {
        std::this_thread::sleep_for(2ms);
        STINT_SCOPE("reply");
        stint::async_scope moved = std::move(span);
        CHECK(span.id() == 0);  // NOLINT(bugprone-use-after-move): a moved-from span is empty
        CHECK(moved.id() == id);
    });  // `moved` ends here, on the worker
    worker.join();
    prof.stop();

    const stint::event_list& list = prof.events();
    REQUIRE(list.async_spans().size() == 1);
    const stint::async_span& a = list.async_spans()[0];
    REQUIRE(a.end != stint::no_index);
    CHECK(a.id == id);
    CHECK(list[a.begin].name == "request \"42\"");
    CHECK(list[a.end].name == "request \"42\"");
    CHECK(list[a.begin].thread != list[a.end].thread);
    CHECK(list.parent(list[a.begin])->name == "accept");
    CHECK(list.parent(list[a.end])->name == "reply");
    const std::int64_t span_ns = list[a.end].start_ns - list[a.begin].start_ns;
    CHECK(span_ns >= 2'000'000);
    CHECK(list.unmatched().total() == 0);

    const stint::averaged_event_list avg = prof.key_averages();
    const stint::averaged_event* row = nullptr;
    for (const stint::averaged_event& r : avg) {
        if (r.key == "request \"42\"") row = &r;
    }
    REQUIRE(row != nullptr);
    CHECK(row->count == 1);
    CHECK(row->cpu_time_total == doctest::Approx(static_cast<double>(span_ns) / 1e3));
    CHECK(row->self_cpu_time_total == 0);  // no thread's CPU time
    CHECK_FALSE(row->has_cpu_parent);
    // The scopes around its points keep their own self time.
    const stint::event accept = find(list, "accept").value();
    CHECK(accept.self_ns == accept.duration_ns());
    CHECK(stint::total_average(list).count == avg.total_average().count);

    const std::string path = dir.file("async.json");
    prof.export_chrome_trace(path);
    const nlohmann::json trace = stint_test::read_json(path);
    const auto events = stint_test::all_timed_events(trace);
    const nlohmann::json* b = point(events, "b", id);
    const nlohmann::json* e = point(events, "e", id);
    REQUIRE(b != nullptr);
    REQUIRE(e != nullptr);
    CHECK(b->at("cat") == "async");
    CHECK(e->at("cat") == "async");
    CHECK(b->at("name") == "request \"42\"");
    CHECK(e->at("name") == "request \"42\"");
    CHECK(b->at("tid") != e->at("tid"));
    CHECK(e->at("ts").get<double>() - b->at("ts").get<double>() >= 2000.0);
    CHECK(inside(events, *b, "accept"));
    CHECK(inside(events, *e, "reply"));
}

TEST_CASE("an async span still open at the stop, and an end whose begin was before the start, are counted") {
    stint_test::temp_dir dir;
    stint::async_scope before("before the session");  // made while nothing records: empty
    CHECK(before.id() == 0);
    stint::profiler<> prof;
    prof.start();
    stint::async_scope open("still open");
    std::thread([] { stint::async_scope("done"); }).join();
    prof.stop();
    const stint::event_list& list = prof.events();
    REQUIRE(list.async_spans().size() == 2);
    CHECK(list.unmatched().async_open == 1);
    CHECK(list.unmatched().async_ends == 0);
    for (const stint::averaged_event& a : prof.key_averages()) CHECK(a.key != "still open");  // no time to show
    const std::string path = dir.file("open.json");
    prof.export_chrome_trace(path);
    CHECK(stint_test::read_json(path).at("stint").at("unmatched").at("async_open") == 1);

    // The span outlives its session: its end lands in the next one, which counts it.
    prof.start();
    open.end();
    prof.stop();
    CHECK(prof.events().unmatched().async_ends == 1);
    CHECK(prof.events().async_spans().empty());
}

TEST_CASE("flow and async span points of a streamed session are written as a stop writes them") {
    stint_test::temp_dir dir;
    const std::string streamed = dir.file("streamed.json");
    std::uint64_t flow_id = 0;
    std::uint64_t span_id = 0;
    {
        stint::profiler<> prof({.stream_to = streamed});
        prof.start();
        stint::flow_token token;
        stint::async_scope span;
        {
            STINT_SCOPE("submit");
            token = stint::flow_token::begin();
            span = stint::async_scope("job");
            flow_id = token.id();
            span_id = span.id();
        }
        std::thread([&] {
            STINT_SCOPE("run");
            token.end();
            span.end();
        }).join();
        STINT_FLOW_BEGIN(99);  // no end: counted
        prof.stop();
    }
    const nlohmann::json trace = stint_test::read_json(streamed);
    const auto events = stint_test::all_timed_events(trace);
    const nlohmann::json* s = point(events, "s", flow_id);
    const nlohmann::json* f = point(events, "f", flow_id);
    const nlohmann::json* b = point(events, "b", span_id);
    const nlohmann::json* e = point(events, "e", span_id);
    REQUIRE(s != nullptr);
    REQUIRE(f != nullptr);
    REQUIRE(b != nullptr);
    REQUIRE(e != nullptr);
    CHECK(f->at("bp") == "e");
    CHECK(inside(events, *s, "submit"));
    CHECK(inside(events, *f, "run"));
    CHECK(b->at("name") == "job");
    CHECK(e->at("name") == "job");
    CHECK(trace.at("stint").at("unmatched").at("flow_begins") == 1);
    CHECK(trace.at("stint").at("unmatched").at("flow_ends") == 0);
    CHECK(trace.at("stint").at("unmatched").at("async_open") == 0);
    CHECK(trace.at("stint").value("values_not_streamed", 0) == 0);  // points carry no values to leave out
}

TEST_CASE("flows and async spans made while no session records record nothing") {
    stint::flow_token token = stint::flow_token::begin();
    CHECK_FALSE(token);
    token.end();
    stint::async_scope span("idle");
    CHECK(span.id() == 0);
    STINT_FLOW_BEGIN(1);
    STINT_FLOW_END(1);
    stint::profiler<> prof;
    prof.start();
    prof.stop();
    CHECK(prof.events().empty());
}

TEST_CASE("points of one id in one tick pair by the list's order on one thread, and across threads either way") {
    stint::detail::event_list_builder b;
    const std::uint32_t submitter = b.add_thread({.os_tid = 1, .name = "submitter"});
    const std::uint32_t worker = b.add_thread({.os_tid = 2, .name = "worker"});
    // Tick 100: the worker's end is listed before the submitter's begin (same tick, other thread): a pair.
    b.set_point_id(b.add(stint::event_kind::flow_end, "flow", worker, 100, 100), 5);
    b.set_point_id(b.add(stint::event_kind::flow_begin, "flow", submitter, 100, 100), 5);
    // Tick 200, one thread: an end listed before the begin has no partner (the program ended first).
    b.set_point_id(b.add(stint::event_kind::flow_end, "flow", worker, 200, 200), 6);
    b.set_point_id(b.add(stint::event_kind::flow_begin, "flow", worker, 200, 200), 6);
    const stint::event_list list = std::move(b).build();
    REQUIRE(list.flows().size() == 1);
    CHECK(list.flows()[0].id == 5);
    CHECK(list[list.flows()[0].begin].thread == submitter);
    CHECK(list[list.flows()[0].end].thread == worker);
    CHECK(list.unmatched().flow_ends == 1);
    CHECK(list.unmatched().flow_begins == 1);
}
