// Perfetto's native trace, read back with protoc against tests/perfetto/stint_perfetto.proto (a subset
// of perfetto.protos written from the schema): every event with its name and category through the
// interning, its times and nesting, the tracks, and the counts of the Chrome trace's "stint" block.
#include <doctest/doctest.h>

#include <sys/wait.h>

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <system_error>
#include <thread>
#include <tuple>
#include <vector>

#include "stint/stint.hpp"
#include "stint/analysis/event_tree.hpp"
#include "stint/export/perfetto_trace.hpp"
#include "test_util.hpp"

namespace {

// ---- protoc's text format: `name: value` and `name { ... }` lines, strings C-escaped.

struct text_node {
    std::string name;
    std::string value;
    std::vector<text_node> children;

    [[nodiscard]] const text_node* child(std::string_view n) const {
        for (const text_node& c : children) {
            if (c.name == n) return &c;
        }
        return nullptr;
    }
    [[nodiscard]] std::vector<const text_node*> all(std::string_view n) const {
        std::vector<const text_node*> found;
        for (const text_node& c : children) {
            if (c.name == n) found.push_back(&c);
        }
        return found;
    }
    [[nodiscard]] bool has(std::string_view n) const { return child(n) != nullptr; }
    [[nodiscard]] std::string text(std::string_view n) const { return has(n) ? child(n)->value : std::string(); }
    [[nodiscard]] std::int64_t number(std::string_view n) const { return has(n) ? std::stoll(child(n)->value) : 0; }
    [[nodiscard]] std::uint64_t unsigned_number(std::string_view n) const {
        return has(n) ? std::stoull(child(n)->value) : 0;
    }
};

std::string unescape(std::string_view quoted) {
    REQUIRE(quoted.size() >= 2);
    REQUIRE(quoted.front() == '"');
    REQUIRE(quoted.back() == '"');
    const std::string_view s = quoted.substr(1, quoted.size() - 2);
    std::string out;
    for (std::size_t i = 0; i < s.size(); ++i) {
        if (s[i] != '\\') {
            out += s[i];
            continue;
        }
        const char c = s[++i];
        if (c >= '0' && c <= '7') {
            int v = 0;
            for (int k = 0; k < 3 && i < s.size() && s[i] >= '0' && s[i] <= '7'; ++k, ++i) v = v * 8 + (s[i] - '0');
            --i;
            out += static_cast<char>(v);
        } else if (c == 'x') {
            out += static_cast<char>(std::stoi(std::string(s.substr(i + 1, 2)), nullptr, 16));
            i += 2;
        } else {
            switch (c) {
                case 'n': out += '\n'; break;
                case 't': out += '\t'; break;
                case 'r': out += '\r'; break;
                default: out += c; break;  // \" \' \\ and the like
            }
        }
    }
    return out;
}

text_node parse_text(const std::string& text) {
    text_node root;
    std::vector<text_node*> path{&root};
    std::size_t at = 0;
    while (at < text.size()) {
        std::size_t end = text.find('\n', at);
        if (end == std::string::npos) end = text.size();
        std::string_view line(text.data() + at, end - at);
        at = end + 1;
        while (!line.empty() && line.front() == ' ') line.remove_prefix(1);
        if (line.empty()) continue;
        // A field the subset does not declare, or one sent with the wrong wire type, decodes as its number.
        INFO("line: " << line);
        REQUIRE_FALSE((line.front() >= '0' && line.front() <= '9'));
        if (line == "}") {
            REQUIRE(path.size() > 1);
            path.pop_back();
        } else if (line.ends_with(" {")) {
            text_node& child = path.back()->children.emplace_back();
            child.name = std::string(line.substr(0, line.size() - 2));
            path.push_back(&child);
        } else {
            const std::size_t colon = line.find(": ");
            REQUIRE(colon != std::string_view::npos);
            text_node& child = path.back()->children.emplace_back();
            child.name = std::string(line.substr(0, colon));
            const std::string_view value = line.substr(colon + 2);
            child.value = value.starts_with('"') ? unescape(value) : std::string(value);
        }
    }
    REQUIRE(path.size() == 1);
    return root;
}

/// protoc's decoding of a trace file (gzip decompressed first), parsed.
text_node decode(const std::string& path, const stint_test::temp_dir& dir) {
    std::string file = path;
    if (path.ends_with(".gz")) {
        file = dir.file("decompressed.pftrace");
        std::ofstream(file, std::ios::binary) << stint_test::read_gzip(path);
    }
    const std::string proto = STINT_TEST_PERFETTO_PROTO;
    const std::size_t slash = proto.rfind('/');
    const std::string command = std::string(STINT_TEST_PROTOC) + " --decode=perfetto.protos.Trace -I '" +
                                proto.substr(0, slash) + "' '" + proto.substr(slash + 1) + "' < '" + file + "' 2>&1";
    FILE* pipe = ::popen(command.c_str(), "r");
    REQUIRE(pipe != nullptr);
    std::string output;
    char block[65536];
    std::size_t n = 0;
    while ((n = std::fread(block, 1, sizeof block, pipe)) > 0) output.append(block, n);
    const int status = ::pclose(pipe);
    INFO(output.substr(0, 2000));
    REQUIRE(WIFEXITED(status));
    REQUIRE(WEXITSTATUS(status) == 0);
    return parse_text(output);
}

// ---- the trace as a reader sees it: tracks, slices, instants and counter values.

struct track {
    std::uint64_t parent = 0;
    std::string name;
    bool is_process = false;
    bool is_thread = false;
    bool is_counter = false;
    std::int64_t pid = 0;
    std::int64_t tid = 0;
    std::string process_name;
    std::string thread_name;
    std::string unit;
};

struct slice {
    std::uint64_t track = 0;
    std::string name;
    std::string category;
    std::uint64_t begin = 0;
    std::uint64_t end = 0;
    std::size_t depth = 0;
    std::map<std::string, std::string> args;
    const text_node* annotations = nullptr;  // the event, for nested annotations
};

struct counter_value {
    std::uint64_t track = 0;
    std::uint64_t ts = 0;
    std::int64_t value = 0;
    double real = 0;       // double_counter_value
    bool is_real = false;
};

struct perfetto_model {
    std::shared_ptr<const text_node> decoded;  // what slices' annotations point into
    std::map<std::uint64_t, track> tracks;
    std::vector<slice> slices;    // in the order they end
    std::vector<slice> instants;  // in file order
    std::vector<counter_value> counters;
};

/// Reads the packets as trace_processor does, checking its rules on the way: every event packet on a
/// sequence whose first packet clears the incremental state, iids defined on the sequence before use,
/// tracks described before their events, each track's timestamps non-decreasing (so a reader's sort by
/// time keeps its file order), every END closing an open slice, none left open.
perfetto_model read_model(text_node decoded) {
    struct sequence_state {
        bool seen = false;
        std::uint64_t track = 0;
        std::map<std::uint64_t, std::string> names, categories, annotation_names;
    };
    std::map<std::uint64_t, sequence_state> sequences;
    std::map<std::uint64_t, std::vector<slice>> open;
    std::map<std::uint64_t, std::uint64_t> last_ts;
    perfetto_model model;
    model.decoded = std::make_shared<const text_node>(std::move(decoded));
    const text_node& trace = *model.decoded;
    const auto interned = [](std::map<std::uint64_t, std::string>& table, const text_node& data,
                             std::string_view field) {
        for (const text_node* entry : data.all(field)) {
            REQUIRE(entry->unsigned_number("iid") != 0);
            CHECK(table.count(entry->unsigned_number("iid")) == 0);  // each iid defined once per sequence
            table[entry->unsigned_number("iid")] = entry->text("name");
        }
    };
    for (const text_node* packet : trace.all("packet")) {
        REQUIRE(packet->has("timestamp"));
        if (const text_node* d = packet->child("track_descriptor")) {
            track t;
            t.parent = d->unsigned_number("parent_uuid");
            t.name = d->text("name");
            if (const text_node* p = d->child("process")) {
                t.is_process = true;
                t.pid = p->number("pid");
                t.process_name = p->text("process_name");
            }
            if (const text_node* th = d->child("thread")) {
                t.is_thread = true;
                t.pid = th->number("pid");
                t.tid = th->number("tid");
                t.thread_name = th->text("thread_name");
            }
            if (const text_node* c = d->child("counter")) {
                t.is_counter = true;
                t.unit = c->text("unit_name");
            }
            const std::uint64_t uuid = d->unsigned_number("uuid");
            REQUIRE(uuid != 0);
            CHECK(model.tracks.count(uuid) == 0);
            model.tracks[uuid] = t;
            continue;
        }
        const text_node* e = packet->child("track_event");
        REQUIRE(e != nullptr);
        REQUIRE(packet->has("trusted_packet_sequence_id"));
        sequence_state& seq = sequences[packet->unsigned_number("trusted_packet_sequence_id")];
        const std::uint64_t flags = packet->unsigned_number("sequence_flags");
        if (!seq.seen) {
            CHECK(flags == 3);  // SEQ_INCREMENTAL_STATE_CLEARED | SEQ_NEEDS_INCREMENTAL_STATE
            CHECK(packet->text("first_packet_on_sequence") == "true");
            seq.seen = true;
        }
        if ((flags & 1) != 0) {
            seq = sequence_state{};
            seq.seen = true;
        }
        if (const text_node* d = packet->child("trace_packet_defaults")) {
            seq.track = d->child("track_event_defaults")->unsigned_number("track_uuid");
        }
        if (const text_node* data = packet->child("interned_data")) {
            interned(seq.names, *data, "event_names");
            interned(seq.categories, *data, "event_categories");
            interned(seq.annotation_names, *data, "debug_annotation_names");
        }
        const std::uint64_t on = e->has("track_uuid") ? e->unsigned_number("track_uuid") : seq.track;
        REQUIRE(model.tracks.count(on) == 1);
        const std::uint64_t ts = packet->unsigned_number("timestamp");
        CHECK(ts >= last_ts[on]);
        last_ts[on] = ts;
        slice s;
        s.track = on;
        s.begin = ts;
        s.annotations = e;
        if (e->has("name_iid")) {
            REQUIRE(seq.names.count(e->unsigned_number("name_iid")) == 1);
            s.name = seq.names[e->unsigned_number("name_iid")];
        }
        for (const text_node* category : e->all("category_iids")) {
            REQUIRE(seq.categories.count(std::stoull(category->value)) == 1);
            s.category = seq.categories[std::stoull(category->value)];
        }
        for (const text_node* a : e->all("debug_annotations")) {
            std::string key = a->text("name");
            if (a->has("name_iid")) {
                REQUIRE(seq.annotation_names.count(a->unsigned_number("name_iid")) == 1);
                key = seq.annotation_names[a->unsigned_number("name_iid")];
            }
            for (const char* value : {"bool_value", "uint_value", "int_value", "double_value", "string_value"}) {
                if (a->has(value)) s.args[key] = a->text(value);
            }
        }
        const std::string type = e->text("type");
        if (type == "TYPE_SLICE_BEGIN") {
            s.depth = open[on].size();
            open[on].push_back(s);
        } else if (type == "TYPE_SLICE_END") {
            CHECK_FALSE(e->has("name_iid"));  // an END with a name only matches a slice of that name
            CHECK_FALSE(e->has("category_iids"));
            REQUIRE_FALSE(open[on].empty());
            slice done = open[on].back();
            open[on].pop_back();
            done.end = ts;
            model.slices.push_back(done);
        } else if (type == "TYPE_INSTANT") {
            s.depth = open[on].size();
            model.instants.push_back(s);
        } else {
            REQUIRE(type == "TYPE_COUNTER");
            REQUIRE(model.tracks[on].is_counter);
            const bool is_real = e->has("double_counter_value");
            model.counters.push_back(
                {on, ts, e->number("counter_value"), is_real ? std::stod(e->text("double_counter_value")) : 0.0, is_real});
        }
    }
    for (const auto& [on, stack] : open) CHECK(stack.empty());
    return model;
}

std::uint64_t thread_track(const perfetto_model& model, std::uint64_t tid) {
    std::uint64_t found = 0;
    for (const auto& [uuid, t] : model.tracks) {
        if (!t.is_thread || static_cast<std::uint64_t>(t.tid) != tid) continue;
        CHECK(found == 0);  // one track per thread
        found = uuid;
    }
    return found;
}

using event_key = std::tuple<std::uint64_t, std::string, std::string, std::uint64_t, std::uint64_t, std::size_t,
                             std::string>;

/// Every event of the list is in the trace on its thread's track, with its name, category, times,
/// depth and "Record function id", and the trace has nothing else; `name_of` gives the name expected
/// for an event's.
template <class NameOf>
void check_events(const stint::event_list& events, const perfetto_model& model, std::uint64_t pid, NameOf name_of) {
    std::map<std::uint64_t, std::uint64_t> track_of_thread;
    for (const stint::thread_info& t : events.threads()) {
        const std::uint64_t uuid = thread_track(model, t.os_tid);
        REQUIRE(uuid != 0);
        const track& described = model.tracks.at(uuid);
        CHECK(described.pid == static_cast<std::int64_t>(pid));
        CHECK(described.thread_name == (t.name.empty() ? "thread " + std::to_string(t.os_tid) : t.name));
        track_of_thread[t.os_tid] = uuid;
    }
    std::vector<event_key> expected_slices;
    std::vector<event_key> expected_instants;
    std::map<std::uint64_t, std::optional<stint::event>> by_id;
    for (const stint::event& e : events) {
        if (e.kind == stint::event_kind::counter) continue;  // on its counter track (counter_track_samples)
        by_id[e.id] = e;
        const auto start = static_cast<std::uint64_t>(e.start_ns);
        const bool instant = stint::is_zero_length_kind(e.kind);
        event_key key{track_of_thread.at(events.thread_of(e).os_tid), name_of(e.name),
                      std::string(stint::category_name(e.kind)), start,
                      instant ? start : static_cast<std::uint64_t>(e.end_ns), instant ? 0 : e.depth,
                      std::to_string(e.id)};
        (instant ? expected_instants : expected_slices).push_back(key);
    }
    std::vector<event_key> slices;
    std::vector<event_key> instants;
    for (const slice& s : model.slices) {
        slices.emplace_back(s.track, s.name, s.category, s.begin, s.end, s.depth, s.args.at("Record function id"));
    }
    for (const slice& s : model.instants) {
        if (s.category == "stint") continue;  // the stats
        instants.emplace_back(s.track, s.name, s.category, s.begin, s.begin, 0, s.args.at("Record function id"));
        // An instant keeps its time: inside its parent, and inside a slice that began in its nanosecond.
        const auto found = by_id.find(std::stoull(s.args.at("Record function id")));
        REQUIRE(found != by_id.end());
        CHECK(s.depth >= found->second->depth);
    }
    std::sort(expected_slices.begin(), expected_slices.end());
    std::sort(expected_instants.begin(), expected_instants.end());
    std::sort(slices.begin(), slices.end());
    std::sort(instants.begin(), instants.end());
    CHECK(slices == expected_slices);
    CHECK(instants == expected_instants);
}

const slice& stats_of(const perfetto_model& model) {
    const slice* found = nullptr;
    for (const slice& s : model.instants) {
        if (s.name != "stint stats") continue;
        CHECK(found == nullptr);
        found = &s;
    }
    REQUIRE(found != nullptr);
    CHECK(found->category == "stint");
    CHECK(model.tracks.at(found->track).is_process);
    return *found;
}

/// The per-thread counts of the stats' "threads" annotation: tid -> (name, recorded, dropped).
std::map<std::uint64_t, std::tuple<std::string, std::uint64_t, std::uint64_t>> stats_threads(const slice& stats) {
    std::map<std::uint64_t, std::tuple<std::string, std::uint64_t, std::uint64_t>> threads;
    for (const text_node* a : stats.annotations->all("debug_annotations")) {
        if (a->text("name") != "threads") continue;
        for (const text_node* entry : a->all("array_values")) {
            std::map<std::string, std::string> fields;
            for (const text_node* f : entry->all("dict_entries")) {
                fields[f->text("name")] = f->has("string_value") ? f->text("string_value") : f->text("uint_value");
            }
            threads[std::stoull(fields.at("tid"))] = {fields.at("name"), std::stoull(fields.at("recorded")),
                                                      std::stoull(fields.at("dropped"))};
        }
    }
    return threads;
}

/// The samples of the counter track named `name`: one such track in the process, its samples in order.
std::vector<counter_value> counter_track_samples(const perfetto_model& model, std::string_view name,
                                                 std::string_view unit = "") {
    std::uint64_t uuid = 0;
    for (const auto& [id, t] : model.tracks) {
        if (t.name != name) continue;
        CHECK(uuid == 0);
        uuid = id;
        CHECK(t.is_counter);
        CHECK(t.unit == unit);
        CHECK(model.tracks.at(t.parent).is_process);
    }
    REQUIRE(uuid != 0);
    std::vector<counter_value> samples;
    for (const counter_value& c : model.counters) {
        if (c.track == uuid) samples.push_back(c);
    }
    return samples;
}

/// The dropped records' counter: one track in the process, one value.
std::int64_t dropped_counter(const perfetto_model& model) {
    const std::vector<counter_value> samples = counter_track_samples(model, "stint dropped records", "records");
    REQUIRE(samples.size() == 1);
    return samples[0].value;
}

stint::event_list hand_built_list() {
    stint::detail::event_list_builder b;
    const std::uint32_t main_thread = b.add_thread({.os_tid = 900, .name = "main", .recorded = 8, .dropped = 2});
    const std::uint32_t worker = b.add_thread({.os_tid = 7, .name = "", .recorded = 2, .dropped = 1});
    b.add(stint::event_kind::user_annotation, "step", main_thread, 0, 100);
    b.add(stint::event_kind::cpu_op, "aten::mm", main_thread, 10, 40);
    b.add(stint::event_kind::cpu_op, "aten::add", main_thread, 40, 40);  // zero length, where its sibling ends
    b.add(stint::event_kind::instant, "tick", main_thread, 50, 50);
    b.add(stint::event_kind::cpu_op, "aten::relu", main_thread, 60, 100);  // ends with its parent
    b.add(stint::event_kind::user_annotation, "step", main_thread, 100, 250);  // begins where the first ends
    b.add(stint::event_kind::cpu_op, "aten::mm", main_thread, 100, 250);
    b.add(stint::event_kind::cpu_op, "aten::mm", main_thread, 100, 250);
    b.add(stint::event_kind::user_annotation, "work", worker, 5, 3'600'000'000'000);
    b.add(stint::event_kind::cpu_op, "aten::mm", worker, 6, 7);
    b.set_totals(10, 3, 4);
    b.set_base_time_ns(1'700'000'000'123'456'789);
    return std::move(b).build();
}

std::string same(std::string_view name) { return std::string(name); }

}  // namespace

