#pragma once
// Collapsed stacks ("folded" format) for flame graphs: flamegraph.pl, speedscope, inferno. One line
// per event with a stack: frames root-first joined by ';', a space, a positive integer (torch's
// export_stacks).

#include <cmath>
#include <cstdint>
#include <iterator>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "stint/analysis/event_list.hpp"
#include "stint/export/output_file.hpp"

namespace stint::detail {

inline constexpr std::string_view stack_metrics[] = {"self_cpu_time_total", "self_cuda_time_total"};

/// Appends `frame` with the characters that the format uses (space, ';', tab, newline) as '_'.
inline void append_stack_frame(std::string& out, std::string_view frame) {
    for (char c : frame) out.push_back(c == ' ' || c == ';' || c == '\t' || c == '\n' ? '_' : c);
}

/// Throws std::invalid_argument unless `metric` is one export_stacks knows.
inline void check_stack_metric(std::string_view metric) {
    for (std::string_view known : stack_metrics) {
        if (metric == known) return;
    }
    throw std::invalid_argument(fmt::format("stint: export_stacks: metric should be one of: [{}], not \"{}\"",
                                            fmt::join(stack_metrics, ", "), metric));
}

/// Writes the collapsed stacks of `events` to `sink` (anything with `write(std::string_view)`) in
/// blocks of about 64 KiB. Events without a stack, and those whose metric rounds down to 0 µs, are
/// left out. Records lost to the buffer budget show as one `[stint]_<n>_records_dropped 1` line, so
/// no drop goes unseen.
template <class Sink>
void write_collapsed_stacks(Sink& sink, const event_list& events, std::string_view metric) {
    check_stack_metric(metric);
    const bool cpu = metric == stack_metrics[0];
    std::string block;
    std::vector<std::string> paths;
    for (const event& e : events) {
        const std::span<const std::string> stack = events.stack(e);
        if (stack.empty()) continue;
        // Device time arrives with device activity; until then every self_cuda value is 0.
        const double value = cpu ? e.self_cpu_time_total() : 0.0;
        const auto whole = static_cast<std::int64_t>(std::floor(value));
        if (whole <= 0) continue;
        // Events on one call path share their stack: its line prefix is built once.
        if (e.stack >= paths.size()) paths.resize(e.stack + 1);
        std::string& path = paths[e.stack];
        if (path.empty()) {
            for (auto frame = stack.rbegin(); frame != stack.rend(); ++frame) {
                if (frame != stack.rbegin()) path.push_back(';');
                append_stack_frame(path, *frame);
            }
        }
        block.append(path);
        fmt::format_to(std::back_inserter(block), " {}\n", whole);
        if (block.size() >= (std::size_t{64} << 10)) {
            sink.write(block);
            block.clear();
        }
    }
    if (events.dropped() > 0) {
        fmt::format_to(std::back_inserter(block), "[stint]_{}_records_dropped 1\n", events.dropped());
    }
    if (!block.empty()) sink.write(block);
}

/// write_collapsed_stacks into `path`, created whole or not at all (gzip for ".gz").
inline void write_collapsed_stacks_file(const std::string& path, const event_list& events, std::string_view metric) {
    check_stack_metric(metric);  // before the file exists
    output_file file(path);
    write_collapsed_stacks(file, events, metric);
    file.commit();
}

}  // namespace stint::detail
