// Trace analysis (analysis/trace_reader.hpp, trace_analysis.hpp, trace_diff.hpp) on generated traces
// whose answers a simple reference computes independently: time is cut into whole microseconds and
// every interval marks the ticks it covers, so unions, intersections and gaps are counts of marked
// ticks, with no sorting or merging shared with the code under test.

#include <doctest/doctest.h>

#include <algorithm>  // std::sort, std::max, std::min
#include <cstdio>     // std::remove
#include <filesystem> // std::filesystem
#include <fstream>    // std::ofstream
#include <map>        // std::map
#include <random>     // std::mt19937
#include <set>        // std::set
#include <string>     // std::string
#include <tuple>      // std::tuple
#include <vector>     // std::vector

#include <fmt/format.h>
#include <zlib.h>

#include "stint/analysis/trace_analysis.hpp"
#include "stint/analysis/trace_diff.hpp"
#include "stint/analysis/trace_reader.hpp"
#include "stint/analysis/event_tree.hpp"
#include "stint/export/chrome_trace.hpp"
#include "stint/export/perfetto_trace.hpp"

namespace {

struct gen_kernel {
    int rank, device, stream;
    std::int64_t start, dur;  // us
    std::string name;
    std::string cat;  // kernel, gpu_memcpy, gpu_memset
    std::int64_t correlation;
    std::int64_t launch_start, launch_dur;  // -1: no launch in the trace
};

struct gen_op {
    int pid, tid;
    std::int64_t start, dur;
    std::string name;
    std::string shapes;
};

struct gen_trace {
    std::vector<gen_kernel> kernels;
    std::vector<gen_op> ops;
    bool merged = false;  // stint-merge's pids for ranks
    std::string json() const {
        std::string out = "{\"schemaVersion\": 1, \"traceEvents\": [\n";
        bool first = true;
        const auto add = [&](const std::string& e) {
            out += first ? "  " : ",\n  ";
            out += e;
            first = false;
        };
        for (const gen_kernel& k : kernels) {
            const int pid = merged ? 1000000 + 1000 * k.rank + k.device : k.device;
            add(fmt::format(R"({{"ph": "X", "cat": "{}", "name": "{}", "pid": {}, "tid": {}, "ts": {}, "dur": {}, )"
                            R"("args": {{"device": {}, "stream": {}, "correlation": {}}}}})",
                            k.cat, k.name, pid, k.stream, k.start, k.dur, k.device, k.stream, k.correlation));
            if (k.launch_start >= 0) {
                add(fmt::format(R"({{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": {}, "tid": 1, )"
                                R"("ts": {}, "dur": {}, "args": {{"correlation": {}}}}})",
                                merged ? k.rank : 99, k.launch_start, k.launch_dur, k.correlation));
            }
        }
        for (const gen_op& o : ops) {
            add(fmt::format(R"({{"ph": "X", "cat": "cpu_op", "name": "{}", "pid": {}, "tid": {}, "ts": {}, "dur": {}, )"
                            R"("args": {{"Input Dims": {}}}}})",
                            o.name, o.pid, o.tid, o.start, o.dur, o.shapes.empty() ? "[]" : o.shapes));
        }
        return out + "\n]}\n";
    }
};

constexpr const char* kernel_names[] = {"sgemm_128x64", "elementwise_add", "ncclKernel_AllReduce_RING_LL_Sum_float",
                                        "softmax_fwd", "ncclDevKernel_AllGather"};

// Kernels on 2 ranks x 2 devices x 2 streams that overlap across streams; each stream's work is in
// order, as a CUDA stream runs it. Launches come before their work, some with none.
gen_trace make_device_trace(unsigned seed, bool merged) {
    std::mt19937 rng(seed);
    gen_trace t;
    t.merged = merged;
    std::int64_t correlation = 1;
    const int ranks = merged ? 2 : 1;
    for (int rank = 0; rank < ranks; ++rank) {
        for (int device = 0; device < 2; ++device) {
            for (int stream = 7; stream <= 8; ++stream) {
                std::int64_t at = static_cast<std::int64_t>(rng() % 50);
                for (int i = 0; i < 40; ++i) {
                    at += static_cast<std::int64_t>(rng() % 30);  // 0: back to back
                    gen_kernel k;
                    k.rank = rank;
                    k.device = device;
                    k.stream = stream;
                    k.start = at;
                    k.dur = 1 + static_cast<std::int64_t>(rng() % 40);
                    const unsigned pick = rng() % 7;
                    k.cat = pick == 5 ? "gpu_memcpy" : pick == 6 ? "gpu_memset" : "kernel";
                    k.name = pick >= 5 ? (pick == 5 ? "Memcpy HtoD (Pageable -> Device)" : "Memset (Device)")
                                       : kernel_names[pick];
                    k.correlation = correlation++;
                    if (rng() % 5 == 0) {
                        k.launch_start = -1;
                    } else {
                        k.launch_start = std::max<std::int64_t>(0, at - static_cast<std::int64_t>(rng() % 60));
                        k.launch_dur = 1 + static_cast<std::int64_t>(rng() % 8);
                    }
                    t.kernels.push_back(k);
                    at += k.dur;
                }
            }
        }
    }
    return t;
}

