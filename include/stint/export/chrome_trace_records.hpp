#pragma once
// A Chrome trace written straight from a closed session's records (drain/record_store.hpp), with no
// event list: the same events, ids and times as write_chrome_trace gives for the list built from those
// records, in an order viewers nest the same way. Used when the records are timing-only (or carry only
// runtime names or counters' values) and nothing else was asked for, so that the biggest sessions stop and export in the
// memory their records already take (design §8).

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include <fmt/compile.h>
#include <fmt/format.h>

#include "stint/drain/record_store.hpp"
#include "stint/export/chrome_trace.hpp"
#include "stint/detail/deferred.hpp"
#include "stint/export/json_writer.hpp"
#include "stint/export/output_file.hpp"
#include "stint/export/trace_time.hpp"

namespace stint::detail {

/// Whether write_chrome_trace can take `records` as they are: every record timing-only or carrying
/// only a runtime name or a counter's value, and each OS thread in one buffer (several buffers of one thread, one per shared
/// object, are merged by the event list's linking).
template <class Unused = void>
bool chrome_trace_from_records(const record_store& records) {
    deferred_t<std::unordered_set<std::uint64_t>, Unused> tids;
    for (const record_store::thread_records& t : records.threads()) {
        if (!t.timing_only || !tids.insert(t.counts.os_tid).second) return false;
    }
    return true;
}

namespace chrome_records_detail {

// Whether the trace draws an event of `kind` as an instant ("ph": "i", no "dur").
constexpr bool drawn_as_instant(event_kind kind) noexcept {
    return kind == event_kind::instant || is_memory_kind(kind);
}

// The fixed start of an event of `kind`, up to its name.
template <class = void>
std::string_view event_opening(event_kind kind) {
    return drawn_as_instant(kind) ? std::string_view(",\n    {\"ph\": \"i\", \"s\": \"t\", \"cat\": \"")
                                       : std::string_view(",\n    {\"ph\": \"X\", \"cat\": \"");
}

}  // namespace chrome_records_detail

/// Writes one thread's records as trace events, fed in the order the thread wrote them (all at once, or
/// batch by batch while a session streams). Each event gets the "dur" trace_timeline would give it: a
/// child that ends in its parent's nanosecond is held at or below the parent's ends, which are decided
/// from the parent's own parent, and so on up. Records are held while the next record ends in the same
/// nanosecond (only an ancestor that ends with them can bound them, and one arrives right after its
/// last child); each group of such records is written parent first, so viewers nest equal times as the
/// program did.
template <class Writer>
class thread_trace_writer {
    template <class T>
    using later = deferred_t<T, Writer>;  // checked when used (detail/deferred.hpp)

public:
    /// `origin`: the start (µs) of the thread's earliest non-instant event, a viewer's origin for the
    /// row (chrome_records_detail::origin_of).
    thread_trace_writer(Writer& out, const tick_calibration& calibration, later<std::uint64_t> pid,
                        std::uint64_t tid, double origin)
        : out_(out), calibration_(calibration),
          where_(fmt::format(", \"pid\": {}, \"tid\": {}, \"ts\": ", pid, tid)), origin_(origin) {}

    /// Adds the thread's next record that makes an event (not outputs, not a device link), whose event
    /// gets `id`. A record that carries more than a runtime name is written with its name and times
    /// only (values_left_out counts it).
    void add(const record& r, const record_payload& payload, std::uint64_t id) {
        const std::int64_t start = calibration_.to_ns_since_anchor(r.begin_ticks);
        const std::int64_t end = std::max(calibration_.to_ns_since_anchor(r.end_ticks), start);
        // The depth as the event list unwraps it: it falls at most one level per record.
        if (have_previous_) {
            const auto step = static_cast<std::uint16_t>(r.depth() - previous_depth_);
            level_ += step == 0xffff ? -1 : step;
        }
        have_previous_ = true;
        previous_depth_ = r.depth();
        if (!held_.empty() && end != held_end_) flush();
        held_end_ = end;
        const auto index = static_cast<std::uint32_t>(held_.size());
        held& h = held_.emplace_back();
        h.where = r.where();
        h.start = start;
        h.end = end;
        h.level = level_;
        h.id = id;
        const payload_kind kind = h.where->payload;
        if (kind == payload_kind::point) {
            const point_payload point = read_point(payload);
            h.point_id = point.id;
            if (!point.name.empty()) {
                h.name = point.name;
                h.runtime_name = true;
            }
        }
        if (kind == payload_kind::runtime_name || kind == payload_kind::runtime_name_inputs) {
            // The name first; the header's aux is its length.
            h.name = {reinterpret_cast<const char*>(payload.bytes.data()),
                      std::min<std::size_t>(payload.aux, payload.bytes.size())};
            h.runtime_name = true;
        }
        if (kind == payload_kind::counter) h.counter = read_counter(payload);
        if (kind != payload_kind::none && kind != payload_kind::runtime_name && kind != payload_kind::point &&
            kind != payload_kind::counter) {
            ++values_left_out_;
        }
        // The held records deeper than this one are its children (they end with it: it bounds them).
        while (!roots_.empty() && held_[roots_.back()].level > level_) {
            held_[roots_.back()].parent = index;
            roots_.pop_back();
        }
        roots_.push_back(index);
    }

