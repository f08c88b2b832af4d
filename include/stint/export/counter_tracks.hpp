#pragma once
// What the traces draw as counter tracks, one per name in the process: each counter's samples
// (STINT_COUNTER, stint::counter), and the memory totals that profile_memory's events carry, "Total
// Allocated (cpu)" and "Total Reserved (cpu)" (one pair per device), so that the memory curve shows
// under the ops. The Chrome and Perfetto traces read them here, so both draw the same tracks.

#include <deque>
#include <optional>
#include <string>
#include <string_view>

#include "stint/analysis/event_list.hpp"
#include "stint/common/device.hpp"

namespace stint::detail {

template <class = void>
class basic_counter_samples;
/// basic_counter_samples's one form (a template only so that a file that does not use it does not compile it).
using counter_samples = basic_counter_samples<>;

/// The counter samples of an event list's events, event by event. Names of memory tracks are made
/// once per device and stay valid for the object's life.
template <class>
class basic_counter_samples {
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

    const memory_names& names_of(stint::device where) {
        for (const memory_names& n : memory_names_) {
            if (n.where == where) return n;
        }
        std::string device(device_type_name(where.type));
        if (where.type != device_type::cpu) device += ":" + std::to_string(where.index);
        memory_names_.push_back({where, "Total Allocated (" + device + ")", "Total Reserved (" + device + ")"});
        return memory_names_.back();
    }

    std::deque<memory_names> memory_names_;  // a deque never moves its strings: views stay valid
};

}  // namespace stint::detail