// Properly nested CPU ops on 3 threads: each op's children fit inside it with gaps.
void add_nested(std::mt19937& rng, gen_trace& t, int tid, std::int64_t start, std::int64_t dur, int depth) {
    static constexpr const char* names[] = {"aten::linear", "aten::mm", "aten::add", "aten::relu", "aten::empty"};
    static constexpr const char* shapes[] = {"[[2, 3], [3, 4]]", "[[8]]", "[]"};
    gen_op op{1, tid, start, dur, names[rng() % 5], shapes[rng() % 3]};
    t.ops.push_back(op);
    if (depth == 0 || dur < 6) return;
    std::int64_t at = start + static_cast<std::int64_t>(rng() % 3);
    while (true) {
        const std::int64_t child = 1 + static_cast<std::int64_t>(rng() % static_cast<unsigned>(dur / 2));
        if (at + child > start + dur) break;
        add_nested(rng, t, tid, at, child, depth - 1);
        at += child + static_cast<std::int64_t>(rng() % 4);
    }
}

gen_trace make_cpu_trace(unsigned seed) {
    std::mt19937 rng(seed);
    gen_trace t;
    for (int tid = 10; tid < 13; ++tid) {
        std::int64_t at = 0;
        for (int i = 0; i < 12; ++i) {
            at += static_cast<std::int64_t>(rng() % 20);
            const std::int64_t dur = 5 + static_cast<std::int64_t>(rng() % 60);
            add_nested(rng, t, tid, at, dur, 3);
            at += dur;
        }
    }
    return t;
}

// --- the reference: ticks of whole microseconds ---------------------------------------------------------

using ticks = std::vector<bool>;
std::int64_t count(const ticks& t) {
    std::int64_t n = 0;
    for (bool b : t) n += b ? 1 : 0;
    return n;
}
void mark(ticks& t, std::int64_t start, std::int64_t dur) {
    if (static_cast<std::size_t>(start + dur) > t.size()) t.resize(static_cast<std::size_t>(start + dur));
    for (std::int64_t i = start; i < start + dur; ++i) t[static_cast<std::size_t>(i)] = true;
}
bool at(const ticks& t, std::size_t i) { return i < t.size() && t[i]; }

struct ref_device {
    ticks compute, comm, memory;
    std::int64_t first = -1, last = 0;
};

bool is_comm_name(const std::string& n) { return n.find("nccl") != std::string::npos; }

std::map<std::pair<int, int>, ref_device> reference_breakdown(const gen_trace& t) {
    std::map<std::pair<int, int>, ref_device> out;
    for (const gen_kernel& k : t.kernels) {
        ref_device& d = out[{t.merged ? k.rank : -1, k.device}];
        ticks& which = k.cat != "kernel" ? d.memory : is_comm_name(k.name) ? d.comm : d.compute;
        mark(which, k.start, k.dur);
        d.first = d.first < 0 ? k.start : std::min(d.first, k.start);
        d.last = std::max(d.last, k.start + k.dur);
    }
    return out;
}

const stint::device_breakdown& find_device(const std::vector<stint::device_breakdown>& v, int rank, int index) {
    for (const auto& d : v) {
        if (d.rank == rank && d.index == index) return d;
    }
    FAIL("no device ", rank, " ", index);
    return v.front();
}

// Within 0.1 % (and exact here, since every time is whole microseconds).
void check_close(std::int64_t got_ns, std::int64_t want_us) {
    CHECK(static_cast<double>(got_ns) == doctest::Approx(static_cast<double>(want_us) * 1e3).epsilon(0.001));
}

std::string temp_path(const std::string& name) {
    return (std::filesystem::temp_directory_path() / fmt::format("stint_analyze_{}_{}", ::getpid(), name)).string();
}

}  // namespace

