#pragma once
// Collapsed stacks ("folded" format) for flame graphs: flamegraph.pl, speedscope, inferno. One line
// per event with a stack: frames root-first joined by ';', a space, a positive integer (torch's
// export_stacks). The frames are the stack's source locations (torch's form) or the names of the
// event and its enclosing scopes.

#include <cstddef>        // std::size_t
#include <cstdint>        // std::uint8_t
#include <functional>     // std::hash
#include <string>         // std::string
#include <string_view>    // std::string_view
#include <unordered_map>  // std::unordered_map
#include <utility>        // std::pair
#include <vector>         // std::vector

#include "stint/analysis/event_list.hpp"
#include "stint/analysis/table.hpp"
#include "stint/detail/separate_compilation.hpp"

namespace stint {

/// What each frame of `export_stacks` is.
///
///     prof.export_stacks("cpu.stacks");  // main.cpp(12):_train_step;model.cpp(40):_forward 37
///     prof.export_stacks("cpu.stacks", "self_cpu_time_total", stint::stack_frames::names);
///     // train_step;forward;aten::mm 37
enum class stack_frames : std::uint8_t {
    locations,  ///< the stack's frames, `file(line): function` (torch's form; with_stack<native>: symbols)
    names,      ///< the names of the event and its enclosing scopes and ops, as the table shows them
                ///< (demangled, every "ProfilerStep#N" as "ProfilerStep*")
};

}  // namespace stint

namespace stint::detail {

inline constexpr std::string_view stack_metrics[] = {"self_cpu_time_total", "self_cuda_time_total"};

/// Appends `frame` with the characters that the format uses (space, ';') and every ASCII control
/// character as '_': readers split lines on more than '\n' (Python's splitlines() on '\r', '\v',
/// '\f', '\x1c'..'\x1e'), flamegraph.pl takes any whitespace before the count, C tools stop at NUL.
/// An empty frame (a scope named "") is '_': flamegraph.pl would drop it and charge its time to
/// the frame above.
STINT_DECL void append_stack_frame(std::string& out, std::string_view frame);

/// Throws std::invalid_argument unless `metric` is one export_stacks knows.
STINT_DECL void check_stack_metric(std::string_view metric);

// The name path (root first) of every event, interned as a tree like the list's stacks: an event's
// path is its name on top of its parent's path, (name, parent path) -> path, so deep nesting costs
// one node per path, not one string per path.
class name_paths {
public:
    STINT_DECL explicit name_paths(const event_list& events);

    // Appends the path of `e`, its names escaped and joined by ';'.
    STINT_DECL void append(std::string& out, const event& e);

private:
    struct node {
        std::string_view name;  // display_names keeps the text
        event_index parent;
    };
    struct key_hash {
        std::size_t operator()(const std::pair<std::string_view, event_index>& k) const noexcept {
            return std::hash<std::string_view>{}(k.first) * 31 + k.second;
        }
    };
    const event_list& events_;
    display_names names_;
    std::vector<event_index> path_of_;
    std::vector<event_index> pending_;
    std::vector<std::string_view> names_of_path_;
    std::unordered_map<std::pair<std::string_view, event_index>, event_index, key_hash> by_frame_;
    std::vector<node> nodes_;
};

/// write_collapsed_stacks' body, for a sink seen through `write(sink, bytes)`.
STINT_DECL void write_collapsed_stacks_to(void* sink, void (*write)(void*, std::string_view),
                                          const event_list& events, std::string_view metric, stack_frames frames);

/// Writes the collapsed stacks of `events` to `sink` (anything with `write(std::string_view)`) in
/// blocks of about 64 KiB. Events whose metric rounds down to 0 µs are left out, and with
/// `stack_frames::locations` those without a stack. "self_cuda_time_total" gives each CPU event's
/// self device time (the device work it launched itself); device events are left out, as their time
/// is their launcher's. Records lost to the buffer budget show as one `[stint]_<n>_records_dropped 1`
/// line, late records (event_list::late) as `[stint]_<n>_records_late 1`, and device records lost
/// (device_loss::lost) as `[stint]_<n>_device_records_lost 1`, so no loss goes unseen.
template <class Sink>
void write_collapsed_stacks(Sink& sink, const event_list& events, std::string_view metric,
                            stack_frames frames = stack_frames::locations) {
    write_collapsed_stacks_to(
        const_cast<void*>(static_cast<const void*>(&sink)),
        [](void* target, std::string_view bytes) { static_cast<Sink*>(target)->write(bytes); }, events, metric,
        frames);
}

/// write_collapsed_stacks into `path`, created whole or not at all (gzip for ".gz").
STINT_DECL void write_collapsed_stacks_file(const std::string& path, const event_list& events, std::string_view metric,
                                            stack_frames frames = stack_frames::locations);

}  // namespace stint::detail

#if defined(STINT_HEADER_ONLY)
#include "stint/export/impl/collapsed_stacks.ipp"
#endif
