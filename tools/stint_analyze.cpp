// stint-analyze: Holistic Trace Analysis's analyses and run-to-run diffs over Chrome/Kineto JSON traces
// (torch.profiler's and stint's) and stint's Perfetto traces, plain or gzip, read in one streaming pass,
// on stint's public API.
//
//     stint-analyze breakdown run.pt.trace.json.gz
//     stint-analyze diff --fail-ratio 1.10 --noise-us 50 before.json after.json
//
// Exit status: 0 done, 1 a diff gate tripped (an op slowed past --fail-ratio), 2 bad usage, 3 a trace
// could not be read.

#include <algorithm>    // std::max
#include <cerrno>       // errno
#include <cmath>        // std::isfinite, std::ldexp
#include <cstdio>       // std::FILE, std::fopen, std::fwrite, std::fclose
#include <exception>    // std::exception
#include <limits>       // std::numeric_limits
#include <optional>     // std::optional
#include <string>       // std::string, std::stod, std::stoll
#include <string_view>  // std::string_view
#include <system_error> // std::system_error
#include <vector>       // std::vector

#include <fmt/format.h>  // fmt::format, fmt::print

#include "stint/analysis/trace_analysis.hpp"
#include "stint/analysis/trace_diff.hpp"
#include "stint/common/utf8.hpp"

namespace {

constexpr std::string_view usage_text = R"(usage: stint-analyze COMMAND [OPTIONS] TRACE
       stint-analyze diff [OPTIONS] TRACE_A TRACE_B

Analyses a Chrome/Kineto JSON trace (torch.profiler's or stint's) or stint's Perfetto trace
(plain or gzip). Perfetto traces carry no correlation ids: launches, queue and host wait need JSON.

commands:
  breakdown   each device's span, computation, communication, memory and idle time (CPU-only
              traces: each thread's busy and idle time, and the top ops by self time)
  idle        each stream's idle time by cause: host wait, kernel wait, other
  overlap     each device's computation/communication overlap
  kernels     the top kernels by total time, per device and overall, with duration percentiles
  launches    launch delays, short kernels and kernels shorter than their launch
  queue       each stream's queue length (launched, unfinished work) over time
  diff        per-op counts and times of two runs, most changed first

options:
  --json              print JSON instead of a table
  --top N             kernels, breakdown: rows per group (default 10)
  --kernel-wait-ns N  idle: gaps shorter than this are kernel wait (default 30)
  --short-us X        launches: kernels shorter than this are short (default 10)
  --counter-trace F   queue: also write the queue lengths as a Chrome trace of counter tracks to F
  --by-shape          diff: compare per op name and input shapes
  --noise-us X        diff: leave out ops whose total changed by less than X us (default 0)
  --fail-ratio R      diff: exit 1 when an op's total in B exceeds R x its total in A
  --help              print this and exit

exit status: 0 done, 1 the diff gate tripped, 2 bad usage, 3 a trace could not be read
)";

struct usage_error {
    std::string what;
};

struct arguments {
    std::string command;
    std::vector<std::string> traces;
    bool json = false;
    std::size_t top = 10;
    std::int64_t kernel_wait_ns = 30;
    double short_us = 10;
    std::string counter_trace;
    bool by_shape = false;
    double noise_us = 0;
    std::optional<double> fail_ratio;
};

double number_of(const std::string& flag, const std::string& text) {
    try {
        std::size_t used = 0;
        const double v = std::stod(text, &used);
        if (used != text.size() || !std::isfinite(v) || v < 0) throw usage_error{};
        return v;
    } catch (...) {
        throw usage_error{fmt::format("{} wants a non-negative number, not '{}'", flag, text)};
    }
}

/// number_of, for a count or a length: within what T holds (a cast of a larger double is undefined).
template <class T>
T whole_number_of(const std::string& flag, const std::string& text) {
    const double v = number_of(flag, text);
    // 2^digits, a double exactly: the first value past T's range.
    if (v >= std::ldexp(1.0, std::numeric_limits<T>::digits)) {
        throw usage_error{fmt::format("{} wants a number up to {}, not '{}'", flag, std::numeric_limits<T>::max(), text)};
    }
    return static_cast<T>(v);
}

