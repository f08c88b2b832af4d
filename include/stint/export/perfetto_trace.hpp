#pragma once
// Perfetto's native trace: a protobuf `Trace`, a series of TracePackets, written from an event list
// and streamed through one buffer (design §4). ui.perfetto.dev and trace_processor open it far beyond
// the sizes JSON viewers manage, and it is about a fifth of the Chrome JSON's size.
//
// Layout: a process track and one thread track per thread (device streams get tracks of their own,
// and their syncs a second one, as in the Chrome trace), a counter track of the dropped records, a
// counter track per counter name and per device's memory total (export/counter_tracks.hpp), then
// one packet sequence per track: each event is a SLICE_BEGIN and a SLICE_END (instants one
// TYPE_INSTANT), its name and category interned on that sequence, its track given once by the
// sequence's defaults. A "stint stats" instant on the process track carries the counts of the Chrome
// trace's "stint" block.

#include <algorithm>
#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "stint/analysis/event_list.hpp"
#include "stint/detail/deferred.hpp"
#include "stint/detail/export_macros.hpp"
#include "stint/export/counter_tracks.hpp"
#include "stint/export/detail/protobuf.hpp"
#include "stint/export/device_trace.hpp"
#include "stint/export/output_file.hpp"

namespace stint::detail {

/// What a Perfetto trace carries besides the events.
struct perfetto_trace_info {
    std::uint64_t pid = 0;
    std::uint64_t truncated_names = 0;
    /// A flight recorder's dump (profiler/flight_recorder.hpp): records overwritten before the window,
    /// in total and per thread, with the time (ns on the trace's clock) from which each thread is complete.
    struct overwritten_thread {
        std::uint64_t os_tid = 0;
        std::uint64_t overwritten = 0;
        std::int64_t complete_from_ns = 0;
    };
    std::optional<std::uint64_t> overwritten{};
    std::vector<overwritten_thread> overwritten_threads{};
};

/// Field numbers and enum values of perfetto.protos (protos/perfetto/trace/), as the schema defines them.
namespace perfetto_schema {
inline constexpr std::uint32_t trace_packet = 1;  // Trace.packet
namespace packet {
inline constexpr std::uint32_t timestamp = 8, sequence_id = 10, track_event = 11, interned_data = 12,
                               sequence_flags = 13, defaults = 59, track_descriptor = 60,
                               first_on_sequence = 87;
}  // namespace packet
namespace track_event {
inline constexpr std::uint32_t category_iids = 3, debug_annotations = 4, type = 9, name_iid = 10, track_uuid = 11,
                               counter_value = 30, double_counter_value = 44, flow_ids = 47,
                               terminating_flow_ids = 48;
inline constexpr std::uint64_t slice_begin = 1, slice_end = 2, instant = 3, counter = 4;
}  // namespace track_event
namespace annotation {
inline constexpr std::uint32_t name_iid = 1, bool_value = 2, uint_value = 3, int_value = 4, double_value = 5,
                               string_value = 6, name = 10, dict_entries = 11, array_values = 12;
}  // namespace annotation
namespace descriptor {
inline constexpr std::uint32_t uuid = 1, name = 2, process = 3, thread = 4, parent_uuid = 5, counter = 8;
inline constexpr std::uint32_t pid = 1, tid = 2, thread_name = 5, process_name = 6;  // Process/ThreadDescriptor
inline constexpr std::uint32_t unit_name = 6;                                        // CounterDescriptor
}  // namespace descriptor
namespace interned {
inline constexpr std::uint32_t event_categories = 1, event_names = 2, debug_annotation_names = 3;
inline constexpr std::uint32_t iid = 1, name = 2;  // EventCategory, EventName, DebugAnnotationName
}  // namespace interned
namespace defaults {
inline constexpr std::uint32_t track_event_defaults = 11, track_uuid = 11;
}  // namespace defaults
// SequenceFlags: the reader drops earlier interned data; the packet needs the sequence's interned data.
inline constexpr std::uint64_t incremental_state_cleared = 1, needs_incremental_state = 2;
}  // namespace perfetto_schema

/// Debug annotation names, interned with these iids (index + 1) on each sequence that uses them.
inline constexpr std::array<std::string_view, 7> perfetto_annotation_names{
    "Record function id", "Total Reserved", "Total Allocated", "Bytes", "Addr", "Device Id", "Device Type"};

/// Writes the trace to any sink with `write(std::string_view)`.
template <class Sink>
class perfetto_writer {
    template <class T>
    using later = deferred_t<T, Sink>;  // checked when used (detail/deferred.hpp)

public:
    perfetto_writer(Sink& sink, const later<event_list>& events, const perfetto_trace_info& info)
        : sink_(sink), events_(events), info_(info), buffer_(std::make_unique<char[]>(capacity_)) {}