TEST_CASE("the temporal breakdown matches a tick-counting reference on overlapping streams, devices and ranks") {
    for (const bool merged : {false, true}) {
        for (unsigned seed = 1; seed <= 5; ++seed) {
            CAPTURE(merged);
            CAPTURE(seed);
            const gen_trace t = make_device_trace(seed, merged);
            const auto p = stint::trace_profile::from_text(t.json());
            const auto got = p.breakdown();
            const auto want = reference_breakdown(t);
            REQUIRE(got.size() == want.size());
            for (const auto& [key, d] : want) {
                const auto& b = find_device(got, key.first, key.second);
                std::int64_t busy = 0, overlap = 0;
                const std::size_t n = static_cast<std::size_t>(d.last);
                for (std::size_t i = 0; i < n; ++i) {
                    busy += (at(d.compute, i) || at(d.comm, i) || at(d.memory, i)) ? 1 : 0;
                    overlap += (at(d.compute, i) && at(d.comm, i)) ? 1 : 0;
                }
                check_close(b.span_ns, d.last - d.first);
                check_close(b.compute_ns, count(d.compute));
                check_close(b.communication_ns, count(d.comm));
                check_close(b.memory_ns, count(d.memory));
                check_close(b.busy_ns, busy);
                check_close(b.idle_ns, d.last - d.first - busy);
                check_close(b.overlap_ns, overlap);
                CHECK(b.device == (merged ? fmt::format("rank {} cuda:{}", key.first, key.second)
                                          : fmt::format("cuda:{}", key.second)));
            }
        }
    }
}

TEST_CASE("idle time by cause, kernels, launches and queue lengths match the reference") {
    const gen_trace t = make_device_trace(11, true);
    stint::trace_analysis_options options;
    options.kernel_wait_ns = 3'000;  // 3 us: some gaps are kernel waits
    options.short_kernel_ns = 10'000;
    const auto p = stint::trace_profile::from_text(t.json(), options);

    SUBCASE("idle by cause per stream") {
        const auto streams = p.idle_time();
        for (const auto& s : streams) {
            CAPTURE(s.device);
            CAPTURE(s.stream);
            ticks busy;
            std::int64_t first = -1, last = 0;
            std::map<std::int64_t, const gen_kernel*> starting;  // start -> the work starting there
            for (const gen_kernel& k : t.kernels) {
                if (fmt::format("rank {} cuda:{}", k.rank, k.device) != s.device || k.stream != s.stream) continue;
                mark(busy, k.start, k.dur);
                first = first < 0 ? k.start : std::min(first, k.start);
                last = std::max(last, k.start + k.dur);
                starting.emplace(k.start, &k);
            }
            std::int64_t gaps = 0, idle = 0, host = 0, kernel = 0, other = 0;
            for (std::int64_t i = first; i < last;) {
                if (at(busy, static_cast<std::size_t>(i))) {
                    ++i;
                    continue;
                }
                std::int64_t j = i;
                while (!at(busy, static_cast<std::size_t>(j))) ++j;
                const gen_kernel& next = *starting.at(j);
                ++gaps;
                idle += j - i;
                if (next.launch_start >= 0 && next.launch_start > i) host += j - i;
                else if ((j - i) * 1000 < options.kernel_wait_ns) kernel += j - i;
                else other += j - i;
                i = j;
            }
            CHECK(s.gaps == static_cast<std::uint64_t>(gaps));
            check_close(s.idle_ns, idle);
            check_close(s.host_wait_ns, host);
            check_close(s.kernel_wait_ns, kernel);
            check_close(s.other_ns, other);
        }
        CHECK(streams.size() == 8);
    }

    SUBCASE("kernel durations per device and overall") {
        const auto rows = p.kernels(100);
        std::map<std::pair<std::string, std::string>, std::vector<std::int64_t>> want;
        for (const gen_kernel& k : t.kernels) {
            if (k.cat != "kernel") continue;
            want[{fmt::format("rank {} cuda:{}", k.rank, k.device), k.name}].push_back(k.dur);
            want[{"all", k.name}].push_back(k.dur);
        }
        REQUIRE(rows.size() == want.size());
        for (const auto& r : rows) {
            auto v = want.at({r.device, r.name});
            std::sort(v.begin(), v.end());
            const auto nth = [&](std::size_t p) { return v[(p * v.size() + 99) / 100 - 1]; };
            std::int64_t total = 0;
            for (auto d : v) total += d;
            CHECK(r.durations.count == v.size());
            check_close(r.durations.total_ns, total);
            check_close(r.durations.min_ns, v.front());
            check_close(r.durations.p50_ns, nth(50));
            check_close(r.durations.p90_ns, nth(90));
            check_close(r.durations.p99_ns, nth(99));
            check_close(r.durations.max_ns, v.back());
        }
        // Per device, most total time first; "all" comes last.
        CHECK(rows.back().device == "all");
    }

    SUBCASE("launch statistics") {
        const auto s = p.launches();
        std::vector<std::int64_t> delays;
        std::uint64_t unmatched = 0, short_kernels = 0, longer = 0;
        std::int64_t short_total = 0;
        for (const gen_kernel& k : t.kernels) {
            if (k.cat == "kernel" && k.dur < 10) {
                ++short_kernels;
                short_total += k.dur;
            }
            if (k.launch_start < 0) {
                ++unmatched;
                continue;
            }
            delays.push_back(k.start - (k.launch_start + k.launch_dur));
            if (k.cat == "kernel" && k.dur < k.launch_dur) ++longer;
        }
        std::sort(delays.begin(), delays.end());
        CHECK(s.unmatched == unmatched);
        CHECK(s.matched == delays.size());
        CHECK(s.short_kernels == short_kernels);
        check_close(s.short_kernels_ns, short_total);
        CHECK(s.launch_longer == longer);
        check_close(s.delay.min_ns, delays.front());
        check_close(s.delay.p50_ns, delays[(50 * delays.size() + 99) / 100 - 1]);
        check_close(s.delay.max_ns, delays.back());
    }

    SUBCASE("queue length per stream") {
        const auto queues = p.queue_lengths();
        REQUIRE(queues.size() == 8);
        for (const auto& q : queues) {
            std::int64_t max_seen = 0;
            for (const auto& sample : q.samples) {
                // Launched at or before the sample, not yet finished at it.
                std::int64_t length = 0;
                for (const gen_kernel& k : t.kernels) {
                    if (fmt::format("rank {} cuda:{}", k.rank, k.device) != q.device || k.stream != q.stream) continue;
                    if (k.launch_start < 0) continue;
                    if (k.launch_start * 1000 <= sample.time_ns) ++length;
                    if ((k.start + k.dur) * 1000 <= sample.time_ns) --length;
                }
                CHECK(sample.length == length);
                max_seen = std::max(max_seen, length);
            }
            CHECK(q.max_length == max_seen);
            CHECK(q.samples.back().length == 0);
        }
    }
}