arguments parse(int argc, char** argv) {
    arguments a;
    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        const auto value = [&]() -> std::string {
            if (i + 1 >= argc) throw usage_error{fmt::format("{} wants a value", arg)};
            return argv[++i];
        };
        if (arg == "--json") a.json = true;
        else if (arg == "--by-shape") a.by_shape = true;
        else if (arg == "--top") a.top = whole_number_of<std::size_t>(arg, value());
        else if (arg == "--kernel-wait-ns") a.kernel_wait_ns = whole_number_of<std::int64_t>(arg, value());
        else if (arg == "--short-us") a.short_us = number_of(arg, value());
        else if (arg == "--counter-trace") a.counter_trace = value();
        else if (arg == "--noise-us") a.noise_us = number_of(arg, value());
        else if (arg == "--fail-ratio") a.fail_ratio = number_of(arg, value());
        else if (arg.starts_with("--")) throw usage_error{fmt::format("unknown option {}", arg)};
        else if (a.command.empty()) a.command = arg;
        else a.traces.push_back(arg);
    }
    if (a.command.empty()) throw usage_error{"no command given"};
    static constexpr std::string_view commands[] = {"breakdown", "idle", "overlap", "kernels", "launches", "queue",
                                                    "diff"};
    bool known = false;
    for (std::string_view c : commands) known = known || c == a.command;
    if (!known) throw usage_error{fmt::format("unknown command '{}'", a.command)};
    const std::size_t wanted = a.command == "diff" ? 2 : 1;
    if (a.traces.size() != wanted) {
        throw usage_error{fmt::format("{} takes {} trace file{}", a.command, wanted, wanted == 1 ? "" : "s")};
    }
    return a;
}

// torch's _format_time: microseconds shown as s, ms or us with three decimals.
std::string format_time(std::int64_t ns) {
    const double us = static_cast<double>(ns) / 1e3;
    const double magnitude = us < 0 ? -us : us;
    if (magnitude >= 1e6) return fmt::format("{:.3f}s", us / 1e6);
    if (magnitude >= 1e3) return fmt::format("{:.3f}ms", us / 1e3);
    return fmt::format("{:.3f}us", us);
}
std::string percent(double p) { return fmt::format("{:.2f}%", p); }
double us(std::int64_t ns) { return static_cast<double>(ns) / 1e3; }

// A JSON string; bytes that are not UTF-8 become U+FFFD, so the output is always valid JSON.
std::string quoted(std::string_view s) {
    std::string out = "\"";
    std::size_t i = 0;
    while (i < s.size()) {
        const auto c = static_cast<unsigned char>(s[i]);
        if (c == '"' || c == '\\') {
            out += '\\';
            out += static_cast<char>(c);
            ++i;
        } else if (c < 0x20) {
            out += fmt::format("\\u{:04x}", c);
            ++i;
        } else if (c < 0x80) {
            out += static_cast<char>(c);
            ++i;
        } else {
            // Each ill-formed part (common/utf8.hpp's rule) becomes one U+FFFD, as the exporters write it.
            const auto* p = reinterpret_cast<const unsigned char*>(s.data()) + i;
            const int n = stint::detail::utf8_sequence(p, reinterpret_cast<const unsigned char*>(s.data()) + s.size());
            if (n < 0) {
                out += "\\ufffd";
                i += static_cast<std::size_t>(-n);
            } else {
                out.append(s.substr(i, static_cast<std::size_t>(n)));
                i += static_cast<std::size_t>(n);
            }
        }
    }
    return out + "\"";
}