    /// Records added and not written yet (held until a record of another end arrives).
    [[nodiscard]] std::size_t held_count() const noexcept { return held_.size(); }

    /// Records whose captured values (inputs, native frames, memory details) were left out.
    [[nodiscard]] std::uint64_t values_left_out() const noexcept { return values_left_out_; }
    /// Counts a record of the thread that made no event and whose values were left out (outputs).
    void leave_out_values() noexcept { ++values_left_out_; }

    /// Copies the runtime names of the records still held (their buffer is about to be freed).
    void own_held_names() {
        for (held& h : held_) {
            if (!h.runtime_name || h.owned) continue;
            h.owned = std::make_unique<std::string>(h.name);
            h.name = *h.owned;
        }
    }

    /// Writes what is held: the thread's last records have arrived.
    void flush() {
        if (held_.size() == 1) {  // the usual case: no tie to resolve
            write_event(held_[0], trace_end{});
            held_.clear();
            roots_.clear();
            return;
        }
        // Children were added before their parent; each group is written parent first.
        children_.assign(held_.size(), {});
        for (std::uint32_t i = 0; i < held_.size(); ++i) {
            if (held_[i].parent != no_parent) children_[held_[i].parent].push_back(i);
        }
        for (const std::uint32_t root : roots_) write_subtree(root, trace_end{});
        held_.clear();
        roots_.clear();
    }

private:
    static constexpr std::uint32_t no_parent = 0xffffffffU;
    struct held {
        const site* where = nullptr;
        std::string_view name;                 // a runtime name
        bool runtime_name = false;
        later<std::unique_ptr<std::string>> owned;  // ... kept across batches
        std::int64_t start = 0;
        std::int64_t end = 0;
        std::int64_t level = 0;
        std::uint64_t id = 0;
        std::uint64_t point_id = 0;            // a flow's or async span's point: its id
        counter_value counter;                 // a counter's sample: its value
        std::uint32_t parent = no_parent;      // within held_
    };

    // Writes held record `root` and what it bounds, each before its children (a loop, not recursion:
    // a group can be as deep as the program's nesting).
    void write_subtree(std::uint32_t root, trace_end cap) {
        pending_.clear();
        pending_.push_back({root, cap});
        while (!pending_.empty()) {
            const auto [i, bound] = pending_.back();
            pending_.pop_back();
            const trace_end ends = write_event(held_[i], bound);
            // Reversed onto the stack, so that children are written in the order they arrived.
            for (auto child = children_[i].rbegin(); child != children_[i].rend(); ++child) {
                pending_.push_back({*child, ends});
            }
        }
    }

    trace_end write_event(const held& h, trace_end cap) {
        if (is_point_kind(h.where->kind)) {
            write_point(out_, h.where->kind, h.runtime_name ? h.name : h.where->name, h.point_id, where_, h.start);
            return cap;  // a point bounds nothing
        }
        if (h.where->kind == event_kind::counter) {
            write_counter_sample(out_, h.where->name, h.counter, where_, h.start);
            return cap;  // nor does a counter's sample, drawn on the process's track of its name
        }
        const trace_duration dur = choose_trace_duration(h.start, h.end, origin_, cap);
        const site& where = *h.where;
        if (h.runtime_name) {
            const std::string_view opening = chrome_records_detail::event_opening(where.kind);
            const std::string_view category = category_name(where.kind);
            char* o = out_.reserve(opening.size() + category.size() + 16 + json_string_bound(h.name.size()) +
                                   where_.size());
            o = std::copy(opening.begin(), opening.end(), o);
            o = std::copy(category.begin(), category.end(), o);
            o = write_literal(o, "\", \"name\": ");
            o = write_json_string(o, h.name);
            o = std::copy(where_.begin(), where_.end(), o);
            out_.commit(o);
        } else {
            out_.raw(prefix_of(where));
        }
        char* o = out_.reserve(160);
        o = write_microseconds(o, h.start);
        if (!chrome_records_detail::drawn_as_instant(where.kind)) {
            o = write_literal(o, ", \"dur\": ");
            o = write_trace_duration(o, dur, h.end - h.start);
        }
        o = write_literal(o, ", \"args\": {");
        if (h.id != 0) {  // Kineto writes no "External id" of 0
            o = write_literal(o, "\"External id\": ");
            o = fmt::format_to(o, FMT_COMPILE("{}"), h.id);
            o = write_literal(o, ", ");
        }
        o = write_literal(o, "\"Record function id\": ");
        o = fmt::format_to(o, FMT_COMPILE("{}"), h.id);
        o = write_literal(o, "}}");
        out_.commit(o);
        return dur.end;
    }