TEST_CASE("CPU-only traces: thread busy and idle time, and self times of nested ops") {
    const gen_trace t = make_cpu_trace(3);
    const auto p = stint::trace_profile::from_text(t.json());
    CHECK_FALSE(p.has_device_work());
    const auto threads = p.threads();
    REQUIRE(threads.size() == 3);
    for (const auto& th : threads) {
        ticks busy;
        std::int64_t first = -1, last = 0;
        for (const gen_op& o : t.ops) {
            if (o.tid != th.tid) continue;
            mark(busy, o.start, o.dur);
            first = first < 0 ? o.start : std::min(first, o.start);
            last = std::max(last, o.start + o.dur);
        }
        check_close(th.span_ns, last - first);
        check_close(th.busy_ns, count(busy));
        check_close(th.idle_ns, last - first - count(busy));
    }
    // Self time: duration minus the direct children's (ops inside it with no op between).
    const auto contains = [](const gen_op& a, const gen_op& b) {
        return &a != &b && a.tid == b.tid && b.start >= a.start && b.start + b.dur <= a.start + a.dur &&
               (b.start > a.start || b.dur < a.dur);
    };
    std::map<std::string, std::tuple<std::uint64_t, std::int64_t, std::int64_t>> want;
    for (const gen_op& a : t.ops) {
        std::int64_t self = a.dur;
        for (const gen_op& b : t.ops) {
            if (!contains(a, b)) continue;
            bool direct = true;
            for (const gen_op& c : t.ops) direct = direct && !(contains(a, c) && contains(c, b));
            if (direct) self -= b.dur;
        }
        auto& [n, total, self_total] = want[a.name];
        ++n;
        total += a.dur;
        self_total += self;
    }
    const auto ops = p.op_stats();
    REQUIRE(ops.size() == want.size());
    for (const auto& o : ops) {
        const auto& [n, total, self] = want.at(o.name);
        CHECK(o.count == n);
        check_close(o.total_ns, total);
        check_close(o.self_ns, self);
    }
    for (std::size_t i = 1; i < ops.size(); ++i) CHECK(ops[i - 1].self_ns >= ops[i].self_ns);
}