// torch's table layout (profiler_util._build_table): a dashed rule, the header, a rule, the rows, a
// rule; the first column left-aligned, the others right-aligned, two spaces between.
std::string table(const std::vector<std::string>& header, const std::vector<std::vector<std::string>>& rows) {
    std::vector<std::size_t> width(header.size());
    for (std::size_t c = 0; c < header.size(); ++c) width[c] = header[c].size();
    for (const auto& row : rows) {
        for (std::size_t c = 0; c < row.size(); ++c) width[c] = std::max(width[c], row[c].size());
    }
    std::string rule;
    for (std::size_t c = 0; c < width.size(); ++c) rule += std::string(width[c], '-') + "  ";
    rule += "\n";
    const auto line = [&](const std::vector<std::string>& cells) {
        std::string out;
        for (std::size_t c = 0; c < cells.size(); ++c) {
            out += c == 0 ? fmt::format("{:<{}}  ", cells[c], width[c]) : fmt::format("{:>{}}  ", cells[c], width[c]);
        }
        return out + "\n";
    };
    std::string out = rule + line(header) + rule;
    for (const auto& row : rows) out += line(row);
    return out + rule;
}

std::string short_name(const std::string& name) {
    return name.size() > 55 ? name.substr(0, 52) + "..." : name;
}

std::string json_durations(const stint::duration_stats& d) {
    return fmt::format(R"("count": {}, "total_us": {:.3f}, "min_us": {:.3f}, "p50_us": {:.3f}, "p90_us": {:.3f}, )"
                       R"("p99_us": {:.3f}, "max_us": {:.3f})",
                       d.count, us(d.total_ns), us(d.min_ns), us(d.p50_ns), us(d.p90_ns), us(d.p99_ns), us(d.max_ns));
}

std::string read_notes(const stint::trace_read_stats& s) {
    std::string out;
    if (s.missing_duration != 0) out += fmt::format("Skipped: {} complete events without a duration\n", s.missing_duration);
    if (s.unknown_category != 0) out += fmt::format("Skipped: {} events of unknown categories\n", s.unknown_category);
    if (s.invalid_utf8_names != 0) out += fmt::format("Names not UTF-8: {}\n", s.invalid_utf8_names);
    return out;
}

std::string breakdown(const stint::trace_profile& p, const arguments& a) {
    if (!p.has_device_work()) {
        const auto threads = p.threads();
        if (a.json) {
            std::string out = "[";
            for (std::size_t i = 0; i < threads.size(); ++i) {
                const auto& t = threads[i];
                out += fmt::format(R"({}{{"pid": {}, "tid": {}, "span_us": {:.3f}, "busy_us": {:.3f}, "idle_us": {:.3f}}})",
                                   i == 0 ? "\n  " : ",\n  ", t.pid, t.tid, us(t.span_ns), us(t.busy_ns), us(t.idle_ns));
            }
            return out + "\n]\n";
        }
        std::vector<std::vector<std::string>> rows;
        for (const auto& t : threads) {
            const double pct = t.span_ns > 0 ? 100.0 * static_cast<double>(t.idle_ns) / static_cast<double>(t.span_ns) : 0;
            rows.push_back({fmt::format("{}/{}", t.pid, t.tid), format_time(t.span_ns), format_time(t.busy_ns),
                            format_time(t.idle_ns), percent(pct)});
        }
        std::string out = table({"Thread (pid/tid)", "Span", "Busy", "Idle", "Idle %"}, rows);
        std::vector<std::vector<std::string>> ops;
        for (const auto& o : p.op_stats()) {
            if (ops.size() >= a.top) break;
            ops.push_back({short_name(o.name), std::to_string(o.count), format_time(o.self_ns), format_time(o.total_ns)});
        }
        return out + "\n" + table({"Name", "# of Calls", "Self CPU total", "CPU total"}, ops);
    }
    const auto devices = p.breakdown();
    if (a.json) {
        std::string out = "[";
        for (std::size_t i = 0; i < devices.size(); ++i) {
            const auto& d = devices[i];
            out += fmt::format(R"({}{{"device": {}, "rank": {}, "index": {}, "span_us": {:.3f}, "compute_us": {:.3f}, )"
                               R"("communication_us": {:.3f}, "memory_us": {:.3f}, "busy_us": {:.3f}, "idle_us": {:.3f}, )"
                               R"("overlap_pct": {:.3f}}})",
                               i == 0 ? "\n  " : ",\n  ", quoted(d.device), d.rank, d.index, us(d.span_ns),
                               us(d.compute_ns), us(d.communication_ns), us(d.memory_ns), us(d.busy_ns), us(d.idle_ns),
                               d.overlap_percent());
        }
        return out + "\n]\n";
    }
    std::vector<std::vector<std::string>> rows;
    for (const auto& d : devices) {
        rows.push_back({d.device, format_time(d.span_ns), format_time(d.compute_ns), percent(d.percent(d.compute_ns)),
                        format_time(d.communication_ns), percent(d.percent(d.communication_ns)),
                        format_time(d.memory_ns), percent(d.percent(d.memory_ns)), format_time(d.idle_ns),
                        percent(d.percent(d.idle_ns))});
    }
    return table({"Device", "Span", "Computation", "Comp %", "Communication", "Comm %", "Memory", "Mem %", "Idle",
                  "Idle %"},
                 rows) +
           read_notes(p.read_stats());
}