TEST_CASE("a perfetto trace holds every event of a hand-built list with its name, times and nesting") {
    stint_test::temp_dir dir;
    const stint::event_list events = hand_built_list();
    const std::string path = dir.file("t.pftrace");
    stint::detail::write_perfetto_trace_file(path, events, {.pid = 4321, .truncated_names = 5});
    const perfetto_model model = read_model(decode(path, dir));
    check_events(events, model, 4321, same);

    SUBCASE("tracks: one process, a thread track per thread, a counter") {
        std::size_t processes = 0;
        for (const auto& [uuid, t] : model.tracks) {
            if (!t.is_process) continue;
            ++processes;
            CHECK(t.pid == 4321);
            CHECK(t.process_name == "stint");
        }
        CHECK(processes == 1);
        CHECK(model.tracks.size() == 4);
        CHECK(model.tracks.at(thread_track(model, 7)).thread_name == "thread 7");
    }
    SUBCASE("the depth and parent of each slice follow the list's tree") {
        std::map<std::string, std::size_t> depth_of;
        for (const slice& s : model.slices) {
            if (s.track == thread_track(model, 900)) depth_of[s.name + "@" + std::to_string(s.begin)] = s.depth;
        }
        CHECK(depth_of.at("step@0") == 0);
        CHECK(depth_of.at("aten::add@40") == 1);
        CHECK(depth_of.at("aten::relu@60") == 1);
        CHECK(depth_of.at("step@100") == 0);
        CHECK(model.instants.size() == 2);
    }
    SUBCASE("the stats carry the counts, per thread too, and the dropped records are a counter") {
        const slice& stats = stats_of(model);
        CHECK(stats.args.at("recorded") == "10");
        CHECK(stats.args.at("dropped") == "3");
        CHECK(stats.args.at("late") == "4");
        CHECK(stats.args.at("truncated_names") == "5");
        CHECK(stats.args.at("version") == STINT_VERSION_STRING);
        CHECK(stats.args.at("base_time_ns") == "1700000000123456789");
        CHECK(stats.begin == 0);
        const auto threads = stats_threads(stats);
        CHECK(threads.size() == 2);
        CHECK(threads.at(900) == std::tuple<std::string, std::uint64_t, std::uint64_t>{"main", 8, 2});
        CHECK(threads.at(7) == std::tuple<std::string, std::uint64_t, std::uint64_t>{"", 2, 1});
        CHECK(dropped_counter(model) == 3);
    }
}