TEST_CASE("diff of two runs: per op and shape, most changed first, noise left out, the gate") {
    gen_trace a = make_cpu_trace(5);
    gen_trace b = make_cpu_trace(5);
    // B: aten::mm takes 50 % longer where it is a leaf; one new op.
    for (gen_op& o : b.ops) {
        if (o.name == "aten::mm") o.dur += o.dur / 2;
    }
    // Keep B well nested: put the slowed ops on a thread of their own.
    for (gen_op& o : b.ops) {
        if (o.name == "aten::mm") o.tid = 50;
    }
    for (gen_op& o : a.ops) {
        if (o.name == "aten::mm") o.tid = 50;
    }
    b.ops.push_back({1, 60, 0, 7, "aten::new_op", "[]"});

    for (const bool by_shape : {false, true}) {
        CAPTURE(by_shape);
        stint::trace_analysis_options options;
        options.group_by_input_shape = by_shape;
        const auto pa = stint::trace_profile::from_text(a.json(), options);
        const auto pb = stint::trace_profile::from_text(b.json(), options);
        const auto rows = stint::diff_ops(pa.op_stats(), pb.op_stats());
        std::map<std::pair<std::string, std::string>, std::tuple<std::uint64_t, std::uint64_t, std::int64_t, std::int64_t>> want;
        const auto shape_key = [&](const gen_op& o) {
            std::string s;
            for (char c : o.shapes) {
                if (c != ' ') s.push_back(c);
            }
            return by_shape ? s : std::string();
        };
        for (const gen_op& o : a.ops) {
            auto& w = want[{o.name, shape_key(o)}];
            ++std::get<0>(w);
            std::get<2>(w) += o.dur;
        }
        for (const gen_op& o : b.ops) {
            auto& w = want[{o.name, shape_key(o)}];
            ++std::get<1>(w);
            std::get<3>(w) += o.dur;
        }
        REQUIRE(rows.size() == want.size());
        for (const auto& r : rows) {
            const auto& [ca, cb, ta, tb] = want.at({r.name, r.shapes});
            CHECK(r.count_a == ca);
            CHECK(r.count_b == cb);
            check_close(r.total_a_ns, ta);
            check_close(r.total_b_ns, tb);
        }
        for (std::size_t i = 1; i < rows.size(); ++i) {
            CHECK(std::abs(rows[i - 1].change_ns()) >= std::abs(rows[i].change_ns()));
        }
        CHECK(rows.front().name == "aten::mm");
        // The noise threshold leaves out the unchanged ops; the gate names what slowed past 1.2x.
        const auto changed = stint::diff_ops(pa.op_stats(), pb.op_stats(), {.noise_ns = 1});
        std::set<std::string> names;
        for (const auto& r : changed) names.insert(r.name);
        CHECK(names.count("aten::mm") == 1);
        CHECK(names.count("aten::new_op") == 1);
        CHECK(names.count("aten::relu") == 0);
        const auto slowed = stint::slowed_ops(changed, 1.2);
        std::set<std::string> slow_names;
        for (const auto& r : slowed) slow_names.insert(r.name);
        CHECK(slow_names == std::set<std::string>{"aten::mm", "aten::new_op"});
        CHECK(stint::slowed_ops(changed, 2.0).size() == 1);  // only the new op
    }
}

