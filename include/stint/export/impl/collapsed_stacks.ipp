#pragma once
// The bodies of collapsed_stacks.hpp: the folded lines of an event list, by stack or by name path.

#include "stint/export/collapsed_stacks.hpp"

#include <cmath>      // std::floor
#include <iterator>   // std::back_inserter
#include <optional>   // std::optional
#include <stdexcept>  // std::invalid_argument

#include <fmt/format.h>  // fmt::format_to, fmt::format, fmt::join

#include "stint/export/output_file.hpp"

namespace stint::detail {

void append_stack_frame(std::string& out, std::string_view frame) {
    if (frame.empty()) out.push_back('_');
    for (char c : frame) {
        const auto u = static_cast<unsigned char>(c);
        out.push_back(u <= 0x20 || u == 0x7F || c == ';' ? '_' : c);
    }
}

void check_stack_metric(std::string_view metric) {
    for (std::string_view known : stack_metrics) {
        if (metric == known) return;
    }
    throw std::invalid_argument(fmt::format("stint: export_stacks: metric should be one of: [{}], not \"{}\"",
                                            fmt::join(stack_metrics, ", "), metric));
}

name_paths::name_paths(const event_list& events) : events_(events), path_of_(events.size(), no_index) {}

void name_paths::append(std::string& out, const event& e) {
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

void write_collapsed_stacks_to(void* sink, void (*write)(void*, std::string_view),
                               const event_list& events, std::string_view metric, stack_frames frames) {
    check_stack_metric(metric);
    const bool cpu = metric == stack_metrics[0];
    std::string block;
    std::vector<const std::string*> root_first;
    std::optional<name_paths> named;
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
            write(sink, block);
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
    if (!block.empty()) write(sink, block);
}

void write_collapsed_stacks_file(const std::string& path, const event_list& events, std::string_view metric,
                                 stack_frames frames) {
    check_stack_metric(metric);  // before the file exists
    output_file file(path);
    write_collapsed_stacks(file, events, metric, frames);
    file.commit();
}

}  // namespace stint::detail