std::string idle(const stint::trace_profile& p, const arguments& a) {
    const auto streams = p.idle_time();
    if (a.json) {
        std::string out = "[";
        for (std::size_t i = 0; i < streams.size(); ++i) {
            const auto& s = streams[i];
            out += fmt::format(R"({}{{"device": {}, "stream": {}, "gaps": {}, "idle_us": {:.3f}, "host_wait_us": {:.3f}, )"
                               R"("kernel_wait_us": {:.3f}, "other_us": {:.3f}}})",
                               i == 0 ? "\n  " : ",\n  ", quoted(s.device), s.stream, s.gaps, us(s.idle_ns),
                               us(s.host_wait_ns), us(s.kernel_wait_ns), us(s.other_ns));
        }
        return out + "\n]\n";
    }
    std::vector<std::vector<std::string>> rows;
    for (const auto& s : streams) {
        rows.push_back({s.device, std::to_string(s.stream), std::to_string(s.gaps), format_time(s.idle_ns),
                        format_time(s.host_wait_ns), format_time(s.kernel_wait_ns), format_time(s.other_ns)});
    }
    return table({"Device", "Stream", "Gaps", "Idle", "Host wait", "Kernel wait", "Other"}, rows);
}

std::string overlap(const stint::trace_profile& p, const arguments& a) {
    const auto devices = p.breakdown();
    if (a.json) {
        std::string out = "[";
        for (std::size_t i = 0; i < devices.size(); ++i) {
            const auto& d = devices[i];
            out += fmt::format(R"({}{{"device": {}, "compute_us": {:.3f}, "communication_us": {:.3f}, "overlap_us": {:.3f}, )"
                               R"("overlap_pct": {:.3f}}})",
                               i == 0 ? "\n  " : ",\n  ", quoted(d.device), us(d.compute_ns), us(d.communication_ns),
                               us(d.overlap_ns), d.overlap_percent());
        }
        return out + "\n]\n";
    }
    std::vector<std::vector<std::string>> rows;
    for (const auto& d : devices) {
        rows.push_back({d.device, format_time(d.compute_ns), format_time(d.communication_ns), format_time(d.overlap_ns),
                        percent(d.overlap_percent())});
    }
    return table({"Device", "Computation", "Communication", "Overlap", "Overlap % of comm"}, rows);
}