TEST_CASE("malformed traces give an error with the byte offset, or are skipped and counted, never a crash") {
    const std::string good = make_device_trace(2, false).json();
    const std::size_t good_events = [&] {
        std::size_t n = 0;
        stint::read_chrome_trace_text(good, [&](const stint::trace_record&) { ++n; });
        return n;
    }();
    CHECK(good_events > 100);

    SUBCASE("truncated JSON: every cut is an error at or before the cut") {
        for (std::size_t cut = 0; cut < good.size() - 2; cut += 97) {
            CAPTURE(cut);
            try {
                stint::read_chrome_trace_text(std::string_view(good).substr(0, cut), [](const stint::trace_record&) {});
                FAIL("a truncated trace read without an error");
            } catch (const stint::trace_read_error& e) {
                CHECK(e.offset() <= cut);
                CHECK(std::string(e.what()).find(fmt::format("at byte {}", e.offset())) != std::string::npos);
            }
        }
    }
    SUBCASE("syntax errors name their byte") {
        const std::string bad = R"({"traceEvents": [{"ph": "X", "ts": 1 "dur": 2}]})";
        try {
            stint::read_chrome_trace_text(bad, [](const stint::trace_record&) {});
            FAIL("no error");
        } catch (const stint::trace_read_error& e) {
            CHECK(e.offset() == 37);
            CHECK(std::string(e.what()) == "stint: malformed trace at byte 37: expected ',' or '}' in an event");
        }
    }
    SUBCASE("events missing dur, unknown categories and non-UTF-8 names are counted") {
        const std::string text = "{\"traceEvents\": ["
                                 R"({"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 1},)"
                                 R"({"ph": "X", "cat": "mystery", "name": "m", "pid": 0, "tid": 7, "ts": 1, "dur": 3},)"
                                 "{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"bad\xff\xfe name\", \"pid\": 1, "
                                 "\"tid\": 1, \"ts\": 1, \"dur\": 3},"
                                 R"({"ph": "i", "cat": "cpu_instant_event", "name": "i", "pid": 1, "tid": 1, "ts": 1},)"
                                 R"({"ph": "X", "cat": "cpu_op", "name": "esc\u00e9\ud83d\ude00", "pid": 1, "tid": 1, "ts": 5, "dur": 1})"
                                 "]}";
        const auto p = stint::trace_profile::from_text(text);
        CHECK(p.read_stats().missing_duration == 1);
        CHECK(p.read_stats().unknown_category == 1);
        CHECK(p.read_stats().invalid_utf8_names == 1);
        CHECK(p.read_stats().other_phases == 1);
        CHECK(p.read_stats().events == 3);
        const auto ops = p.op_stats();
        REQUIRE(ops.size() == 2);
        CHECK((ops[0].name == "esc\xc3\xa9\xf0\x9f\x98\x80" || ops[1].name == "esc\xc3\xa9\xf0\x9f\x98\x80"));
        CHECK_FALSE(p.has_device_work());
    }
    SUBCASE("names with a surrogate, an overlong form or a code point past U+10FFFF are not UTF-8") {
        std::string text = "{\"traceEvents\": [";
        for (const char* bytes : {"\xed\xa0\x80", "\xe0\x80\x80", "\xf4\x90\x80\x80", "\xf0\x9f\x98\x80"}) {
            text += std::string("{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"n") + bytes +
                    "\", \"pid\": 1, \"tid\": 1, \"ts\": 1, \"dur\": 3},";
        }
        text.back() = ']';
        text += "}";
        const auto p = stint::trace_profile::from_text(text);
        CHECK(p.read_stats().events == 4);
        CHECK(p.read_stats().invalid_utf8_names == 3);  // the emoji (F0 9F 98 80) is well formed
    }
    SUBCASE("\\u escapes: pairs joined, lone halves U+FFFD, an escape after a lone half kept") {
        const std::string fffd = "\xef\xbf\xbd";
        const std::pair<const char*, std::string> cases[] = {
            {R"(a\ud83d\ude00)", "a\xf0\x9f\x98\x80"},
            {R"(a\ud800\n)", "a" + fffd + "\n"},
            {R"(a\ud800\u0041)", "a" + fffd + "A"},
            {R"(a\ud800\ud83d\ude00)", "a" + fffd + "\xf0\x9f\x98\x80"},
            {R"(a\ude00b)", "a" + fffd + "b"},
            {R"(a\ud800)", "a" + fffd},
        };
        for (const auto& c : cases) {
            const char* escaped = c.first;  // not a structured binding: clang 14's CAPTURE cannot name one
            const std::string& expected = c.second;
            CAPTURE(escaped);
            const std::string text = std::string(R"({"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": ")") + escaped +
                                     R"(", "pid": 1, "tid": 1, "ts": 1, "dur": 3}]})";
            const auto p = stint::trace_profile::from_text(text);
            const auto ops = p.op_stats();
            REQUIRE(ops.size() == 1);
            CHECK(ops[0].name == expected);
        }
    }
    SUBCASE("gzip, whole and cut short") {
        const std::string path = temp_path("t.json.gz");
        gzFile f = gzopen(path.c_str(), "wb");
        REQUIRE(f != nullptr);
        REQUIRE(gzwrite(f, good.data(), static_cast<unsigned>(good.size())) == static_cast<int>(good.size()));
        gzclose(f);
        const auto whole = stint::trace_profile::from_file(path);
        CHECK(whole.read_stats().events == good_events);
        CHECK(whole.read_stats().bytes == good.size());
        const auto size = std::filesystem::file_size(path);
        std::filesystem::resize_file(path, size / 2);
        try {
            (void)stint::trace_profile::from_file(path);
            FAIL("a truncated gzip file read without an error");
        } catch (const stint::trace_read_error& e) {
            CHECK(std::string(e.what()).find("at byte") != std::string::npos);
        }
        std::filesystem::remove(path);
    }
    SUBCASE("a missing file") {
        CHECK_THROWS_AS((void)stint::trace_profile::from_file(temp_path("absent.json")), std::system_error);
    }
}

