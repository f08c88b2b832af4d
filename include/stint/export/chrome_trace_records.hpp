#pragma once
// A Chrome trace written straight from a closed session's records (drain/record_store.hpp), with no
// event list: the same events, ids and times as write_chrome_trace gives for the list built from those
// records, in an order viewers nest the same way. Used when the records are timing-only (or carry only
// runtime names or counters' values) and nothing else was asked for, so that the biggest sessions stop and export in the
// memory their records already take (design §8).

#include <cstddef>        // std::size_t
#include <cstdint>        // std::int64_t, std::uint16_t, std::uint32_t, std::uint64_t
#include <memory>         // std::unique_ptr
#include <string>         // std::string
#include <string_view>    // std::string_view
#include <unordered_map>  // std::unordered_map
#include <utility>        // std::pair
#include <vector>         // std::vector

#include "stint/detail/separate_compilation.hpp"
#include "stint/drain/record_store.hpp"
#include "stint/export/chrome_trace.hpp"
#include "stint/export/json_writer.hpp"
#include "stint/export/trace_time.hpp"

namespace stint::detail {

/// Whether write_chrome_trace can take `records` as they are: every record timing-only or carrying
/// only a runtime name or a counter's value, and each OS thread in one buffer (several buffers of one thread, one per shared
/// object, are merged by the event list's linking).
STINT_DECL bool chrome_trace_from_records(const record_store& records);

namespace chrome_records_detail {

// Whether the trace draws an event of `kind` as an instant ("ph": "i", no "dur").
constexpr bool drawn_as_instant(event_kind kind) noexcept {
    return kind == event_kind::instant || is_memory_kind(kind);
}

// The fixed start of an event of `kind`, up to its name.
constexpr std::string_view event_opening(event_kind kind) {
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
class thread_trace_writer {
public:
    /// `origin`: the start (µs) of the thread's earliest non-instant event, a viewer's origin for the
    /// row (chrome_records_detail::origin_of).
    STINT_DECL thread_trace_writer(json_writer& out, const tick_calibration& calibration, std::uint64_t pid,
                                   std::uint64_t tid, double origin);

    /// Adds the thread's next record that makes an event (not outputs, not a device link), whose event
    /// gets `id`. A record that carries more than a runtime name is written with its name and times
    /// only (values_left_out counts it).
    STINT_DECL void add(const record& r, const record_payload& payload, std::uint64_t id);

    /// Records added and not written yet (held until a record of another end arrives).
    [[nodiscard]] std::size_t held_count() const noexcept { return held_.size(); }

    /// Records whose captured values (inputs, native frames, memory details) were left out.
    [[nodiscard]] std::uint64_t values_left_out() const noexcept { return values_left_out_; }
    /// Counter samples that were not finite (write_counter_sample).
    [[nodiscard]] std::uint64_t not_finite_samples() const noexcept { return not_finite_; }
    /// Counts a record of the thread that made no event and whose values were left out (outputs).
    void leave_out_values() noexcept { ++values_left_out_; }

    /// Copies the runtime names of the records still held (their buffer is about to be freed).
    STINT_DECL void own_held_names();

    /// Writes what is held: the thread's last records have arrived.
    STINT_DECL void flush();

private:
    static constexpr std::uint32_t no_parent = 0xffffffffU;
    std::uint64_t not_finite_ = 0;
    struct held {
        const site* where = nullptr;
        std::string_view name;                 // a runtime name
        bool runtime_name = false;
        std::unique_ptr<std::string> owned;    // ... kept across batches
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
    STINT_DECL void write_subtree(std::uint32_t root, trace_end cap);

    STINT_DECL trace_end write_event(const held& h, trace_end cap);

    // Everything of a static site's event before its "ts" value, formatted once per site and thread.
    STINT_DECL const std::string& prefix_of(const site& where);

    json_writer& out_;
    tick_calibration calibration_;
    std::string where_;  // ", "pid": P, "tid": T, "ts": "
    double origin_ = 0;
    std::int64_t level_ = 0;
    std::uint16_t previous_depth_ = 0;
    bool have_previous_ = false;
    std::int64_t held_end_ = 0;
    std::uint64_t values_left_out_ = 0;
    std::vector<held> held_;            // records ending in held_end_, as they arrived
    std::vector<std::uint32_t> roots_;  // held records whose parent has not arrived
    std::vector<std::vector<std::uint32_t>> children_;
    std::vector<std::pair<std::uint32_t, trace_end>> pending_;  // write_subtree's work
    std::unordered_map<const site*, std::string> prefixes_;
    const site* last_site_ = nullptr;
    const std::string* last_prefix_ = nullptr;
};

namespace chrome_records_detail {

/// A row's origin as trace_timeline takes it: the start (µs) of its earliest non-instant event, or +inf.
STINT_DECL double origin_of(const record_store& records, const record_store::thread_records& t);

}  // namespace chrome_records_detail

/// write_chrome_trace's body for `records`: the whole trace, through `out` (flushed at its end).
STINT_DECL void write_chrome_trace_to(json_writer& out, const record_store& records, std::uint64_t first_id,
                                      const chrome_trace_info& info);

/// Writes the trace of `records` (chrome_trace_from_records must hold) to any sink with
/// `write(std::string_view)`; ids start at `first_id` as the event list built from them would give.
/// Reads the records only: an event list can still be built from them afterwards.
template <class Sink>
void write_chrome_trace(Sink& sink, const record_store& records, std::uint64_t first_id,
                        const chrome_trace_info& info) {
    json_writer out(sink);
    write_chrome_trace_to(out, records, first_id, info);
}

/// Writes the trace of `records` to `path` as write_chrome_trace_file does.
STINT_DECL void write_chrome_trace_file(const std::string& path, const record_store& records, std::uint64_t first_id,
                                        const chrome_trace_info& info);

}  // namespace stint::detail

#if defined(STINT_HEADER_ONLY)
#include "stint/export/impl/chrome_trace_records.ipp"
#endif
