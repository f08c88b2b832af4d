#pragma once
// What the traces draw as counter tracks, one per name in the process: each counter's samples
// (STINT_COUNTER, stint::counter), and the memory totals that profile_memory's events carry, "Total
// Allocated (cpu)" and "Total Reserved (cpu)" (one pair per device), so that the memory curve shows
// under the ops. The Chrome and Perfetto traces read them here, so both draw the same tracks.

#include <deque>        // std::deque
#include <optional>     // std::optional
#include <string>       // std::string
#include <string_view>  // std::string_view

#include "stint/analysis/event_list.hpp"
#include "stint/common/device.hpp"
#include "stint/detail/separate_compilation.hpp"

namespace stint::detail {

/// The counter samples of an event list's events, event by event. Names of memory tracks are made
/// once per device and stay valid for the object's life.
class counter_samples {
public:
    /// Calls `on_sample(track name, counter_value, in_bytes)` for each sample `e` adds to a counter track:
    /// a counter's sample its value; a [memory] or [OutOfMemory] event its device's Total Allocated, then
    /// Total Reserved, just after it (in_bytes). Other events add none.
    template <class OnSample>
    void of(const event_list& events, const event& e, OnSample&& on_sample) {
        if (e.kind == event_kind::counter) {
            if (const std::optional<counter_value> value = events.counter_of(e)) on_sample(e.name, *value, false);
            return;
        }
        const memory_record* memory = events.memory_of(e);
        if (memory == nullptr) return;
        const memory_names& names = names_of(memory->device);
        on_sample(std::string_view(names.allocated), counter_value{.integer = memory->total_allocated}, true);
        on_sample(std::string_view(names.reserved), counter_value{.integer = memory->total_reserved}, true);
    }

private:
    struct memory_names {
        stint::device where;
        std::string allocated;  // "Total Allocated (cpu)", "Total Allocated (cuda:0)"
        std::string reserved;
    };

    STINT_DECL const memory_names& names_of(stint::device where);

    std::deque<memory_names> memory_names_;  // a deque never moves its strings: views stay valid
};

}  // namespace stint::detail

#if defined(STINT_HEADER_ONLY)
#include "stint/export/impl/counter_tracks.ipp"
#endif