namespace {

stint::device_args correlation_only(std::uint32_t correlation) {
    stint::device_args a;
    a.correlation = correlation;
    return a;
}

// A session: aten::mm launches a GEMM on stream 7 (6..26 us) and c10d::allreduce_ an NCCL kernel on
// stream 8 (16..36 us), then a copy on stream 7 (40..45 us) launched at 38 us. Device 0's span is
// 6..45 = 39 us: computation 20, communication 20, memory 5, busy 35, idle 4, overlap 10 (50 %).
stint::event_list session_events() {
    using stint::event_kind;
    stint::detail::event_list_builder b;
    const auto t = b.add_thread({.os_tid = 7, .name = "main"});
    const auto step = b.add(event_kind::user_annotation, "ProfilerStep#1", t, 0, 50'000);
    const auto mm = b.add(event_kind::cpu_op, "aten::mm", t, 1'000, 10'000);
    const auto ar = b.add(event_kind::cpu_op, "c10d::allreduce_", t, 11'000, 15'000);
    b.begin_run();
    b.set_launcher(b.add_api_call(event_kind::cuda_runtime, "cudaLaunchKernel", t, 2'000, 4'000, correlation_only(1)), mm);
    b.set_launcher(b.add_api_call(event_kind::cuda_runtime, "cudaLaunchKernel", t, 12'000, 13'000, correlation_only(2)), ar);
    b.set_launcher(b.add_api_call(event_kind::cuda_runtime, "cudaMemcpyAsync", t, 38'000, 39'000, correlation_only(3)), step);
    const auto s7 = b.device_track({stint::device_type::cuda, 0}, 7);
    const auto s8 = b.device_track({stint::device_type::cuda, 0}, 8);
    b.set_launcher(b.add_device_event(event_kind::kernel, "sgemm_128x64", s7, 6'000, 26'000, correlation_only(1)), mm);
    b.set_launcher(b.add_device_event(event_kind::kernel, "ncclKernel_AllReduce_RING", s8, 16'000, 36'000, correlation_only(2)), ar);
    b.set_launcher(b.add_device_event(event_kind::gpu_memcpy, "Memcpy DtoH (Device -> Pageable)", s7, 40'000, 45'000,
                                      correlation_only(3)),
                   step);
    stint::device_report report;
    report.status = "active";
    b.set_device_report(std::move(report));
    return std::move(b).build();
}

struct text_sink {
    std::string text;
    void write(std::string_view bytes) { text.append(bytes); }
};

}  // namespace

TEST_CASE("a session's events, and stint's Chrome trace of them, give the same analyses") {
    const stint::event_list events = session_events();
    text_sink sink;
    stint::detail::write_chrome_trace(sink, events, {.pid = 4242, .truncated_names = 0, .metadata_json = {}});
    const auto from_session = stint::trace_profile::from_events(events);
    const auto from_trace = stint::trace_profile::from_text(sink.text);
    CHECK(from_trace.read_stats().missing_duration == 0);
    CHECK(from_trace.read_stats().unknown_category == 0);
    for (const auto* p : {&from_session, &from_trace}) {
        const auto b = p->breakdown();
        REQUIRE(b.size() == 1);
        CHECK(b[0].index == 0);
        check_close(b[0].span_ns, 39);
        check_close(b[0].compute_ns, 20);
        check_close(b[0].communication_ns, 20);
        check_close(b[0].memory_ns, 5);
        check_close(b[0].idle_ns, 4);
        CHECK(b[0].overlap_percent() == doctest::Approx(50));
        // Stream 7's gap 26..40 us: the copy's launch (38 us) came after it began: host wait.
        const auto idle = p->idle_time();
        REQUIRE(idle.size() == 2);
        for (const auto& s : idle) {
            if (s.stream != 7) continue;
            check_close(s.host_wait_ns, 14);
            CHECK(s.gaps == 1);
        }
        const auto l = p->launches();
        CHECK(l.matched == 3);
        CHECK(l.unmatched == 0);
        check_close(l.delay.min_ns, 1);   // the copy: 40 - 39
        check_close(l.delay.max_ns, 3);   // the NCCL kernel: 16 - 13
    }
    const auto ops_session = from_session.op_stats();
    const auto ops_trace = from_trace.op_stats();
    const auto diff = stint::diff_ops(ops_session, ops_trace, {.noise_ns = 1});
    CHECK(diff.empty());
    bool mm_seen = false;
    for (const auto& o : ops_session) {
        if (o.name != "aten::mm") continue;
        mm_seen = true;
        check_close(o.self_ns, 7);  // 9 us minus its 2 us launch
    }
    CHECK(mm_seen);
}

TEST_CASE("epoch timestamps with nanosecond decimals read exactly, as Kineto writes them") {
    const std::string text = R"({"traceEvents": [
      {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 1695835535123456.789, "dur": 1.5, "args": {"device": 0}},
      {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 1695835535123460, "dur": 2.0004, "args": {"device": 0}},
      {"ph": "X", "cat": "cpu_op", "name": "op", "pid": "1", "tid": "stream 3", "ts": 1.5e3, "dur": 2}]})";
    std::vector<stint::trace_record> seen;
    std::vector<std::string> names;
    stint::read_chrome_trace_text(text, [&](const stint::trace_record& r) {
        seen.push_back(r);
        names.emplace_back(r.name);
    });
    REQUIRE(seen.size() == 3);
    CHECK(seen[0].start_ns == 1695835535123456789);
    CHECK(seen[0].duration_ns == 1500);
    CHECK(seen[1].start_ns == 1695835535123460000);
    CHECK(seen[1].duration_ns == 2000);
    CHECK(seen[2].start_ns == 1'500'000);
    CHECK(seen[2].pid == 1);
    CHECK(seen[2].tid == 3);
    CHECK(seen[0].activity == stint::trace_activity::kernel);
    CHECK(seen[2].activity == stint::trace_activity::cpu_op);
    const auto b = stint::trace_profile::from_text(text).breakdown();
    REQUIRE(b.size() == 1);
    CHECK(b[0].span_ns == 1695835535123462000 - 1695835535123456789);
    CHECK(b[0].busy_ns == 3500);
}