TEST_CASE("a perfetto trace of an empty list still has its tracks and counts") {
    stint_test::temp_dir dir;
    stint::detail::event_list_builder b;
    b.set_totals(0, 17);
    const stint::event_list events = std::move(b).build();
    const std::string path = dir.file("empty.pftrace");
    stint::detail::write_perfetto_trace_file(path, events, {.pid = 1});
    const perfetto_model model = read_model(decode(path, dir));
    CHECK(model.slices.empty());
    CHECK(stats_of(model).args.at("dropped") == "17");
    CHECK(dropped_counter(model) == 17);
}

TEST_CASE("names with quotes, control characters, NUL bytes and invalid UTF-8 are valid UTF-8 in a perfetto trace") {
    stint_test::temp_dir dir;
    const std::map<std::string, std::string> expected{
        {"quote \" and backslash \\", "quote \" and backslash \\"},
        {"new\nline\ttab\rreturn", "new\nline\ttab\rreturn"},
        {std::string("nul\0inside", 10), std::string("nul\0inside", 10)},
        {"bad utf8 \xff\xfe end", "bad utf8 \xef\xbf\xbd\xef\xbf\xbd end"},
        {"truncated \xe4\xb8", "truncated \xef\xbf\xbd"},
        {"ok utf8 \xc3\xa9 \xe4\xb8\xad \xf0\x9f\x98\x80", "ok utf8 \xc3\xa9 \xe4\xb8\xad \xf0\x9f\x98\x80"},
    };
    stint::profiler<> prof;
    prof.start();
    for (const auto& [name, valid] : expected) {
        stint::record_function outer(name);
        stint::record_function inner(name);  // the same name twice: interned once on the sequence
    }
    prof.stop();
    const std::string path = dir.file("names.pftrace");
    prof.export_perfetto_trace(path);
    const perfetto_model model = read_model(decode(path, dir));
    check_events(prof.events(), model, stint::detail::current_pid(),
                 [&](std::string_view name) { return expected.at(std::string(name)); });
    CHECK(model.slices.size() == 2 * expected.size());
}