std::string kernels(const stint::trace_profile& p, const arguments& a) {
    const auto rows_in = p.kernels(a.top);
    if (a.json) {
        std::string out = "[";
        for (std::size_t i = 0; i < rows_in.size(); ++i) {
            out += fmt::format(R"({}{{"device": {}, "name": {}, {}}})", i == 0 ? "\n  " : ",\n  ",
                               quoted(rows_in[i].device), quoted(rows_in[i].name), json_durations(rows_in[i].durations));
        }
        return out + "\n]\n";
    }
    std::vector<std::vector<std::string>> rows;
    for (const auto& k : rows_in) {
        const auto& d = k.durations;
        rows.push_back({short_name(k.name), k.device, std::to_string(d.count), format_time(d.total_ns),
                        format_time(d.min_ns), format_time(d.p50_ns), format_time(d.p90_ns), format_time(d.p99_ns),
                        format_time(d.max_ns)});
    }
    return table({"Name", "Device", "Count", "Total", "Min", "P50", "P90", "P99", "Max"}, rows);
}

std::string launches(const stint::trace_profile& p, const arguments& a) {
    const auto s = p.launches();
    if (a.json) {
        return fmt::format(R"({{"matched": {}, "unmatched": {}, "delay": {{{}}}, "short_threshold_us": {:.3f}, )"
                           R"("short_kernels": {}, "short_kernels_us": {:.3f}, "launch_longer_than_kernel": {}}})"
                           "\n",
                           s.matched, s.unmatched, json_durations(s.delay), us(s.short_threshold_ns), s.short_kernels,
                           us(s.short_kernels_ns), s.launch_longer);
    }
    const auto& d = s.delay;
    std::string out = table({"Launch delay", "Count", "Min", "P50", "P90", "P99", "Max"},
                            {{"work start - launch end", std::to_string(d.count), format_time(d.min_ns),
                              format_time(d.p50_ns), format_time(d.p90_ns), format_time(d.p99_ns), format_time(d.max_ns)}});
    out += fmt::format("Device work with its launch: {}, without: {}\n", s.matched, s.unmatched);
    out += fmt::format("Kernels shorter than {}: {} ({} in all)\n", format_time(s.short_threshold_ns), s.short_kernels,
                       format_time(s.short_kernels_ns));
    out += fmt::format("Kernels shorter than their launch call: {}\n", s.launch_longer);
    return out;
}

std::string queue(const stint::trace_profile& p, const arguments& a) {
    const auto streams = p.queue_lengths();
    if (!a.counter_trace.empty()) {
        std::string trace = "{\"traceEvents\": [";
        bool first = true;
        for (const auto& q : streams) {
            for (const auto& s : q.samples) {
                trace += fmt::format(R"({}{{"ph": "C", "name": {}, "pid": 0, "ts": {:.3f}, "args": {{"length": {}}}}})",
                                     first ? "\n  " : ",\n  ", quoted(fmt::format("queue {} stream {}", q.device, q.stream)),
                                     us(s.time_ns), s.length);
                first = false;
            }
        }
        trace += "\n]}\n";
        std::FILE* f = std::fopen(a.counter_trace.c_str(), "wb");
        if (f == nullptr || std::fwrite(trace.data(), 1, trace.size(), f) != trace.size() || std::fclose(f) != 0) {
            throw std::system_error(errno, std::generic_category(),
                                    fmt::format("stint-analyze: cannot write '{}'", a.counter_trace));
        }
    }
    if (a.json) {
        std::string out = "[";
        for (std::size_t i = 0; i < streams.size(); ++i) {
            const auto& q = streams[i];
            out += fmt::format(R"({}{{"device": {}, "stream": {}, "max_length": {}, "mean_length": {:.4f}, "samples": [)",
                               i == 0 ? "\n  " : ",\n  ", quoted(q.device), q.stream, q.max_length, q.mean_length);
            for (std::size_t k = 0; k < q.samples.size(); ++k) {
                out += fmt::format("{}[{:.3f}, {}]", k == 0 ? "" : ", ", us(q.samples[k].time_ns), q.samples[k].length);
            }
            out += "]}";
        }
        return out + "\n]\n";
    }
    std::vector<std::vector<std::string>> rows;
    for (const auto& q : streams) {
        rows.push_back({q.device, std::to_string(q.stream), std::to_string(q.max_length),
                        fmt::format("{:.2f}", q.mean_length), std::to_string(q.samples.size())});
    }
    return table({"Device", "Stream", "Max queue", "Mean queue", "Samples"}, rows);
}