TEST_CASE("stint's Perfetto trace of a session reads: the same breakdown, idle gaps and op totals") {
    const stint::event_list events = session_events();
    text_sink sink;
    stint::detail::perfetto_writer(sink, events, {.pid = 4242}).write();
    REQUIRE(!sink.text.empty());
    const auto from_session = stint::trace_profile::from_events(events);
    const auto from_perfetto = stint::trace_profile::from_perfetto_bytes(sink.text);
    CHECK(from_perfetto.read_stats().missing_duration == 0);
    CHECK(from_perfetto.read_stats().unknown_category == 0);
    const auto b = from_perfetto.breakdown();
    REQUIRE(b.size() == 1);
    CHECK(b[0].device == "cuda:0");
    check_close(b[0].span_ns, 39);
    check_close(b[0].compute_ns, 20);
    check_close(b[0].communication_ns, 20);
    check_close(b[0].memory_ns, 5);
    check_close(b[0].idle_ns, 4);
    const auto idle = from_perfetto.idle_time();
    REQUIRE(idle.size() == 2);
    CHECK(idle[0].gaps + idle[1].gaps == 1);
    // No correlation ids in a Perfetto trace: no launch is matched.
    CHECK(from_perfetto.launches().matched == 0);
    CHECK(stint::diff_ops(from_session.op_stats(), from_perfetto.op_stats(), {.noise_ns = 1}).empty());

    SUBCASE("through a file, told from JSON by its first byte; cut short, an error with the offset") {
        const std::string path = temp_path("t.pftrace");
        std::ofstream(path, std::ios::binary) << sink.text;
        const auto from_file = stint::trace_profile::from_file(path);
        CHECK(from_file.read_stats().events == from_perfetto.read_stats().events);
        std::filesystem::resize_file(path, sink.text.size() - 3);
        CHECK_THROWS_AS((void)stint::trace_profile::from_file(path), stint::trace_read_error);
        std::filesystem::remove(path);
    }
    SUBCASE("any cut of the bytes is read or refused with a trace_read_error") {
        for (std::size_t cut = 0; cut < sink.text.size(); cut += 13) {
            try {
                (void)stint::trace_profile::from_perfetto_bytes(std::string_view(sink.text).substr(0, cut));
            } catch (const stint::trace_read_error& e) {
                CHECK(e.offset() <= cut);
            }
        }
    }
}
