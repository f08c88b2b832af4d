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

#include <array>          // std::array
#include <cstddef>        // std::size_t
#include <cstdint>        // std::uint64_t, std::int64_t, std::uint32_t
#include <memory>         // std::unique_ptr
#include <optional>       // std::optional
#include <string>         // std::string
#include <string_view>    // std::string_view
#include <unordered_map>  // std::unordered_map
#include <vector>         // std::vector

#include "stint/analysis/event_list.hpp"
#include "stint/detail/separate_compilation.hpp"
#include "stint/export/counter_tracks.hpp"
#include "stint/export/detail/protobuf.hpp"
#include "stint/export/perfetto_trace_info.hpp"

namespace stint::detail {

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
class perfetto_writer {
    // The sink, seen through a pointer by the compiled writer.
    struct sink_ref {
        void* target;
        void (*write_bytes)(void* target, std::string_view bytes);
        void write(std::string_view bytes) const { write_bytes(target, bytes); }
    };

public:
    template <class Sink>
    perfetto_writer(Sink& sink, const event_list& events, const perfetto_trace_info& info)
        : perfetto_writer(sink_ref{&sink,
                                   [](void* target, std::string_view bytes) { static_cast<Sink*>(target)->write(bytes); }},
                          events, info) {}

    STINT_DECL void write();

private:
    STINT_DECL perfetto_writer(sink_ref sink, const event_list& events, const perfetto_trace_info& info);

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
        std::vector<std::uint64_t> names_sent;  // a bit per iid
        std::vector<open_slice> open;
    };

    // Names by iid (1-based), found first by where the text is (a site's static name is the same
    // pointer in every event), then by the text.
    class name_table {
    public:
        name_table() : cache_(cache_slots) {}
        STINT_DECL std::uint64_t iid(std::string_view name);
        std::string_view text(std::uint64_t iid) const { return texts_[iid - 1]; }

    private:
        static constexpr std::size_t cache_slots = 4096;
        struct slot {
            const char* data = nullptr;
            std::size_t size = 0;
            std::uint64_t iid = 0;
        };
        std::vector<slot> cache_;
        std::unordered_map<std::string_view, std::uint64_t> by_text_;
        std::vector<std::string_view> texts_;
    };

    STINT_DECL static std::uint64_t mix(std::uint64_t x) noexcept;

    STINT_DECL void index_categories();
    STINT_DECL std::uint64_t category_iid(std::string_view name);

    // ---- output

    STINT_DECL char* reserve(std::size_t size);
    STINT_DECL void commit(char* end);
    STINT_DECL void flush();

    STINT_DECL void write_packet(const proto_message& packet);

    // A TrackEvent packet on `l`'s sequence: `body` is the TrackEvent's bytes, `extra` whole fields
    // of the packet (interned data, sequence flags, defaults) when it needs any.
    STINT_DECL void write_event_packet(lane& l, std::uint64_t ts, std::string_view body, std::string_view extra);

    STINT_DECL std::uint64_t timestamp(lane& l, std::int64_t ns) noexcept;

    // The fields a packet on `l` needs before it may use these iids: on the sequence's first packet
    // "cleared" (a reader starts each sequence with no interned state) and the defaults that name its
    // track; the names, category and annotation names the sequence has not seen yet.
    STINT_DECL std::string_view state_fields(lane& l, std::uint64_t name, std::uint64_t category, std::uint32_t annotations);

    STINT_DECL static bool sent(const lane& l, std::uint64_t name) noexcept;

    STINT_DECL bool knows(const lane& l, std::uint64_t name, std::uint64_t category, std::uint32_t annotations) const noexcept;

    // ---- descriptors and stats

    STINT_DECL void write_descriptor(const proto_message& descriptor);

    STINT_DECL void write_descriptors();

    STINT_DECL static std::string device_track_name(const thread_info& track, bool sync);

    std::uint64_t counter_uuid() const noexcept { return uuid_base_ + 1 + lanes_.size(); }
    lane& process_lane() noexcept { return lanes_.back(); }

    // The "stint stats" instant on the process track (the Chrome trace's "stint" block as debug
    // annotations) and the dropped records on the counter track, both at the session's start.
    STINT_DECL void write_stats();

    // ---- events

    STINT_DECL lane& lane_of(const event& e);

    // The one-byte keys of the per-event packets' fields (field numbers below 16).
    static constexpr char key_byte(std::uint32_t field, protobuf::wire type) noexcept {
        return static_cast<char>(protobuf::key(field, type));
    }

    STINT_DECL void end_slice(lane& l);

    // The usual event, a scope or an op whose names its sequence knows: written in place, every
    // length below 128 (one byte) as each varint is at most 10 bytes.
    STINT_DECL void write_known(lane& l, const event& e, bool instant, std::uint64_t name, std::uint64_t category);

    STINT_DECL static char* put_annotation(char* o, std::size_t name, std::uint32_t field, std::uint64_t value) noexcept;

    // A counter's sample, or a memory event's totals, on the process's counter track of each name: a
    // TYPE_COUNTER packet on the process's sequence, its track named by uuid (no interned state used).
    STINT_DECL void write_counter_samples(const event& e);

    // The uuid of the counter track `name`, described the first time (after the dropped records' track).
    STINT_DECL std::uint64_t counter_track(std::string_view name, bool in_bytes);

    STINT_DECL void write_event(const event& e);

    // An event's body followed by stint::add_args' arguments as debug annotations named inline (they
    // are few per trace's events; their names are not interned).
    STINT_DECL std::string_view with_named_args(std::string_view body, const event_args& args);

    sink_ref sink_;
    const event_list& events_;
    const perfetto_trace_info& info_;
    std::unique_ptr<char[]> buffer_;
    std::unique_ptr<char[]> spill_;
    std::string named_body_;  // with_named_args' result
    std::size_t used_ = 0;
    std::int64_t origin_ = 0;
    std::uint64_t uuid_base_ = 0;
    std::vector<lane> lanes_;  // threads, then their sync rows, then the process
    name_table names_;
    std::vector<std::string_view> categories_;  // by iid - 1
    std::array<std::uint64_t, static_cast<std::size_t>(event_kind::counter) + 1> category_of_kind_{};
    std::uint64_t stats_category_ = 0;
    std::string scratch_;
    counter_samples counters_;
    std::unordered_map<std::string_view, std::uint64_t> counter_tracks_;  // by name, their uuids
};

/// Writes the trace to any sink with `write(std::string_view)`.
template <class Sink>
void write_perfetto_trace(Sink& sink, const event_list& events, const perfetto_trace_info& info) {
    perfetto_writer(sink, events, info).write();
}

// write_perfetto_trace_file(path, events, info): declared with perfetto_trace_info.

}  // namespace stint::detail

#if defined(STINT_HEADER_ONLY)
#include "stint/export/impl/perfetto_trace.ipp"
#endif