    // Everything of a static site's event before its "ts" value, formatted once per site and thread.
    const std::string& prefix_of(const site& where) {
        if (last_site_ == &where) return *last_prefix_;
        auto [at, added] = prefixes_.try_emplace(&where);
        if (added) {
            fmt::memory_buffer text;
            const std::string_view opening = chrome_records_detail::event_opening(where.kind);
            const std::string_view category = category_name(where.kind);
            text.append(opening);
            text.append(category);
            text.append(std::string_view("\", \"name\": "));
            append_json_string(text, where.name);
            text.append(where_);
            at->second = fmt::to_string(text);
        }
        last_site_ = &where;
        last_prefix_ = &at->second;
        return at->second;
    }

    Writer& out_;
    tick_calibration calibration_;
    later<std::string> where_;  // ", "pid": P, "tid": T, "ts": "
    double origin_ = 0;
    std::int64_t level_ = 0;
    std::uint16_t previous_depth_ = 0;
    bool have_previous_ = false;
    std::int64_t held_end_ = 0;
    std::uint64_t values_left_out_ = 0;
    later<std::vector<held>> held_;            // records ending in held_end_, as they arrived
    later<std::vector<std::uint32_t>> roots_;  // held records whose parent has not arrived
    later<std::vector<std::vector<std::uint32_t>>> children_;
    later<std::vector<std::pair<std::uint32_t, trace_end>>> pending_;  // write_subtree's work
    later<std::unordered_map<const site*, std::string>> prefixes_;
    const site* last_site_ = nullptr;
    const std::string* last_prefix_ = nullptr;
};

namespace chrome_records_detail {

/// A row's origin as trace_timeline takes it: the start (µs) of its earliest non-instant event, or +inf.
template <class = void>
double origin_of(const record_store& records, const record_store::thread_records& t) {
    constexpr std::uint64_t none = std::numeric_limits<std::uint64_t>::max();
    if (t.first_start_ticks == none) return std::numeric_limits<double>::infinity();
    return trace_microseconds(records.calibration.to_ns_since_anchor(t.first_start_ticks));
}

}  // namespace chrome_records_detail

/// Writes the trace of `records` (chrome_trace_from_records must hold) to any sink with
/// `write(std::string_view)`; ids start at `first_id` as the event list built from them would give.
/// Reads the records only: an event list can still be built from them afterwards.
template <class Sink>
void write_chrome_trace(Sink& sink, const record_store& records, std::uint64_t first_id,
                        const chrome_trace_info& info) {
    json_writer out(sink);
    deferred_t<std::vector<thread_info>, Sink> threads;
    threads.reserve(records.threads().size());
    std::uint64_t recorded = 0;
    std::uint64_t dropped = 0;
    for (const record_store::thread_records& t : records.threads()) {
        threads.push_back({t.counts.os_tid, t.counts.name, t.counts.recorded, t.counts.dropped});
        recorded += t.counts.recorded;
        dropped += t.counts.dropped;
    }
    const device_report no_device;
    const chrome_trace_head head{.recorded = recorded,
                                 .dropped = dropped,
                                 .late = records.late,
                                 .device = &no_device,
                                 .memory_dropped = records.memory_dropped,
                                 .memory_peaks = {},
                                 .threads = threads,
                                 .no_events = records.events() == 0,
                                 .values_not_streamed = std::nullopt};
    write_trace_head(out, head, info);
    std::uint64_t id = first_id;
    for (const record_store::thread_records& t : records.threads()) {
        if (t.events == 0) continue;
        thread_trace_writer<deferred_t<json_writer, Sink>> thread(out, records.calibration, info.pid, t.counts.os_tid,
                                                chrome_records_detail::origin_of(records, t));
        records.for_each_record(t, [&](const record& r, const record_payload& p) { thread.add(r, p, id++); });
        thread.flush();
    }
    write_trace_end(out, records.calibration.anchor.system_ns);
}

/// Writes the trace of `records` to `path` as write_chrome_trace_file does.
template <int = 0>  // instantiated only where called: its writers cost every other file
void write_chrome_trace_file(const std::string& path, const record_store& records, std::uint64_t first_id,
                                    const chrome_trace_info& info) {
    output_file file(path);
    write_chrome_trace(file, records, first_id, info);
    file.commit();
}

}  // namespace stint::detail
