#pragma once
// The bodies of analysis/trace_analysis.hpp: interval arithmetic over each device's and thread's work.

#include "stint/analysis/trace_analysis.hpp"

#include <algorithm>  // std::sort, std::max, std::min
#include <cmath>      // std::ceil
#include <map>        // std::map
#include <tuple>      // std::tuple, std::get
#include <utility>    // std::pair

#include <fmt/format.h>  // fmt::format

#include "stint/analysis/event.hpp"
#include "stint/common/event_kind.hpp"

namespace stint {
namespace detail {

void merge_intervals(std::vector<interval>& v) {
    std::sort(v.begin(), v.end());
    std::size_t out = 0;
    for (const interval& i : v) {
        if (out > 0 && i.first <= v[out - 1].second) {
            v[out - 1].second = std::max(v[out - 1].second, i.second);
        } else {
            v[out++] = i;
        }
    }
    v.resize(out);
}

std::int64_t length_of(const std::vector<interval>& disjoint) {
    std::int64_t total = 0;
    for (const interval& i : disjoint) total += i.second - i.first;
    return total;
}

std::int64_t intersection_length(const std::vector<interval>& a, const std::vector<interval>& b) {
    std::int64_t total = 0;
    std::size_t i = 0, j = 0;
    while (i < a.size() && j < b.size()) {
        const std::int64_t lo = std::max(a[i].first, b[j].first);
        const std::int64_t hi = std::min(a[i].second, b[j].second);
        if (hi > lo) total += hi - lo;
        if (a[i].second < b[j].second) ++i;
        else ++j;
    }
    return total;
}

std::string compact_shapes(std::string_view text) {
    std::string out;
    out.reserve(text.size());
    for (char c : text) {
        if (c != ' ' && c != '\n' && c != '\t' && c != '\r') out.push_back(c);
    }
    return out;
}

}  // namespace detail

bool is_communication_kernel(std::string_view name) {
    std::string lower(name.substr(0, 256));
    for (char& c : lower) {
        if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    }
    for (std::string_view word : {"nccl", "rccl", "allreduce", "all_reduce", "allgather", "all_gather",
                                  "reducescatter", "reduce_scatter", "alltoall", "all_to_all", "sendrecv",
                                  "broadcast"}) {
        if (lower.find(word) != std::string::npos) return true;
    }
    return false;
}

duration_stats summarize_durations(std::vector<std::int64_t>& durations) {
    duration_stats s;
    if (durations.empty()) return s;
    std::sort(durations.begin(), durations.end());
    s.count = durations.size();
    for (std::int64_t d : durations) s.total_ns += d;
    const auto rank = [&](double p) {
        const double n = std::ceil(p / 100.0 * static_cast<double>(durations.size()));
        const auto k = static_cast<std::size_t>(std::max(1.0, n));
        return durations[std::min(k, durations.size()) - 1];
    };
    s.min_ns = durations.front();
    s.p50_ns = rank(50);
    s.p90_ns = rank(90);
    s.p99_ns = rank(99);
    s.max_ns = durations.back();
    return s;
}

trace_profile trace_profile::from_file(const std::string& path, trace_analysis_options options) {
    trace_profile p(options);
    const trace_read_stats stats = read_trace(path, [&p](const trace_record& r) { p.add(r); });
    p.stats_ = stats;
    p.finish(stats.rank);
    return p;
}

trace_profile trace_profile::from_text(std::string_view json, trace_analysis_options options) {
    trace_profile p(options);
    const trace_read_stats stats = read_chrome_trace_text(json, [&p](const trace_record& r) { p.add(r); });
    p.stats_ = stats;
    p.finish(stats.rank);
    return p;
}

trace_profile trace_profile::from_perfetto_bytes(std::string_view bytes, trace_analysis_options options) {
    trace_profile p(options);
    const trace_read_stats stats = read_perfetto_trace_bytes(bytes, [&p](const trace_record& r) { p.add(r); });
    p.stats_ = stats;
    p.finish(stats.rank);
    return p;
}

trace_profile trace_profile::from_events(const event_list& list, trace_analysis_options options) {
    trace_profile p(options);
    for (const event& e : list) {
        if (e.end_ns < e.start_ns) continue;
        const device_args* dev = list.device_args_of(e);
        const std::int64_t correlation = dev != nullptr ? static_cast<std::int64_t>(dev->correlation) : -1;
        if (e.on_device()) {
            if (e.kind != event_kind::kernel && e.kind != event_kind::gpu_memcpy && e.kind != event_kind::gpu_memset) {
                continue;
            }
            const std::uint32_t d = p.device_of(e.device.index, e.device.index);
            const work_kind kind = e.kind != event_kind::kernel       ? work_kind::memory
                                   : is_communication_kernel(e.name) ? work_kind::communication
                                                                     : work_kind::compute;
            p.add_work(p.stream_of(d, e.stream), kind, e.start_ns, e.end_ns, correlation, e.name);
            continue;
        }
        const bool runtime = e.kind == event_kind::cuda_runtime || e.kind == event_kind::cuda_driver;
        const bool op = e.kind == event_kind::cpu_op || e.kind == event_kind::user_annotation ||
                        e.kind == event_kind::module;
        if (!runtime && !op) continue;
        const thread_info& t = list.thread_of(e);
        const std::uint32_t thread = p.thread_of(0, static_cast<std::int64_t>(t.os_tid));
        std::string shapes;
        if (p.options_.group_by_input_shape) {
            if (const event_args* args = list.args(e)) {
                shapes = "[";
                for (std::size_t i = 0; i < args->input_dims.size(); ++i) {
                    shapes += i == 0 ? "[" : ",[";
                    for (std::size_t k = 0; k < args->input_dims[i].size(); ++k) {
                        shapes += fmt::format("{}{}", k == 0 ? "" : ",", args->input_dims[i][k]);
                    }
                    shapes += "]";
                }
                shapes += "]";
            }
        }
        p.cpu_.push_back({e.start_ns, e.end_ns, p.intern(e.name), p.intern(shapes), thread});
        if (runtime) p.launches_.push_back({e.start_ns, e.end_ns, correlation, 0});
        ++p.stats_.events;
    }
    p.finish(std::nullopt);
    return p;
}

std::uint32_t trace_profile::intern(std::string_view text) {
    const auto it = name_ids_.find(text);
    if (it != name_ids_.end()) return it->second;
    names_.emplace_back(text);
    const auto id = static_cast<std::uint32_t>(names_.size() - 1);
    name_ids_.emplace(names_.back(), id);
    return id;
}

std::uint32_t trace_profile::device_of(std::int64_t pid, std::int32_t index) {
    for (std::size_t i = 0; i < devices_.size(); ++i) {
        if (devices_[i].pid == pid && devices_[i].index == index) return static_cast<std::uint32_t>(i);
    }
    devices_.push_back({pid, index, -1, {}});
    return static_cast<std::uint32_t>(devices_.size() - 1);
}

std::uint32_t trace_profile::stream_of(std::uint32_t device, std::int64_t stream) {
    // Streams and devices are few: a linear search beats a hash here and keeps no extra state.
    for (std::size_t i = streams_.size(); i-- > 0;) {
        if (streams_[i].device == device && streams_[i].stream == stream) return static_cast<std::uint32_t>(i);
    }
    streams_.push_back({device, stream});
    return static_cast<std::uint32_t>(streams_.size() - 1);
}

std::uint32_t trace_profile::thread_of(std::int64_t pid, std::int64_t tid) {
    for (std::size_t i = threads_.size(); i-- > 0;) {
        if (threads_[i].first == pid && threads_[i].second == tid) return static_cast<std::uint32_t>(i);
    }
    threads_.emplace_back(pid, tid);
    return static_cast<std::uint32_t>(threads_.size() - 1);
}

void trace_profile::add_work(std::uint32_t stream, work_kind kind, std::int64_t start, std::int64_t end,
                             std::int64_t correlation, std::string_view name) {
    work_.push_back({start, end, correlation, intern(name), stream, kind});
}

void trace_profile::add(const trace_record& r) {
    const std::int64_t end = r.start_ns + r.duration_ns;
    switch (r.activity) {
        case trace_activity::kernel:
        case trace_activity::memcpy:
        case trace_activity::memset: {
            const std::int32_t index = r.device >= 0 ? r.device : static_cast<std::int32_t>(r.pid);
            const std::uint32_t d = device_of(r.pid, index);
            const work_kind kind = r.activity != trace_activity::kernel ? work_kind::memory
                                   : is_communication_kernel(r.name)    ? work_kind::communication
                                                                        : work_kind::compute;
            add_work(stream_of(d, r.stream >= 0 ? r.stream : r.tid), kind, r.start_ns, end, r.correlation, r.name);
            break;
        }
        case trace_activity::runtime:
            launches_.push_back({r.start_ns, end, r.correlation, r.pid});
            [[fallthrough]];
        case trace_activity::cpu_op:
        case trace_activity::annotation: {
            const std::uint32_t shapes =
                options_.group_by_input_shape ? intern(detail::compact_shapes(r.shapes)) : intern("");
            cpu_.push_back({r.start_ns, end, intern(r.name), shapes, thread_of(r.pid, r.tid)});
            break;
        }
        case trace_activity::ignored:
        case trace_activity::unknown: break;
    }
}

void trace_profile::finish(std::optional<std::int32_t> rank) {
    // stint-merge gives rank r's device d the pid 1000000 + 1000 r + d (tools/stint-merge).
    merged_ = false;
    for (const device_key& d : devices_) {
        if (d.pid >= 1000000) merged_ = true;
    }
    for (device_key& d : devices_) {
        if (merged_ && d.pid >= 1000000) {
            d.rank = static_cast<std::int32_t>((d.pid - 1000000) / 1000);
            d.index = static_cast<std::int32_t>((d.pid - 1000000) % 1000);
        } else if (rank) {
            d.rank = *rank;
        }
        d.label = d.rank >= 0 ? fmt::format("rank {} cuda:{}", d.rank, d.index) : fmt::format("cuda:{}", d.index);
    }
}

std::vector<std::int64_t> trace_profile::match_launches() const {
    // Correlation ids are unique within one process; in a merged job trace each rank has its own, so
    // the key is (rank, correlation): a rank's host process is pid r there.
    const auto key = [](std::int64_t rank, std::int64_t correlation) {
        return (static_cast<std::uint64_t>(rank) << 40) ^ static_cast<std::uint64_t>(correlation);
    };
    std::unordered_map<std::uint64_t, std::int64_t> by_key;
    by_key.reserve(launches_.size());
    for (std::size_t i = 0; i < launches_.size(); ++i) {
        if (launches_[i].correlation < 0) continue;
        by_key.emplace(key(merged_ ? launches_[i].pid : 0, launches_[i].correlation), static_cast<std::int64_t>(i));
    }
    std::vector<std::int64_t> out(work_.size(), -1);
    for (std::size_t i = 0; i < work_.size(); ++i) {
        if (work_[i].correlation < 0) continue;
        const device_key& d = devices_[streams_[work_[i].stream].device];
        const auto it = by_key.find(key(merged_ ? std::max(d.rank, 0) : 0, work_[i].correlation));
        if (it != by_key.end()) out[i] = it->second;
    }
    return out;
}

std::vector<device_breakdown> trace_profile::breakdown() const {
    std::vector<device_breakdown> out;
    const std::size_t n = devices_.size();
    std::vector<std::vector<detail::interval>> compute(n), comm(n), memory(n);
    for (const work& w : work_) {
        const std::uint32_t d = streams_[w.stream].device;
        auto& target = w.kind == work_kind::compute ? compute : w.kind == work_kind::communication ? comm : memory;
        target[d].emplace_back(w.start, w.end);
    }
    for (std::size_t d = 0; d < n; ++d) {
        device_breakdown b;
        b.device = devices_[d].label;
        b.rank = devices_[d].rank;
        b.index = devices_[d].index;
        detail::merge_intervals(compute[d]);
        detail::merge_intervals(comm[d]);
        detail::merge_intervals(memory[d]);
        std::vector<detail::interval> all;
        all.reserve(compute[d].size() + comm[d].size() + memory[d].size());
        all.insert(all.end(), compute[d].begin(), compute[d].end());
        all.insert(all.end(), comm[d].begin(), comm[d].end());
        all.insert(all.end(), memory[d].begin(), memory[d].end());
        detail::merge_intervals(all);
        if (all.empty()) continue;
        b.span_ns = all.back().second - all.front().first;
        b.compute_ns = detail::length_of(compute[d]);
        b.communication_ns = detail::length_of(comm[d]);
        b.memory_ns = detail::length_of(memory[d]);
        b.busy_ns = detail::length_of(all);
        b.idle_ns = b.span_ns - b.busy_ns;
        b.overlap_ns = detail::intersection_length(compute[d], comm[d]);
        out.push_back(std::move(b));
    }
    std::sort(out.begin(), out.end(), [](const device_breakdown& a, const device_breakdown& b) {
        return std::pair(a.rank, a.index) < std::pair(b.rank, b.index);
    });
    return out;
}

std::vector<stream_idle> trace_profile::idle_time() const {
    const std::vector<std::int64_t> launch_of = match_launches();
    std::vector<std::vector<std::size_t>> by_stream(streams_.size());
    for (std::size_t i = 0; i < work_.size(); ++i) by_stream[work_[i].stream].push_back(i);
    std::vector<stream_idle> out;
    for (std::size_t s = 0; s < streams_.size(); ++s) {
        auto& items = by_stream[s];
        if (items.empty()) continue;
        std::sort(items.begin(), items.end(), [&](std::size_t a, std::size_t b) {
            return std::pair(work_[a].start, work_[a].end) < std::pair(work_[b].start, work_[b].end);
        });
        stream_idle row;
        row.device = devices_[streams_[s].device].label;
        row.stream = streams_[s].stream;
        std::int64_t busy_until = work_[items.front()].end;
        for (std::size_t k = 1; k < items.size(); ++k) {
            const work& w = work_[items[k]];
            if (w.start > busy_until) {
                const std::int64_t gap = w.start - busy_until;
                ++row.gaps;
                row.idle_ns += gap;
                const std::int64_t l = launch_of[items[k]];
                if (l >= 0 && launches_[static_cast<std::size_t>(l)].start > busy_until) row.host_wait_ns += gap;
                else if (gap < options_.kernel_wait_ns) row.kernel_wait_ns += gap;
                else row.other_ns += gap;
            }
            busy_until = std::max(busy_until, w.end);
        }
        out.push_back(std::move(row));
    }
    return out;
}

std::vector<kernel_summary> trace_profile::kernels(std::size_t limit) const {
    // durations per (device, name) and per name; device n stands for "all".
    const std::size_t all = devices_.size();
    std::map<std::pair<std::size_t, std::uint32_t>, std::vector<std::int64_t>> groups;
    for (const work& w : work_) {
        if (w.kind == work_kind::memory) continue;
        const std::uint32_t d = streams_[w.stream].device;
        groups[{d, w.name}].push_back(w.end - w.start);
        groups[{all, w.name}].push_back(w.end - w.start);
    }
    std::vector<std::vector<kernel_summary>> per_device(all + 1);
    for (auto& [key, durations] : groups) {
        kernel_summary k;
        k.name = names_[key.second];
        k.device = key.first == all ? "all" : devices_[key.first].label;
        k.durations = summarize_durations(durations);
        per_device[key.first].push_back(std::move(k));
    }
    std::vector<std::size_t> order(all);
    for (std::size_t i = 0; i < all; ++i) order[i] = i;
    std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
        return std::pair(devices_[a].rank, devices_[a].index) < std::pair(devices_[b].rank, devices_[b].index);
    });
    order.push_back(all);
    std::vector<kernel_summary> out;
    for (std::size_t d : order) {
        auto& rows = per_device[d];
        std::sort(rows.begin(), rows.end(), [](const kernel_summary& a, const kernel_summary& b) {
            if (a.durations.total_ns != b.durations.total_ns) return a.durations.total_ns > b.durations.total_ns;
            return a.name < b.name;
        });
        for (std::size_t i = 0; i < rows.size() && i < limit; ++i) out.push_back(std::move(rows[i]));
    }
    return out;
}