    void write() {
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

private:
    using proto_message = protobuf::proto_message;
    static constexpr std::size_t capacity_ = std::size_t{1} << 20;
    static constexpr std::size_t annotation_count = perfetto_annotation_names.size();

    struct open_slice {
        event_index index;
        std::int64_t end_ns;  // kept here: the event itself is no longer in cache when its slice ends
    };

    // One track and its packet sequence: what it has interned, its open slices, its last timestamp
    // (kept non-decreasing, so a reader's sort by time keeps each track's packets in file order).
    struct lane {
        std::uint64_t uuid = 0;
        std::uint32_t sequence = 0;
        std::array<char, 8> sequence_field{};  // trusted_packet_sequence_id's key and value
        std::size_t sequence_field_size = 0;
        bool started = false;
        bool described = false;
        std::uint64_t last_ts = 0;
        std::uint32_t categories_sent = 0;
        std::uint32_t annotation_names_sent = 0;
        later<std::vector<std::uint64_t>> names_sent;  // a bit per iid
        later<std::vector<open_slice>> open;
    };

    // Names by iid (1-based), found first by where the text is (a site's static name is the same
    // pointer in every event), then by the text.
    class name_table {
    public:
        name_table() : cache_(cache_slots) {}
        std::uint64_t iid(std::string_view name) {
            const auto address = reinterpret_cast<std::uintptr_t>(name.data());
            slot& s = cache_[((address * 0x9E3779B97F4A7C15ULL) >> 40) & (cache_slots - 1)];
            if (s.data == name.data() && s.size == name.size() && s.iid != 0) return s.iid;
            const auto [at, fresh] = by_text_.try_emplace(name, texts_.size() + 1);
            if (fresh) texts_.push_back(name);
            s = {name.data(), name.size(), at->second};
            return at->second;
        }
        std::string_view text(std::uint64_t iid) const { return texts_[iid - 1]; }

    private:
        static constexpr std::size_t cache_slots = 4096;
        struct slot {
            const char* data = nullptr;
            std::size_t size = 0;
            std::uint64_t iid = 0;
        };
        later<std::vector<slot>> cache_;
        later<std::unordered_map<std::string_view, std::uint64_t>> by_text_;
        later<std::vector<std::string_view>> texts_;
    };

    static std::uint64_t mix(std::uint64_t x) noexcept {
        // splitmix64, with the top bits cleared: uuids base + 1 + track stay far from wrapping and 0.
        x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
        x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
        return ((x ^ (x >> 31)) >> 8) | 1;
    }

    void index_categories() {
        for (std::size_t k = 0; k < category_of_kind_.size(); ++k) {
            category_of_kind_[k] = category_iid(category_name(static_cast<event_kind>(k)));
        }
        stats_category_ = category_iid("stint");
    }
    std::uint64_t category_iid(std::string_view name) {
        const auto at = std::find(categories_.begin(), categories_.end(), name);
        if (at != categories_.end()) return static_cast<std::uint64_t>(at - categories_.begin()) + 1;
        categories_.push_back(name);
        return categories_.size();
    }

    // ---- output

    char* reserve(std::size_t size) {
        if (used_ + size > capacity_) flush();
        if (size > capacity_) {
            spill_ = std::make_unique<char[]>(size);  // one packet larger than the buffer (a huge name)
            return spill_.get();
        }
        return buffer_.get() + used_;
    }
    void commit(char* end) {
        if (spill_ != nullptr) {
            sink_.write(std::string_view(spill_.get(), static_cast<std::size_t>(end - spill_.get())));
            spill_.reset();
            return;
        }
        used_ = static_cast<std::size_t>(end - buffer_.get());
    }
    void flush() {
        if (used_ != 0) sink_.write(std::string_view(buffer_.get(), used_));
        used_ = 0;
    }

    void write_packet(const proto_message& packet) {
        using namespace perfetto_schema;
        const std::string_view bytes = packet.view();
        char* o = reserve(protobuf::length_size(trace_packet, bytes.size()));
        o = protobuf::put_length(o, trace_packet, bytes.size());
        std::memcpy(o, bytes.data(), bytes.size());
        commit(o + bytes.size());
    }

    // A TrackEvent packet on `l`'s sequence: `body` is the TrackEvent's bytes, `extra` whole fields
    // of the packet (interned data, sequence flags, defaults) when it needs any.
    void write_event_packet(lane& l, std::uint64_t ts, std::string_view body, std::string_view extra) {
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

    std::uint64_t timestamp(lane& l, std::int64_t ns) noexcept {
        l.last_ts = std::max(l.last_ts, ns < origin_ ? 0 : static_cast<std::uint64_t>(ns - origin_));
        return l.last_ts;
    }

    // The fields a packet on `l` needs before it may use these iids: on the sequence's first packet
    // "cleared" (a reader starts each sequence with no interned state) and the defaults that name its
    // track; the names, category and annotation names the sequence has not seen yet.
    std::string_view state_fields(lane& l, std::uint64_t name, std::uint64_t category, std::uint32_t annotations) {
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

    static bool sent(const lane& l, std::uint64_t name) noexcept {
        return name / 64 < l.names_sent.size() && (l.names_sent[name / 64] >> (name % 64) & 1) != 0;
    }

    bool knows(const lane& l, std::uint64_t name, std::uint64_t category, std::uint32_t annotations) const noexcept {
        return l.started && sent(l, name) &&
               (l.categories_sent & (1U << category)) != 0 && (l.annotation_names_sent & annotations) == annotations;
    }

    // ---- descriptors and stats

    void write_descriptor(const proto_message& descriptor) {
        using namespace perfetto_schema;
        proto_message packet;
        packet.uint(packet::timestamp, static_cast<std::uint64_t>(-origin_));
        packet.message(packet::track_descriptor, descriptor);
        write_packet(packet);
    }

    void write_descriptors() {
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

    static std::string device_track_name(const thread_info& track, bool sync) {
        std::string name = "GPU " + std::to_string(track.device.index);
        name += track.os_tid == cupti_no_stream ? std::string(" (no stream)")
                                                : " stream " + std::to_string(track.os_tid);
        if (sync) name += " (sync)";
        return name;
    }

    std::uint64_t counter_uuid() const noexcept { return uuid_base_ + 1 + lanes_.size(); }
    lane& process_lane() noexcept { return lanes_.back(); }

    // The "stint stats" instant on the process track (the Chrome trace's "stint" block as debug
    // annotations) and the dropped records on the counter track, both at the session's start.
    void write_stats() {
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

    // ---- events

    lane& lane_of(const event& e) {
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

    // The one-byte keys of the per-event packets' fields (field numbers below 16).
    static constexpr char key_byte(std::uint32_t field, protobuf::wire type) noexcept {
        return static_cast<char>(protobuf::key(field, type));
    }

    void end_slice(lane& l) {
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

    // The usual event, a scope or an op whose names its sequence knows: written in place, every
    // length below 128 (one byte) as each varint is at most 10 bytes.
    void write_known(lane& l, const event& e, bool instant, std::uint64_t name, std::uint64_t category) {
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

    static char* put_annotation(char* o, std::size_t name, std::uint32_t field, std::uint64_t value) noexcept {
        using namespace perfetto_schema;
        const std::size_t size =
            protobuf::uint_size(annotation::name_iid, name + 1) + protobuf::uint_size(field, value);
        o = protobuf::put_length(o, track_event::debug_annotations, size);
        o = protobuf::put_uint(o, annotation::name_iid, name + 1);
        return protobuf::put_uint(o, field, value);
    }

    // A counter's sample, or a memory event's totals, on the process's counter track of each name: a
    // TYPE_COUNTER packet on the process's sequence, its track named by uuid (no interned state used).
    void write_counter_samples(const event& e) {
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

    // The uuid of the counter track `name`, described the first time (after the dropped records' track).
    std::uint64_t counter_track(std::string_view name, bool in_bytes) {
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

    void write_event(const event& e) {
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

    // An event's body followed by stint::add_args' arguments as debug annotations named inline (they
    // are few per trace's events; their names are not interned).
    std::string_view with_named_args(std::string_view body, const event_args& args) {
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

    Sink& sink_;
    const later<event_list>& events_;
    const perfetto_trace_info& info_;
    later<std::unique_ptr<char[]>> buffer_;
    later<std::unique_ptr<char[]>> spill_;
    later<std::string> named_body_;  // with_named_args' result
    std::size_t used_ = 0;
    std::int64_t origin_ = 0;
    std::uint64_t uuid_base_ = 0;
    later<std::vector<lane>> lanes_;  // threads, then their sync rows, then the process
    name_table names_;
    later<std::vector<std::string_view>> categories_;  // by iid - 1
    std::array<std::uint64_t, static_cast<std::size_t>(event_kind::counter) + 1> category_of_kind_{};
    std::uint64_t stats_category_ = 0;
    later<std::string> scratch_;
    later<counter_samples> counters_;
    later<std::unordered_map<std::string_view, std::uint64_t>> counter_tracks_;  // by name, their uuids
};

/// Writes the trace to any sink with `write(std::string_view)`.
template <class Sink>
void write_perfetto_trace(Sink& sink, const event_list& events, const perfetto_trace_info& info) {
    perfetto_writer<Sink>(sink, events, info).write();
}

/// Writes the trace to `path` (gzip when it ends in ".gz") through a temporary file renamed into
/// place; throws std::system_error naming the path and the OS reason.
template <int = 0>  // instantiated only where called: its writers cost every other file
void write_perfetto_trace_file(const std::string& path, const event_list& events,
                                      const perfetto_trace_info& info) {
    output_file file(path);
    write_perfetto_trace(file, events, info);
    file.commit();
}

}  // namespace stint::detail
