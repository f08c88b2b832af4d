#pragma once
// Checks a timing-only window's trace written from its records (no event list) against the trace of
// the event list built from the same records: the same top-level keys, the same events (every field),
// and an order in which viewers nest them as the list says.

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "stint/stint.hpp"
#include "test_util.hpp"

namespace records_trace {

/// Both traces of one window, and how many parent-child pairs had the same times.
struct compared {
    nlohmann::json from_records;
    nlohmann::json from_list;
    std::size_t equal_times = 0;
};

/// Exports `prof`'s last window before anything reads its events (from the records), then reads its
/// events and exports again (from the list), and compares.
template <class Profiler>
compared check_same_as_list(Profiler& prof, const stint_test::temp_dir& dir) {
    const std::string from_records = dir.file("records.json");
    const std::string from_list = dir.file("list.json");
    prof.export_chrome_trace(from_records);
    const stint::event_list& list = prof.events();
    prof.export_chrome_trace(from_list);
    const nlohmann::json a = stint_test::read_json(from_records);
    const nlohmann::json b = stint_test::read_json(from_list);

    for (const auto& item : b.items()) {  // no structured binding: clang 14 cannot capture one in INFO
        const std::string key = item.key();
        if (key == "traceEvents") continue;
        INFO("key " << key);
        REQUIRE(a.contains(key));
        CHECK(a[key] == item.value());
    }
    CHECK(a.size() == b.size());
    std::vector<std::string> events_a;
    std::vector<std::string> events_b;
    for (const auto& e : a["traceEvents"]) events_a.push_back(e.dump());
    for (const auto& e : b["traceEvents"]) events_b.push_back(e.dump());
    std::sort(events_a.begin(), events_a.end());
    std::sort(events_b.begin(), events_b.end());
    CHECK(events_a.size() == events_b.size());
    CHECK(events_a == events_b);

    // Each event's "Record function id" is its id in the list; of a parent and a child with the same
    // times, the parent comes first (viewers nest equal times by their order).
    std::map<std::uint64_t, std::size_t> position;
    const auto& events = a["traceEvents"];
    for (std::size_t i = 0; i < events.size(); ++i) {
        // A counter's sample has no id, nor has a global note of stint's (what a track could not show).
        if (events[i]["ph"] == "M" || events[i]["ph"] == "C" || events[i].value("s", "") == "g") continue;
        position[events[i]["args"]["Record function id"].get<std::uint64_t>()] = i;
    }
    std::size_t counters = 0;
    for (const stint::event& e : list) counters += e.kind == stint::event_kind::counter ? 1 : 0;
    REQUIRE(position.size() + counters == list.size());
    std::size_t equal_times = 0;
    for (const stint::event& e : list) {
        if (e.kind == stint::event_kind::counter) continue;
        REQUIRE(position.count(e.id) == 1);
        if (e.parent == stint::no_index) continue;
        const stint::event& parent = list[e.parent];
        if (parent.start_ns != e.start_ns || parent.end_ns != e.end_ns) continue;
        ++equal_times;
        CHECK(position.at(parent.id) < position.at(e.id));
    }
    return {a, b, equal_times};
}

/// Whether each thread's events form one block in the file (the records are written thread by thread;
/// the list's trace is in start order).
inline bool threads_contiguous(const nlohmann::json& trace) {
    std::vector<std::uint64_t> order;
    for (const auto& e : trace["traceEvents"]) {
        if (e["ph"] == "M") continue;
        const auto tid = e["tid"].get<std::uint64_t>();
        if (order.empty() || order.back() != tid) order.push_back(tid);
    }
    std::vector<std::uint64_t> sorted = order;
    std::sort(sorted.begin(), sorted.end());
    return std::adjacent_find(sorted.begin(), sorted.end()) == sorted.end();
}

}  // namespace records_trace