int diff(const arguments& a, std::string& out) {
    const stint::trace_analysis_options options{.group_by_input_shape = a.by_shape};
    const auto before = stint::trace_profile::from_file(a.traces[0], options);
    const auto after = stint::trace_profile::from_file(a.traces[1], options);
    const auto rows_in =
        stint::diff_ops(before.op_stats(), after.op_stats(), {.noise_ns = static_cast<std::int64_t>(a.noise_us * 1e3)});
    const auto slowed = a.fail_ratio ? stint::slowed_ops(rows_in, *a.fail_ratio) : std::vector<stint::op_diff>{};
    if (a.json) {
        out = "[";
        for (std::size_t i = 0; i < rows_in.size(); ++i) {
            const auto& d = rows_in[i];
            out += fmt::format(R"({}{{"name": {}, "shapes": {}, "device": {}, "count_a": {}, "count_b": {}, )"
                               R"("total_us_a": {:.3f}, "total_us_b": {:.3f}, "self_us_a": {:.3f}, "self_us_b": {:.3f}, )"
                               R"("change_us": {:.3f}}})",
                               i == 0 ? "\n  " : ",\n  ", quoted(d.name), quoted(d.shapes), d.on_device ? "true" : "false",
                               d.count_a, d.count_b, us(d.total_a_ns), us(d.total_b_ns), us(d.self_a_ns), us(d.self_b_ns),
                               us(d.change_ns()));
        }
        out += "\n]\n";
    } else {
        std::vector<std::vector<std::string>> rows;
        for (const auto& d : rows_in) {
            const double r = d.ratio();
            rows.push_back({short_name(d.name), a.by_shape ? d.shapes : std::string(d.on_device ? "device" : "cpu"),
                            std::to_string(d.count_a), std::to_string(d.count_b), format_time(d.total_a_ns),
                            format_time(d.total_b_ns), format_time(d.self_a_ns), format_time(d.self_b_ns),
                            (d.change_ns() > 0 ? "+" : "") + format_time(d.change_ns()),
                            std::isfinite(r) ? fmt::format("{:.2f}x", r) : std::string("new")});
        }
        out = table({"Name", a.by_shape ? "Input Shapes" : "Where", "Count A", "Count B", "Total A", "Total B", "Self A",
                     "Self B", "Change", "B/A"},
                    rows);
        for (const auto& s : slowed) {
            out += fmt::format("SLOWER: {} {} -> {} (past {:.2f}x)\n", s.name, format_time(s.total_a_ns),
                               format_time(s.total_b_ns), *a.fail_ratio);
        }
    }
    return slowed.empty() ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
    for (int i = 1; i < argc; ++i) {
        if (std::string_view(argv[i]) == "--help" || std::string_view(argv[i]) == "-h") {
            fmt::print("{}", usage_text);
            return 0;
        }
    }
    arguments a;
    try {
        a = parse(argc, argv);
    } catch (const usage_error& e) {
        fmt::print(stderr, "stint-analyze: {}\n\n{}", e.what, usage_text);
        return 2;
    }
    try {
        std::string out;
        int status = 0;
        if (a.command == "diff") {
            status = diff(a, out);
        } else {
            stint::trace_analysis_options options;
            options.kernel_wait_ns = a.kernel_wait_ns;
            options.short_kernel_ns = static_cast<std::int64_t>(a.short_us * 1e3);
            const auto p = stint::trace_profile::from_file(a.traces[0], options);
            if (a.command == "breakdown") out = breakdown(p, a);
            else if (a.command == "idle") out = idle(p, a);
            else if (a.command == "overlap") out = overlap(p, a);
            else if (a.command == "kernels") out = kernels(p, a);
            else if (a.command == "launches") out = launches(p, a);
            else out = queue(p, a);
        }
        fmt::print("{}", out);
        return status;
    } catch (const std::exception& e) {
        fmt::print(stderr, "{}\n", e.what());
        return 3;
    }
}