launch_statistics trace_profile::launches() const {
    const std::vector<std::int64_t> launch_of = match_launches();
    launch_statistics s;
    s.short_threshold_ns = options_.short_kernel_ns;
    std::vector<std::int64_t> delays;
    for (std::size_t i = 0; i < work_.size(); ++i) {
        const work& w = work_[i];
        const std::int64_t duration = w.end - w.start;
        if (w.kind != work_kind::memory && duration < options_.short_kernel_ns) {
            ++s.short_kernels;
            s.short_kernels_ns += duration;
        }
        if (launch_of[i] < 0) {
            ++s.unmatched;
            continue;
        }
        const launch& l = launches_[static_cast<std::size_t>(launch_of[i])];
        ++s.matched;
        delays.push_back(w.start - l.end);
        if (w.kind != work_kind::memory && duration < l.end - l.start) ++s.launch_longer;
    }
    s.delay = summarize_durations(delays);
    return s;
}

std::vector<stream_queue> trace_profile::queue_lengths() const {
    const std::vector<std::int64_t> launch_of = match_launches();
    std::vector<std::vector<std::pair<std::int64_t, int>>> changes(streams_.size());
    for (std::size_t i = 0; i < work_.size(); ++i) {
        if (launch_of[i] < 0) continue;
        auto& c = changes[work_[i].stream];
        c.emplace_back(launches_[static_cast<std::size_t>(launch_of[i])].start, +1);
        c.emplace_back(work_[i].end, -1);
    }
    std::vector<stream_queue> out;
    for (std::size_t s = 0; s < streams_.size(); ++s) {
        auto& c = changes[s];
        if (c.empty()) continue;
        std::sort(c.begin(), c.end());  // at equal times -1 sorts before +1
        stream_queue q;
        q.device = devices_[streams_[s].device].label;
        q.stream = streams_[s].stream;
        std::int64_t length = 0;
        double weighted = 0;
        for (std::size_t i = 0; i < c.size(); ++i) {
            length += c[i].second;
            if (i + 1 < c.size() && c[i + 1].first == c[i].first) continue;
            if (!q.samples.empty()) {
                weighted += static_cast<double>(q.samples.back().length) *
                            static_cast<double>(c[i].first - q.samples.back().time_ns);
            }
            q.samples.push_back({c[i].first, length});
            q.max_length = std::max(q.max_length, length);
        }
        const std::int64_t span = q.samples.back().time_ns - q.samples.front().time_ns;
        q.mean_length = span > 0 ? weighted / static_cast<double>(span) : 0.0;
        out.push_back(std::move(q));
    }
    return out;
}

