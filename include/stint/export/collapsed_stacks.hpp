#pragma once
// Collapsed stacks ("folded" format) for flame graphs: flamegraph.pl, speedscope, inferno. One line
// per event with a stack: frames root-first joined by ';', a space, a positive integer (torch's
// export_stacks). The frames are the stack's source locations (torch's form) or the names of the
// event and its enclosing scopes.

#include <cmath>
#include <cstdint>
#include <functional>
#include <iterator>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "stint/analysis/event_list.hpp"
#include "stint/analysis/table.hpp"
#include "stint/detail/deferred.hpp"
#include "stint/export/output_file.hpp"

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
template <class = void>
void append_stack_frame(std::string& out, std::string_view frame) {
    if (frame.empty()) out.push_back('_');
    for (char c : frame) {
        const auto u = static_cast<unsigned char>(c);
        out.push_back(u <= 0x20 || u == 0x7F || c == ';' ? '_' : c);
    }
}

/// Throws std::invalid_argument unless `metric` is one export_stacks knows.
template <class Unused = void>
void check_stack_metric(deferred_t<std::string_view, Unused> metric) {
    for (std::string_view known : stack_metrics) {
        if (metric == known) return;
    }
    throw std::invalid_argument(fmt::format("stint: export_stacks: metric should be one of: [{}], not \"{}\"",
                                            fmt::join(stack_metrics, ", "), metric));
}

template <class = void>
class basic_name_paths;
/// basic_name_paths's one form (a template only so that a file that does not use it does not compile it).
using name_paths = basic_name_paths<>;

// The name path (root first) of every event, interned as a tree like the list's stacks: an event's
// path is its name on top of its parent's path, (name, parent path) -> path, so deep nesting costs
// one node per path, not one string per path.
template <class Unused>
class basic_name_paths {
    template <class T>
    using later = deferred_t<T, Unused>;

public:
    explicit basic_name_paths(const later<event_list>& events) : events_(events), path_of_(events.size(), no_index) {}

    // Appends the path of `e`, its names escaped and joined by ';'.
    void append(later<std::string>& out, const event& e) {
        // Resolve the unresolved ancestors first, outermost last in `pending_`.
        pending_.clear();
        for (event_index i = events_.index_of(e); i != no_index && path_of_[i] == no_index; i = events_[i].parent) {
            pending_.push_back(i);
        }
        for (auto i = pending_.rbegin(); i != pending_.rend(); ++i) {
            const event& at = events_[*i];
            const event_index parent = at.parent == no_index ? no_index : path_of_[at.parent];
            const std::string_view name = names_(at.name);
            auto [it, added] = by_frame_.try_emplace({name, parent}, static_cast<event_index>(nodes_.size()));
            if (added) nodes_.push_back({name, parent});
            path_of_[*i] = it->second;
        }
        // Root first: collect the path's names innermost first, then write them backwards.
        names_of_path_.clear();
        for (event_index p = path_of_[events_.index_of(e)]; p != no_index; p = nodes_[p].parent) {
            names_of_path_.push_back(nodes_[p].name);
        }
        for (auto name = names_of_path_.rbegin(); name != names_of_path_.rend(); ++name) {
            if (name != names_of_path_.rbegin()) out.push_back(';');
            append_stack_frame(out, *name);
        }
    }

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
    const later<event_list>& events_;
    later<display_names> names_;
    later<std::vector<event_index>> path_of_;
    later<std::vector<event_index>> pending_;
    later<std::vector<std::string_view>> names_of_path_;
    later<std::unordered_map<std::pair<std::string_view, event_index>, event_index, key_hash>> by_frame_;
    later<std::vector<node>> nodes_;
};

/// Writes the collapsed stacks of `events` to `sink` (anything with `write(std::string_view)`) in
/// blocks of about 64 KiB. Events whose metric rounds down to 0 µs are left out, and with
/// `stack_frames::locations` those without a stack. "self_cuda_time_total" gives each CPU event's
/// self device time (the device work it launched itself); device events are left out, as their time
/// is their launcher's. Records lost to the buffer budget show as one `[stint]_<n>_records_dropped 1`
/// line, late records (event_list::late) as `[stint]_<n>_records_late 1`, and device records lost
/// (device_loss::lost) as `[stint]_<n>_device_records_lost 1`, so no loss goes unseen.
template <class Sink>
void write_collapsed_stacks(Sink& sink, const deferred_t<event_list, Sink>& events, std::string_view metric,
                            stack_frames frames = stack_frames::locations) {
    check_stack_metric(metric);
    const bool cpu = metric == stack_metrics[0];
    deferred_t<std::string, Sink> block;
    deferred_t<std::vector<const std::string*>, Sink> root_first;
    std::optional<basic_name_paths<deferred_t<void, Sink>>> named;  // name_paths
    if (frames == stack_frames::names) named.emplace(events);
    for (const event& e : events) {
        if (e.on_device()) continue;
        const call_stack stack = events.stack(e);
        if (frames == stack_frames::locations && stack.empty()) continue;
        const double value = cpu ? e.self_cpu_time_total() : e.self_device_time_total();
        const auto whole = static_cast<std::int64_t>(std::floor(value));
        if (whole <= 0) continue;
        if (frames == stack_frames::names) {
            named->append(block, e);
        } else {
            // Written from the stack each time: a cached line per stack would cost the square of the
            // depth for nested scopes.
            root_first.clear();
            for (const std::string& frame : stack) root_first.push_back(&frame);
            for (auto frame = root_first.rbegin(); frame != root_first.rend(); ++frame) {
                if (frame != root_first.rbegin()) block.push_back(';');
                append_stack_frame(block, **frame);
            }
        }
        fmt::format_to(std::back_inserter(block), " {}\n", whole);
        if (block.size() >= (std::size_t{64} << 10)) {
            sink.write(block);
            block.clear();
        }
    }
    if (events.dropped() > 0) {
        fmt::format_to(std::back_inserter(block), "[stint]_{}_records_dropped 1\n", events.dropped());
    }
    if (events.late() > 0) {
        fmt::format_to(std::back_inserter(block), "[stint]_{}_records_late 1\n", events.late());
    }
    if (const std::uint64_t lost = events.device().loss.lost(); lost > 0) {
        fmt::format_to(std::back_inserter(block), "[stint]_{}_device_records_lost 1\n", lost);
    }
    if (!block.empty()) sink.write(block);
}

/// write_collapsed_stacks into `path`, created whole or not at all (gzip for ".gz").
template <class Unused = void>
void write_collapsed_stacks_file(const std::string& path, const deferred_t<event_list, Unused>& events,
                                 std::string_view metric, stack_frames frames = stack_frames::locations) {
    check_stack_metric(metric);  // before the file exists
    output_file file(path);
    write_collapsed_stacks(file, events, metric, frames);
    file.commit();
}

}  // namespace stint::detail
