#pragma once
// The Perfetto writer's bodies: track descriptors, the stats packet, and each event's packets.
#include "stint/export/perfetto_trace.hpp"

#include <algorithm>  // std::min, std::max, std::find
#include <bit>        // std::bit_cast
#include <cstring>    // std::memcpy

#include "stint/detail/export_macros.hpp"
#include "stint/export/device_trace.hpp"
#include "stint/export/output_file.hpp"

namespace stint::detail {

perfetto_writer::perfetto_writer(sink_ref sink, const event_list& events, const perfetto_trace_info& info)
    : sink_(sink), events_(events), info_(info), buffer_(std::make_unique<char[]>(capacity_)) {}

std::uint64_t perfetto_writer::name_table::iid(std::string_view name) {
    const auto address = reinterpret_cast<std::uintptr_t>(name.data());
    slot& s = cache_[((address * 0x9E3779B97F4A7C15ULL) >> 40) & (cache_slots - 1)];
    if (s.data == name.data() && s.size == name.size() && s.iid != 0) return s.iid;
    const auto [at, fresh] = by_text_.try_emplace(name, texts_.size() + 1);
    if (fresh) texts_.push_back(name);
    s = {name.data(), name.size(), at->second};
    return at->second;
}

void perfetto_writer::write() {
    // Timestamps are the events' own (ns since the session's start, the Chrome trace's "ts" in
    // ns), moved up only when a device event began before the session (a trace has none < 0).
    // The list is ordered by start (event_list_builder::build; a later window appends later
    // events), so its first event starts first: no pass over the whole list, which is cold.
    if (!events_.empty()) origin_ = std::min<std::int64_t>(0, events_[0].start_ns);
    index_categories();
    const std::size_t tracks = events_.threads().size();
    const std::uint64_t pid = info_.pid;
    uuid_base_ = mix(pid ^ static_cast<std::uint64_t>(events_.base_time_ns()));
    lanes_.resize(2 * tracks + 1);
    for (std::size_t t = 0; t < lanes_.size(); ++t) {
        lanes_[t].uuid = uuid_base_ + 1 + t;
        lanes_[t].sequence = static_cast<std::uint32_t>(t + 1);
        char* field = lanes_[t].sequence_field.data();
        char* end = protobuf::put_uint(field, perfetto_schema::packet::sequence_id, t + 1);
        lanes_[t].sequence_field_size = static_cast<std::size_t>(end - field);
    }
    write_descriptors();
    write_stats();
    for (const event& e : events_) write_event(e);
    for (lane& l : lanes_) {
        while (!l.open.empty()) end_slice(l);
    }
    flush();
}

std::uint64_t perfetto_writer::mix(std::uint64_t x) noexcept {
    // splitmix64, with the top bits cleared: uuids base + 1 + track stay far from wrapping and 0.
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
    return ((x ^ (x >> 31)) >> 8) | 1;
}

void perfetto_writer::index_categories() {
    for (std::size_t k = 0; k < category_of_kind_.size(); ++k) {
        category_of_kind_[k] = category_iid(category_name(static_cast<event_kind>(k)));
    }
    stats_category_ = category_iid("stint");
}

std::uint64_t perfetto_writer::category_iid(std::string_view name) {
    const auto at = std::find(categories_.begin(), categories_.end(), name);
    if (at != categories_.end()) return static_cast<std::uint64_t>(at - categories_.begin()) + 1;
    categories_.push_back(name);
    return categories_.size();
}

char* perfetto_writer::reserve(std::size_t size) {
    if (used_ + size > capacity_) flush();
    if (size > capacity_) {
        spill_ = std::make_unique<char[]>(size);  // one packet larger than the buffer (a huge name)
        return spill_.get();
    }
    return buffer_.get() + used_;
}

void perfetto_writer::commit(char* end) {
    if (spill_ != nullptr) {
        sink_.write(std::string_view(spill_.get(), static_cast<std::size_t>(end - spill_.get())));
        spill_.reset();
        return;
    }
    used_ = static_cast<std::size_t>(end - buffer_.get());
}

void perfetto_writer::flush() {
    if (used_ != 0) sink_.write(std::string_view(buffer_.get(), used_));
    used_ = 0;
}

void perfetto_writer::write_packet(const proto_message& packet) {
    using namespace perfetto_schema;
    const std::string_view bytes = packet.view();
    char* o = reserve(protobuf::length_size(trace_packet, bytes.size()));
    o = protobuf::put_length(o, trace_packet, bytes.size());
    std::memcpy(o, bytes.data(), bytes.size());
    commit(o + bytes.size());
}

void perfetto_writer::write_event_packet(lane& l, std::uint64_t ts, std::string_view body, std::string_view extra) {
    using namespace perfetto_schema;
    const std::size_t size = protobuf::uint_size(packet::timestamp, ts) +
                             protobuf::uint_size(packet::sequence_id, l.sequence) + extra.size() +
                             protobuf::length_size(packet::track_event, body.size());
    char* o = reserve(protobuf::length_size(trace_packet, size));
    o = protobuf::put_length(o, trace_packet, size);
    o = protobuf::put_uint(o, packet::timestamp, ts);
    o = protobuf::put_uint(o, packet::sequence_id, l.sequence);
    if (!extra.empty()) std::memcpy(o, extra.data(), extra.size());  // an empty view's data() may be null
    o = protobuf::put_length(o + extra.size(), packet::track_event, body.size());
    std::memcpy(o, body.data(), body.size());
    commit(o + body.size());
}

std::uint64_t perfetto_writer::timestamp(lane& l, std::int64_t ns) noexcept {
    l.last_ts = std::max(l.last_ts, ns < origin_ ? 0 : static_cast<std::uint64_t>(ns - origin_));
    return l.last_ts;
}

std::string_view perfetto_writer::state_fields(lane& l, std::uint64_t name, std::uint64_t category, std::uint32_t annotations) {
    using namespace perfetto_schema;
    scratch_.clear();
    proto_message interned_data;
    if (name != 0 && !sent(l, name)) {
        if (name / 64 >= l.names_sent.size()) l.names_sent.resize(std::max<std::size_t>(2 * (name / 64) + 1, 4));
        l.names_sent[name / 64] |= std::uint64_t{1} << (name % 64);
        proto_message entry;
        entry.uint(interned::iid, name).string(interned::name, names_.text(name));
        interned_data.message(interned::event_names, entry);
    }
    const std::uint32_t category_bit = 1U << category;
    if (category != 0 && (l.categories_sent & category_bit) == 0) {
        l.categories_sent |= category_bit;
        proto_message entry;
        entry.uint(interned::iid, category).string(interned::name, categories_[category - 1]);
        interned_data.message(interned::event_categories, entry);
    }
    for (std::size_t a = 0; a < annotation_count; ++a) {
        const std::uint32_t bit = 1U << a;
        if ((annotations & bit) == 0 || (l.annotation_names_sent & bit) != 0) continue;
        l.annotation_names_sent |= bit;
        proto_message entry;
        entry.uint(interned::iid, a + 1).string(interned::name, perfetto_annotation_names[a]);
        interned_data.message(interned::debug_annotation_names, entry);
    }
    proto_message fields;
    if (!l.started) {
        l.started = true;
        proto_message event_defaults;
        event_defaults.uint(defaults::track_uuid, l.uuid);
        proto_message packet_defaults;
        packet_defaults.message(defaults::track_event_defaults, event_defaults);
        fields.uint(packet::sequence_flags, incremental_state_cleared | needs_incremental_state)
            .message(packet::defaults, packet_defaults)
            .uint(packet::first_on_sequence, 1);
    } else {
        fields.uint(packet::sequence_flags, needs_incremental_state);
    }
    if (!interned_data.empty()) fields.message(packet::interned_data, interned_data);
    scratch_.assign(fields.view());
    return scratch_;
}

bool perfetto_writer::sent(const lane& l, std::uint64_t name) noexcept {
    return name / 64 < l.names_sent.size() && (l.names_sent[name / 64] >> (name % 64) & 1) != 0;
}

bool perfetto_writer::knows(const lane& l, std::uint64_t name, std::uint64_t category, std::uint32_t annotations) const noexcept {
    return l.started && sent(l, name) &&
           (l.categories_sent & (1U << category)) != 0 && (l.annotation_names_sent & annotations) == annotations;
}

void perfetto_writer::write_descriptor(const proto_message& descriptor) {
    using namespace perfetto_schema;
    proto_message packet;
    packet.uint(packet::timestamp, static_cast<std::uint64_t>(-origin_));
    packet.message(packet::track_descriptor, descriptor);
    write_packet(packet);
}

void perfetto_writer::write_descriptors() {
    using namespace perfetto_schema;
    const auto pid = static_cast<std::uint64_t>(static_cast<std::int64_t>(static_cast<std::int32_t>(info_.pid)));
    proto_message process;
    process.uint(descriptor::pid, pid).string(descriptor::process_name, "stint");
    proto_message track;
    track.uint(descriptor::uuid, uuid_base_).message(descriptor::process, process);
    write_descriptor(track);
    const auto threads = events_.threads();
    for (std::size_t t = 0; t < threads.size(); ++t) {
        const thread_info& info = threads[t];
        track.clear();
        track.uint(descriptor::uuid, lanes_[t].uuid);
        if (info.is_device_track()) {
            // A stream is no thread of this process: a named track inside its group.
            track.uint(descriptor::parent_uuid, uuid_base_)
                .string(descriptor::name, device_track_name(info, false));
        } else {
            proto_message thread;
            thread.uint(descriptor::pid, pid)
                .int64(descriptor::tid, static_cast<std::int64_t>(info.os_tid))
                .string(descriptor::thread_name, info.name.empty() ? "thread " + std::to_string(info.os_tid)
                                                                   : info.name);
            track.message(descriptor::thread, thread);
        }
        write_descriptor(track);
    }
    proto_message unit;
    unit.string(descriptor::unit_name, "records");
    track.clear();
    track.uint(descriptor::uuid, counter_uuid())
        .uint(descriptor::parent_uuid, uuid_base_)
        .string(descriptor::name, "stint dropped records")
        .message(descriptor::counter, unit);
    write_descriptor(track);
}

std::string perfetto_writer::device_track_name(const thread_info& track, bool sync) {
    std::string name = "GPU " + std::to_string(track.device.index);
    name += track.os_tid == cupti_no_stream ? std::string(" (no stream)")
                                            : " stream " + std::to_string(track.os_tid);
    if (sync) name += " (sync)";
    return name;
}

void perfetto_writer::write_stats() {
    using namespace perfetto_schema;
    lane& l = process_lane();
    l.uuid = uuid_base_;  // the process track itself
    const auto number = [](std::string_view name, std::uint64_t value) {
        proto_message a;
        a.string(annotation::name, name).uint(annotation::uint_value, value);
        return a;
    };
    proto_message body;
    body.uint(track_event::type, track_event::instant)
        .uint(track_event::name_iid, names_.iid("stint stats"))
        .uint(track_event::category_iids, stats_category_);
    proto_message version;
    version.string(annotation::name, "version").string(annotation::string_value, STINT_VERSION_STRING);
    body.message(track_event::debug_annotations, version);
    body.message(track_event::debug_annotations, number("recorded", events_.recorded()));
    body.message(track_event::debug_annotations, number("dropped", events_.dropped()));
    body.message(track_event::debug_annotations, number("late", events_.late()));
    body.message(track_event::debug_annotations, number("truncated_names", info_.truncated_names));
    body.message(track_event::debug_annotations, number("memory_dropped", events_.memory_dropped()));
    if (info_.overwritten) body.message(track_event::debug_annotations, number("overwritten", *info_.overwritten));
    body.message(track_event::debug_annotations, number("device_lost", events_.device().loss.lost()));
    const unmatched_points& unmatched = events_.unmatched();
    body.message(track_event::debug_annotations, number("unmatched_flow_begins", unmatched.flow_begins));
    body.message(track_event::debug_annotations, number("unmatched_flow_ends", unmatched.flow_ends));
    body.message(track_event::debug_annotations, number("async_open", unmatched.async_open));
    body.message(track_event::debug_annotations, number("unmatched_async_ends", unmatched.async_ends));
    proto_message base;
    base.string(annotation::name, "base_time_ns").int64(annotation::int_value, events_.base_time_ns() + origin_);
    body.message(track_event::debug_annotations, base);
    proto_message threads;
    threads.string(annotation::name, "threads");
    for (const thread_info& t : events_.threads()) {
        if (t.is_device_track()) continue;  // a device stream records nothing itself
        proto_message name;
        name.string(annotation::name, "name").string(annotation::string_value, t.name);
        proto_message entry;
        entry.message(annotation::dict_entries, number("tid", t.os_tid))
            .message(annotation::dict_entries, name)
            .message(annotation::dict_entries, number("recorded", t.recorded))
            .message(annotation::dict_entries, number("dropped", t.dropped));
        for (const perfetto_trace_info::overwritten_thread& o : info_.overwritten_threads) {
            if (o.os_tid != t.os_tid) continue;
            proto_message from;
            from.string(annotation::name, "complete_from_ns").int64(annotation::int_value, o.complete_from_ns);
            entry.message(annotation::dict_entries, number("overwritten", o.overwritten))
                .message(annotation::dict_entries, from);
        }
        threads.message(annotation::array_values, entry);
    }
    body.message(track_event::debug_annotations, threads);
    const std::uint64_t ts = timestamp(l, 0);
    const std::string_view fields = state_fields(l, names_.iid("stint stats"), stats_category_, 0);
    write_event_packet(l, ts, body.view(), fields);

    proto_message counter;
    counter.uint(track_event::type, track_event::counter)
        .uint(track_event::track_uuid, counter_uuid())
        .int64(track_event::counter_value, static_cast<std::int64_t>(events_.dropped()));
    write_event_packet(l, ts, counter.view(), {});
}

perfetto_writer::lane& perfetto_writer::lane_of(const event& e) {
    if (!(e.on_device() && on_sync_row(events_, e))) return lanes_[e.thread];
    lane& sync = lanes_[events_.threads().size() + e.thread];
    if (!sync.described) {
        sync.described = true;
        proto_message track;
        track.uint(perfetto_schema::descriptor::uuid, sync.uuid)
            .uint(perfetto_schema::descriptor::parent_uuid, uuid_base_)
            .string(perfetto_schema::descriptor::name, device_track_name(events_.threads()[e.thread], true));
        write_descriptor(track);
    }
    return sync;
}

void perfetto_writer::end_slice(lane& l) {
    using namespace perfetto_schema;
    using protobuf::wire;
    const std::uint64_t ts = timestamp(l, l.open.back().end_ns);
    l.open.pop_back();
    // An end carries no name or category: a reader matches it to the open slice on its track.
    // Written in place: a packet below 128 bytes has a one-byte length.
    const std::size_t size = 1 + protobuf::varint_size(ts) + l.sequence_field_size + 4;
    char* o = reserve(2 + size + sizeof(lane::sequence_field));  // the field is copied whole
    *o++ = key_byte(trace_packet, wire::length);
    *o++ = static_cast<char>(size);
    *o++ = key_byte(packet::timestamp, wire::varint);
    o = protobuf::put_varint(o, ts);
    std::memcpy(o, l.sequence_field.data(), sizeof l.sequence_field);
    o += l.sequence_field_size;
    *o++ = key_byte(packet::track_event, wire::length);
    *o++ = 2;
    *o++ = key_byte(track_event::type, wire::varint);
    *o++ = static_cast<char>(track_event::slice_end);
    commit(o);
}

void perfetto_writer::write_known(lane& l, const event& e, bool instant, std::uint64_t name, std::uint64_t category) {
    using namespace perfetto_schema;
    using protobuf::wire;
    const std::uint64_t ts = timestamp(l, e.start_ns);
    const std::size_t annotation_size = 3 + protobuf::varint_size(e.id);
    const std::size_t body =
        4 + protobuf::varint_size(name) + protobuf::varint_size(category) + 2 + annotation_size;
    const std::size_t size = 1 + protobuf::varint_size(ts) + l.sequence_field_size + 2 + 2 + body;
    char* o = reserve(2 + size + sizeof(lane::sequence_field));  // the field is copied whole
    *o++ = key_byte(trace_packet, wire::length);
    *o++ = static_cast<char>(size);
    *o++ = key_byte(packet::timestamp, wire::varint);
    o = protobuf::put_varint(o, ts);
    std::memcpy(o, l.sequence_field.data(), sizeof l.sequence_field);
    o += l.sequence_field_size;
    *o++ = key_byte(packet::sequence_flags, wire::varint);
    *o++ = static_cast<char>(needs_incremental_state);
    *o++ = key_byte(packet::track_event, wire::length);
    *o++ = static_cast<char>(body);
    *o++ = key_byte(track_event::type, wire::varint);
    *o++ = static_cast<char>(instant ? track_event::instant : track_event::slice_begin);
    *o++ = key_byte(track_event::name_iid, wire::varint);
    o = protobuf::put_varint(o, name);
    *o++ = key_byte(track_event::category_iids, wire::varint);
    o = protobuf::put_varint(o, category);
    *o++ = key_byte(track_event::debug_annotations, wire::length);
    *o++ = static_cast<char>(annotation_size);
    *o++ = key_byte(annotation::name_iid, wire::varint);
    *o++ = 1;  // "Record function id"
    *o++ = key_byte(annotation::uint_value, wire::varint);
    o = protobuf::put_varint(o, e.id);
    commit(o);
}

char* perfetto_writer::put_annotation(char* o, std::size_t name, std::uint32_t field, std::uint64_t value) noexcept {
    using namespace perfetto_schema;
    const std::size_t size =
        protobuf::uint_size(annotation::name_iid, name + 1) + protobuf::uint_size(field, value);
    o = protobuf::put_length(o, track_event::debug_annotations, size);
    o = protobuf::put_uint(o, annotation::name_iid, name + 1);
    return protobuf::put_uint(o, field, value);
}

void perfetto_writer::write_counter_samples(const event& e) {
    using namespace perfetto_schema;
    counters_.of(events_, e, [&](std::string_view name, const counter_value& value, bool in_bytes) {
        const std::uint64_t track = counter_track(name, in_bytes);
        lane& l = process_lane();
        char body[40];
        char* o = protobuf::put_uint(body, track_event::type, track_event::counter);
        o = protobuf::put_uint(o, track_event::track_uuid, track);
        if (value.is_real) {
            o = protobuf::put_fixed64(o, track_event::double_counter_value, std::bit_cast<std::uint64_t>(value.real));
        } else {
            o = protobuf::put_uint(o, track_event::counter_value, static_cast<std::uint64_t>(value.integer));
        }
        const std::string_view packet(body, static_cast<std::size_t>(o - body));
        write_event_packet(l, timestamp(l, e.start_ns), packet, {});
    });
}

std::uint64_t perfetto_writer::counter_track(std::string_view name, bool in_bytes) {
    using namespace perfetto_schema;
    const auto [at, added] = counter_tracks_.try_emplace(name, 0);
    if (!added) return at->second;
    at->second = counter_uuid() + counter_tracks_.size();
    proto_message unit;
    if (in_bytes) unit.string(descriptor::unit_name, "bytes");
    proto_message track;
    track.uint(descriptor::uuid, at->second)
        .uint(descriptor::parent_uuid, uuid_base_)
        .string(descriptor::name, name)
        .message(descriptor::counter, unit);
    write_descriptor(track);
    return at->second;
}

void perfetto_writer::write_event(const event& e) {
    using namespace perfetto_schema;
    if (e.kind == event_kind::counter) {
        write_counter_samples(e);  // drawn on its counter track, not on the thread's
        return;
    }
    lane& l = lane_of(e);
    // Flow and async span points are instants too: a flow's begin carries its id in flow_ids and its
    // end in terminating_flow_ids, and Perfetto draws the arrow between them.
    const bool instant = is_zero_length_kind(e.kind);
    // Slices of this track that are not e's ancestors end first: the list's tree is the nesting,
    // and times that disagree with it are moved up to keep each track's times in order. An instant
    // keeps its time instead: it ends only the slices that ended by then, and lands inside one
    // that began in the same nanosecond (stint's chunk taken while the instant was appended).
    while (!l.open.empty() && l.open.back().index != e.parent &&
           (!instant || l.open.back().end_ns <= e.start_ns)) {
        end_slice(l);
    }
    const std::uint64_t name = names_.iid(e.name);
    const std::uint64_t category = category_of_kind_[static_cast<std::size_t>(e.kind)];
    const event_args* args = e.args != no_index ? events_.args(e) : nullptr;
    const bool named_args = args != nullptr && (!args->named_args.empty() || args->named_args_cut);
    if (e.memory_info == no_index && e.device_info == no_index && !is_point_kind(e.kind) && !named_args &&
        knows(l, name, category, 1)) {
        write_known(l, e, instant, name, category);
        if (!instant) l.open.push_back({events_.index_of(e), e.end_ns});
        return;
    }
    char body[256];
    char* o = protobuf::put_uint(body, track_event::type,
                                 instant ? track_event::instant : track_event::slice_begin);
    o = protobuf::put_uint(o, track_event::name_iid, name);
    o = protobuf::put_uint(o, track_event::category_iids, category);
    std::uint32_t annotations = 0;
    const auto as_uint = [](std::int64_t v) { return static_cast<std::uint64_t>(v); };
    if (const memory_record* memory = events_.memory_of(e)) {
        // Kineto's [memory] args (chrome_trace's write_memory_args), an OOM without "Addr".
        annotations = e.kind == event_kind::memory ? 0x7E : 0x6E;
        o = put_annotation(o, 1, annotation::int_value, as_uint(memory->total_reserved));
        o = put_annotation(o, 2, annotation::int_value, as_uint(memory->total_allocated));
        o = put_annotation(o, 3, annotation::int_value, as_uint(memory->bytes));
        if (e.kind == event_kind::memory) o = put_annotation(o, 4, annotation::uint_value, memory->addr);
        o = put_annotation(o, 5, annotation::int_value, as_uint(memory->device.index));
        o = put_annotation(o, 6, annotation::int_value, as_uint(static_cast<int>(memory->device.type)));
    } else if (e.device_info == no_index) {
        annotations = 1;
        o = put_annotation(o, 0, annotation::uint_value, e.id);
    }
    if (e.kind == event_kind::flow_begin) o = protobuf::put_fixed64(o, track_event::flow_ids, events_.point_id(e));
    if (e.kind == event_kind::flow_end) {
        o = protobuf::put_fixed64(o, track_event::terminating_flow_ids, events_.point_id(e));
    }
    const std::uint64_t ts = timestamp(l, e.start_ns);
    static constexpr char needs_state[] = {
        static_cast<char>(protobuf::key(packet::sequence_flags, protobuf::wire::varint)),
        static_cast<char>(needs_incremental_state)};
    const std::string_view fields = knows(l, name, category, annotations)
                                        ? std::string_view(needs_state, sizeof needs_state)
                                        : state_fields(l, name, category, annotations);
    const std::string_view fixed(body, static_cast<std::size_t>(o - body));
    if (named_args) {
        write_event_packet(l, ts, with_named_args(fixed, *args), fields);
    } else {
        write_event_packet(l, ts, fixed, fields);
    }
    if (!instant) l.open.push_back({events_.index_of(e), e.end_ns});
    if (e.memory_info != no_index) write_counter_samples(e);  // the device's totals, under the ops
}

std::string_view perfetto_writer::with_named_args(std::string_view body, const event_args& args) {
    using namespace perfetto_schema;
    proto_message annotations;
    proto_message one;
    for (const named_arg& a : args.named_args) {
        one.clear();
        one.string(annotation::name, a.name);
        switch (a.type) {
            case arg_type::integer: one.int64(annotation::int_value, a.integer); break;
            case arg_type::unsigned_integer: one.uint(annotation::uint_value, static_cast<std::uint64_t>(a.integer)); break;
            case arg_type::real: one.fixed64(annotation::double_value, std::bit_cast<std::uint64_t>(a.real)); break;
            case arg_type::boolean: one.uint(annotation::bool_value, a.integer != 0 ? 1 : 0); break;
            case arg_type::string: one.string(annotation::string_value, a.text); break;
        }
        annotations.message(track_event::debug_annotations, one);
    }
    if (args.named_args_cut) {
        one.clear();
        one.string(annotation::name, "Args truncated").uint(annotation::bool_value, 1);
        annotations.message(track_event::debug_annotations, one);
    }
    named_body_.assign(body);
    named_body_.append(annotations.view());
    return named_body_;
}

void write_perfetto_trace_file(const std::string& path, const event_list& events,
                               const perfetto_trace_info& info) {
    output_file file(path);
    write_perfetto_trace(file, events, info);
    file.commit();
}

}  // namespace stint::detail