std::vector<thread_breakdown> trace_profile::threads() const {
    std::vector<std::vector<detail::interval>> spans(threads_.size());
    for (const cpu_span& c : cpu_) spans[c.thread].emplace_back(c.start, c.end);
    std::vector<thread_breakdown> out;
    for (std::size_t t = 0; t < threads_.size(); ++t) {
        auto& v = spans[t];
        if (v.empty()) continue;
        detail::merge_intervals(v);
        thread_breakdown b;
        b.pid = threads_[t].first;
        b.tid = threads_[t].second;
        b.span_ns = v.back().second - v.front().first;
        b.busy_ns = detail::length_of(v);
        b.idle_ns = b.span_ns - b.busy_ns;
        out.push_back(b);
    }
    return out;
}

std::vector<op_stat> trace_profile::op_stats() const {
    // Self time: on each thread, events in (start, longest first) order nest as a stack; an event inside
    // the one on top is its direct child, whose duration leaves the parent's self time.
    std::vector<std::int64_t> self(cpu_.size());
    std::vector<std::size_t> order(cpu_.size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
        const cpu_span& x = cpu_[a];
        const cpu_span& y = cpu_[b];
        if (x.thread != y.thread) return x.thread < y.thread;
        if (x.start != y.start) return x.start < y.start;
        if (x.end != y.end) return x.end > y.end;
        return a < b;
    });
    std::vector<std::size_t> stack;
    for (std::size_t k = 0; k < order.size(); ++k) {
        const std::size_t i = order[k];
        const cpu_span& e = cpu_[i];
        self[i] = e.end - e.start;
        while (!stack.empty() &&
               (cpu_[stack.back()].thread != e.thread || e.start >= cpu_[stack.back()].end ||
                e.end > cpu_[stack.back()].end)) {
            stack.pop_back();
        }
        if (!stack.empty()) self[stack.back()] -= e.end - e.start;
        stack.push_back(i);
    }
    struct totals {
        std::uint64_t count = 0;
        std::int64_t total = 0;
        std::int64_t self = 0;
        bool device = false;
    };
    // Device work of a name also used on a CPU thread is kept apart (its own row, on_device).
    std::map<std::tuple<std::uint32_t, std::uint32_t, bool>, totals> groups;
    for (std::size_t i = 0; i < cpu_.size(); ++i) {
        totals& t = groups[{cpu_[i].name, cpu_[i].shapes, false}];
        ++t.count;
        t.total += cpu_[i].end - cpu_[i].start;
        t.self += self[i];
    }
    for (const work& w : work_) {
        totals& t = groups[{w.name, 0U, true}];
        ++t.count;
        t.total += w.end - w.start;
        t.self += w.end - w.start;
        t.device = true;
    }
    std::vector<op_stat> out;
    out.reserve(groups.size());
    for (const auto& [key, t] : groups) {
        op_stat s;
        s.name = names_[std::get<0>(key)];
        s.shapes = t.device ? std::string() : names_[std::get<1>(key)];
        s.count = t.count;
        s.total_ns = t.total;
        s.self_ns = t.self;
        s.on_device = t.device;
        out.push_back(std::move(s));
    }
    std::sort(out.begin(), out.end(), [](const op_stat& a, const op_stat& b) {
        if (a.self_ns != b.self_ns) return a.self_ns > b.self_ns;
        if (a.name != b.name) return a.name < b.name;
        return a.shapes < b.shapes;
    });
    return out;
}

}  // namespace stint