TEST_CASE("a profiler session's perfetto trace matches its events and its chrome trace's counts") {
    stint_test::temp_dir dir;
    stint::profiler<> prof({.buffer_budget_bytes = 256 << 10});
    prof.start();
    const auto nest = [](int depth, auto&& self) -> void {
        if (depth == 0) return;
        STINT_SCOPE("level");
        {
            STINT_SCOPE("left");
        }
        self(depth - 1, self);
        STINT_INSTANT("between");
    };
    std::vector<std::thread> workers;
    for (int w = 0; w < 3; ++w) {
        workers.emplace_back([w, &nest] {
            stint::set_thread_name("worker " + std::to_string(w));
            for (int i = 0; i < (w == 2 ? 10'000 : 50); ++i) nest(1 + i % 6, nest);  // worker 2 runs out of budget
        });
    }
    for (auto& t : workers) t.join();
    for (int i = 0; i < 20; ++i) nest(4, nest);
    prof.stop();
    const std::string path = dir.file("session.pftrace");
    prof.export_perfetto_trace(path);
    prof.export_chrome_trace(dir.file("session.json"));
    const perfetto_model model = read_model(decode(path, dir));
    check_events(prof.events(), model, stint::detail::current_pid(), same);

    const auto chrome = stint_test::read_json(dir.file("session.json"))["stint"];
    const slice& stats = stats_of(model);
    CHECK(chrome["dropped"].get<std::uint64_t>() > 0);
    for (const char* count : {"recorded", "dropped", "late", "truncated_names"}) {
        CHECK(stats.args.at(count) == std::to_string(chrome[count].get<std::uint64_t>()));
    }
    CHECK(dropped_counter(model) == chrome["dropped"].get<std::int64_t>());
    const auto threads = stats_threads(stats);
    CHECK(threads.size() == chrome["threads"].size());
    for (const auto& t : chrome["threads"]) {
        CHECK(threads.at(t["tid"].get<std::uint64_t>()) ==
              std::tuple<std::string, std::uint64_t, std::uint64_t>{t["name"], t["recorded"], t["dropped"]});
    }
}

TEST_CASE("a flow in a perfetto trace joins its two points by flow_ids and terminating_flow_ids; counts show") {
    stint_test::temp_dir dir;
    stint::profiler<> prof;
    prof.start();
    stint::flow_token token;
    {
        STINT_SCOPE("submit");
        token = stint::flow_token::begin();
    }
    std::thread([&] {
        STINT_SCOPE("run");
        token.end();
        stint::async_scope("job");
    }).join();
    STINT_FLOW_END(12345);  // no begin: counted
    prof.stop();
    REQUIRE(prof.events().flows().size() == 1);
    const std::uint64_t id = prof.events().flows()[0].id;
    const std::string path = dir.file("flows.pftrace");
    prof.export_perfetto_trace(path);
    const perfetto_model model = read_model(decode(path, dir));
    check_events(prof.events(), model, stint::detail::current_pid(), same);
    const slice* begin = nullptr;
    const slice* end = nullptr;
    for (const slice& s : model.instants) {
        if (s.annotations->has("flow_ids") && s.annotations->unsigned_number("flow_ids") == id) begin = &s;
        if (s.annotations->has("terminating_flow_ids") &&
            s.annotations->unsigned_number("terminating_flow_ids") == id) {
            end = &s;
        }
    }
    REQUIRE(begin != nullptr);
    REQUIRE(end != nullptr);
    CHECK(begin->category == "flow");
    CHECK(begin->depth == 1);  // inside "submit"
    CHECK(end->depth == 1);    // inside "run"
    CHECK(begin->track != end->track);
    const slice& stats = stats_of(model);
    CHECK(stats.args.at("unmatched_flow_ends") == "1");
    CHECK(stats.args.at("unmatched_flow_begins") == "0");
    CHECK(stats.args.at("async_open") == "0");
}

TEST_CASE("stint::add_args are an event's debug annotations in a perfetto trace, every type with its value") {
    stint_test::temp_dir dir;
    stint::profiler<> prof;
    prof.start();
    {
        STINT_SCOPE("step");
        stint::event_token op = stint::begin_event(stint::event_kind::cpu_op, "aten::mm");
        stint::add_args({{"Sequence number", std::int64_t{-7}},
                         {"Fwd thread id", std::uint64_t{18'000'000'000'000'000'000ULL}},
                         {"scale", 0.25},
                         {"training", true},
                         {"schema", "aten::mm(Tensor self, Tensor mat2) -> Tensor"}});
    }
    prof.stop();
    const std::string path = dir.file("args.pftrace");
    prof.export_perfetto_trace(path);
    const perfetto_model model = read_model(decode(path, dir));
    check_events(prof.events(), model, stint::detail::current_pid(), same);
    const slice* op = nullptr;
    for (const slice& s : model.slices) {
        if (s.name == "aten::mm") op = &s;
    }
    REQUIRE(op != nullptr);
    CHECK(op->args.at("Sequence number") == "-7");
    CHECK(op->args.at("Fwd thread id") == "18000000000000000000");
    CHECK(std::stod(op->args.at("scale")) == 0.25);
    CHECK(op->args.at("training") == "true");
    CHECK(op->args.at("schema") == "aten::mm(Tensor self, Tensor mat2) -> Tensor");
    for (const slice& s : model.slices) {
        if (s.name == "step") CHECK(s.args.count("Sequence number") == 0);  // only the op has them
    }
}

TEST_CASE("a .pftrace.gz path writes gzip that decompresses to the same perfetto trace") {
    stint_test::temp_dir dir;
    const stint::event_list events = hand_built_list();
    stint::detail::write_perfetto_trace_file(dir.file("t.pftrace"), events, {.pid = 3});
    stint::detail::write_perfetto_trace_file(dir.file("t.pftrace.gz"), events, {.pid = 3});
    const std::string packed = stint_test::read_file(dir.file("t.pftrace.gz"));
    REQUIRE(packed.size() > 2);
    CHECK(static_cast<unsigned char>(packed[0]) == 0x1f);
    CHECK(static_cast<unsigned char>(packed[1]) == 0x8b);
    CHECK(stint_test::read_gzip(dir.file("t.pftrace.gz")) == stint_test::read_file(dir.file("t.pftrace")));
    check_events(events, read_model(decode(dir.file("t.pftrace.gz"), dir)), 3, same);
}

TEST_CASE("a perfetto trace to an unwritable path throws std::system_error naming the path") {
    stint_test::temp_dir dir;
    const std::string path = dir.file("missing/t.pftrace");
    try {
        stint::detail::write_perfetto_trace_file(path, hand_built_list(), {.pid = 3});
        FAIL("no exception");
    } catch (const std::system_error& e) {
        CHECK(std::string(e.what()) == stint_test::write_error_text(path, "No such file or directory"));
    }
}

TEST_CASE("export_perfetto_trace while recording is refused") {
    stint_test::temp_dir dir;
    stint::profiler<> prof;
    prof.start();
    CHECK_THROWS_WITH_AS(prof.export_perfetto_trace(dir.file("t.pftrace")),
                         "stint: export_perfetto_trace(): the profiler didn't finish running; call stop() first",
                         std::logic_error);
    prof.stop();
}

TEST_CASE("device streams, their syncs and memory events are in a perfetto trace") {
    stint_test::temp_dir dir;
    stint::detail::event_list_builder b;
    const std::uint32_t cpu = b.add_thread({.os_tid = 11, .name = "main"});
    const stint::event_index op = b.add(stint::event_kind::cpu_op, "aten::mm", cpu, 0, 10'000);
    const std::uint32_t stream = b.device_track({stint::device_type::cuda, 0}, 7);
    b.set_launcher(b.add_device_event(stint::event_kind::kernel, "gemm", stream, 2'000, 4'000, {}), op);
    b.set_launcher(b.add_device_event(stint::event_kind::kernel, "gemm", stream, 4'000, 6'000, {}), op);
    stint::device_args sync;
    sync.sync_type = 3;  // a stream sync: drawn on the stream's sync row
    b.set_launcher(b.add_device_event(stint::event_kind::cuda_sync, "Stream Sync", stream, 3'000, 6'500, sync), op);
    b.add_memory_event(stint::event_kind::memory, cpu, 500, {.addr = 0x1000, .bytes = 400}, 1);
    b.add_memory_event(stint::event_kind::out_of_memory, cpu, 600, {.bytes = 1 << 30}, 2);
    const stint::event_list events = std::move(b).build();
    const std::string path = dir.file("device.pftrace");
    stint::detail::write_perfetto_trace_file(path, events, {.pid = 77});
    const perfetto_model model = read_model(decode(path, dir));

    std::map<std::string, std::vector<std::tuple<std::string, std::string, std::uint64_t, std::uint64_t>>> on_track;
    for (const slice& s : model.slices) {
        const track& t = model.tracks.at(s.track);
        const std::string where = t.is_thread ? "thread " + std::to_string(t.tid) : t.name;
        if (!t.is_thread) CHECK(model.tracks.at(t.parent).is_process);  // device tracks sit in the process
        if (!t.is_thread) CHECK(s.args.count("Record function id") == 0);
        on_track[where].emplace_back(s.name, s.category, s.begin, s.end);
    }
    using row = std::tuple<std::string, std::string, std::uint64_t, std::uint64_t>;
    CHECK(on_track.size() == 3);
    CHECK(on_track["thread 11"] == std::vector<row>{{"aten::mm", "cpu_op", 0, 10'000}});
    CHECK(on_track["GPU 0 stream 7"] ==
          std::vector<row>{{"gemm", "kernel", 2'000, 4'000}, {"gemm", "kernel", 4'000, 6'000}});
    CHECK(on_track["GPU 0 stream 7 (sync)"] == std::vector<row>{{"Stream Sync", "cuda_sync", 3'000, 6'500}});

    REQUIRE(model.instants.size() == 3);  // the stats, [memory], [OutOfMemory]
    const slice& memory = model.instants[1];
    CHECK(memory.name == "[memory]");
    CHECK(memory.category == "cpu_instant_event");
    CHECK(memory.begin == 500);
    CHECK(memory.depth == 1);  // inside aten::mm
    CHECK(memory.args == std::map<std::string, std::string>{{"Total Reserved", "400"}, {"Total Allocated", "400"},
                                                            {"Bytes", "400"}, {"Addr", "4096"}, {"Device Id", "-1"},
                                                            {"Device Type", "0"}});
    const slice& oom = model.instants[2];
    CHECK(oom.name == "[OutOfMemory]");
    CHECK(oom.args.count("Addr") == 0);
    CHECK(oom.args.at("Bytes") == "1073741824");
}

TEST_CASE("a name larger than the perfetto writer's buffer is written whole") {
    stint_test::temp_dir dir;
    const std::string huge(3 << 20, 'x');  // 3 MiB: its interning packet outgrows the 1 MiB buffer
    stint::detail::event_list_builder b;
    const std::uint32_t t = b.add_thread({.os_tid = 5, .name = "main"});
    b.add(stint::event_kind::user_annotation, "before", t, 0, 10);
    b.add(stint::event_kind::user_annotation, huge, t, 10, 20);
    b.add(stint::event_kind::user_annotation, "after", t, 20, 30);
    const stint::event_list events = std::move(b).build();
    const std::string path = dir.file("huge.pftrace");
    stint::detail::write_perfetto_trace_file(path, events, {.pid = 9});
    const perfetto_model model = read_model(decode(path, dir));
    check_events(events, model, 9, same);
}

TEST_CASE("counters and memory totals are counter tracks of the process in a perfetto trace") {
    using mem = stint::config<stint::profile_memory>;
    stint_test::temp_dir dir;
    stint::counter<double> load{"load"};
    stint::profiler<mem> prof;
    prof.start();
    int block = 0;
    {
        STINT_SCOPE("step");
        STINT_COUNTER("queue depth", 3);
        load.set(0.5);
        stint::report_alloc(&block, 400);
        STINT_COUNTER("queue depth", -9);
        load.set(-1e300);
        stint::report_free(&block);
    }
    prof.stop();
    const std::string path = dir.file("counters.pftrace");
    prof.export_perfetto_trace(path);
    const perfetto_model model = read_model(decode(path, dir));
    const stint::event_list& events = prof.events();

    std::map<std::string, std::vector<std::uint64_t>> expected_ts;  // by track, its samples' times
    for (const stint::event& e : events) {
        const auto ts = static_cast<std::uint64_t>(e.start_ns);
        if (e.kind == stint::event_kind::counter) expected_ts[std::string(e.name)].push_back(ts);
        if (e.kind == stint::event_kind::memory) {
            expected_ts["Total Allocated (cpu)"].push_back(ts);
            expected_ts["Total Reserved (cpu)"].push_back(ts);
        }
    }
    const auto check_track = [&](std::string_view name, std::string_view unit) {
        const std::vector<counter_value> samples = counter_track_samples(model, name, unit);
        std::vector<std::uint64_t> ts;
        for (const counter_value& c : samples) ts.push_back(c.ts);
        CHECK(ts == expected_ts.at(std::string(name)));
        return samples;
    };
    const std::vector<counter_value> depth = check_track("queue depth", "");
    REQUIRE(depth.size() == 2);
    CHECK((!depth[0].is_real && depth[0].value == 3));
    CHECK((!depth[1].is_real && depth[1].value == -9));
    const std::vector<counter_value> loads = check_track("load", "");
    REQUIRE(loads.size() == 2);
    CHECK((loads[0].is_real && loads[0].real == 0.5));
    CHECK((loads[1].is_real && loads[1].real == -1e300));
    const std::vector<counter_value> allocated = check_track("Total Allocated (cpu)", "bytes");
    REQUIRE(allocated.size() == 2);
    CHECK(allocated[0].value == 400);
    CHECK(allocated[1].value == 0);
    CHECK(check_track("Total Reserved (cpu)", "bytes").size() == 2);
    CHECK(dropped_counter(model) == 0);
    // The counters' names are no slices or instants; the scope is a slice of its own.
    for (const slice& s : model.instants) CHECK((s.name != "queue depth" && s.name != "load"));
    std::size_t steps = 0;
    for (const slice& s : model.slices) {
        CHECK((s.name != "queue depth" && s.name != "load"));
        steps += s.name == "step" ? 1 : 0;
    }
    CHECK(steps == 1);
}
