#pragma once
// The bodies of chrome_trace_records.hpp: a Chrome trace written straight from a session's records.

#include "stint/export/chrome_trace_records.hpp"

#include <algorithm>      // std::copy, std::max, std::min
#include <limits>         // std::numeric_limits
#include <optional>       // std::nullopt
#include <unordered_set>  // std::unordered_set

#include <fmt/compile.h>  // FMT_COMPILE
#include <fmt/format.h>   // fmt::format_to, fmt::format, fmt::memory_buffer, fmt::to_string

#include "stint/export/output_file.hpp"

namespace stint::detail {

bool chrome_trace_from_records(const record_store& records) {
    std::unordered_set<std::uint64_t> tids;
    for (const record_store::thread_records& t : records.threads()) {
        if (!t.timing_only || !tids.insert(t.counts.os_tid).second) return false;
    }
    return true;
}

thread_trace_writer::thread_trace_writer(json_writer& out, const tick_calibration& calibration, std::uint64_t pid,
                                         std::uint64_t tid, double origin)
    : out_(out), calibration_(calibration),
      where_(fmt::format(", \"pid\": {}, \"tid\": {}, \"ts\": ", pid, tid)), origin_(origin) {}

void thread_trace_writer::add(const record& r, const record_payload& payload, std::uint64_t id) {
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

void thread_trace_writer::own_held_names() {
    for (held& h : held_) {
        if (!h.runtime_name || h.owned) continue;
        h.owned = std::make_unique<std::string>(h.name);
        h.name = *h.owned;
    }
}

void thread_trace_writer::flush() {
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

void thread_trace_writer::write_subtree(std::uint32_t root, trace_end cap) {
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

trace_end thread_trace_writer::write_event(const held& h, trace_end cap) {
    if (is_point_kind(h.where->kind)) {
        write_point(out_, h.where->kind, h.runtime_name ? h.name : h.where->name, h.point_id, where_, h.start);
        return cap;  // a point bounds nothing
    }
    if (h.where->kind == event_kind::counter) {
        write_counter_sample(out_, h.where->name, h.counter, where_, h.start, not_finite_);
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

const std::string& thread_trace_writer::prefix_of(const site& where) {
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

namespace chrome_records_detail {

double origin_of(const record_store& records, const record_store::thread_records& t) {
    constexpr std::uint64_t none = std::numeric_limits<std::uint64_t>::max();
    if (t.first_start_ticks == none) return std::numeric_limits<double>::infinity();
    return trace_microseconds(records.calibration.to_ns_since_anchor(t.first_start_ticks));
}

}  // namespace chrome_records_detail

void write_chrome_trace_to(json_writer& out, const record_store& records, std::uint64_t first_id,
                           const chrome_trace_info& info) {
    std::vector<thread_info> threads;
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
    std::uint64_t not_finite = 0;
    for (const record_store::thread_records& t : records.threads()) {
        if (t.events == 0) continue;
        thread_trace_writer thread(out, records.calibration, info.pid, t.counts.os_tid,
                                   chrome_records_detail::origin_of(records, t));
        records.for_each_record(t, [&](const record& r, const record_payload& p) { thread.add(r, p, id++); });
        thread.flush();
        not_finite += thread.not_finite_samples();
    }
    write_not_finite_note(out, not_finite, info.pid, 0);
    write_trace_end(out, records.calibration.anchor.system_ns);
}

void write_chrome_trace_file(const std::string& path, const record_store& records, std::uint64_t first_id,
                             const chrome_trace_info& info) {
    output_file file(path);
    write_chrome_trace(file, records, first_id, info);
    file.commit();
}

}  // namespace stint::detail
