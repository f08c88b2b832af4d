#pragma once
// The bodies of profiler/crash_dump_reader.hpp.
#include "stint/profiler/crash_dump_reader.hpp"

#include <algorithm>      // std::max, std::min
#include <cstring>        // std::memcpy
#include <fstream>        // std::ifstream
#include <iterator>       // std::istreambuf_iterator
#include <map>            // std::map
#include <set>            // std::set
#include <stdexcept>      // std::runtime_error
#include <string_view>    // std::string_view
#include <unordered_map>  // std::unordered_map
#include <utility>        // std::pair

#include <fmt/format.h>  // fmt::format

#include "stint/export/json_writer.hpp"
#include "stint/export/output_file.hpp"

namespace stint {

namespace detail {

/// Reads the dump's little-endian fields; `cut` is set when the file ends inside one.
class crash_dump_bytes {
public:
    explicit crash_dump_bytes(std::string_view data) : data_(data) {}
    template <class T>
    T value() {
        T v{};
        if (at_ + sizeof v > data_.size()) throw cut_short{};
        std::memcpy(&v, data_.data() + at_, sizeof v);
        at_ += sizeof v;
        return v;
    }
    std::string_view take(std::uint64_t n) {
        if (n > data_.size() - at_) throw cut_short{};
        const std::string_view out = data_.substr(at_, n);
        at_ += n;
        return out;
    }
    std::size_t at() const noexcept { return at_; }
    struct cut_short {};

private:
    std::string_view data_;
    std::size_t at_ = 0;
};

struct crash_site {
    std::uint8_t shape = 0;  // 0 a span, 1 a point, 2 stint's own, 3 no event
    std::uint8_t payload = 0;  // 0 none, 1 a runtime name first, 2 a point's id then a name, 3 other
    std::string name;
};

}  // namespace detail

crash_dump_contents read_crash_dump(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw std::runtime_error(fmt::format("stint: cannot read crash dump '{}'", path));
    const std::string data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    detail::crash_dump_bytes r(data);
    crash_dump_contents dump;
    dump.bytes = data.size();
    std::uint64_t anchor = 0;
    double ns_per_tick = 0;
    std::uint64_t crash_ticks = 0;
    try {
        if (r.take(10) != "STINTCRASH") {
            throw std::runtime_error(fmt::format("stint: '{}' is not a stint crash dump (byte 0)", path));
        }
        const auto version = r.value<std::uint16_t>();
        if (version != 3) {
            throw std::runtime_error(fmt::format(
                "stint: '{}' is a crash dump of version {} (byte 10); this reader reads version 3 "
                "(tools/stint-crashdump reads 1 to 3)", path, version));
        }
        dump.pid = r.value<std::uint64_t>();
        dump.signal = r.value<std::uint64_t>();
        dump.crashed_tid = r.value<std::uint64_t>();
        anchor = r.value<std::uint64_t>();
        dump.base_time_ns = r.value<std::uint64_t>();
        ns_per_tick = r.value<double>();
        crash_ticks = r.value<std::uint64_t>();
    } catch (const detail::crash_dump_bytes::cut_short&) {
        throw std::runtime_error(
            fmt::format("stint: crash dump '{}' is cut short inside its header (byte {})", path, r.at()));
    }
    const auto to_ns = [&](std::uint64_t ticks) {
        return static_cast<std::int64_t>((static_cast<double>(ticks) - static_cast<double>(anchor)) * ns_per_tick);
    };
    dump.crash_ns = to_ns(crash_ticks);

    struct raw_thread {
        std::uint64_t tid = 0;
        std::string name;
        std::uint64_t overwritten = 0, until = 0, dropped = 0, after_crash = 0;
        bool unsettled = false;
        std::string records;
    };
    struct raw_open {
        std::uint64_t address, begin, name_size;
        std::string name;  // 24 bytes
    };
    struct raw_stack {
        std::uint64_t tid = 0;
        std::string name;
        std::uint32_t depth = 0;
        std::vector<raw_open> entries;
    };
    std::vector<raw_thread> threads;
    std::vector<raw_stack> stacks;
    std::unordered_map<std::uint64_t, detail::crash_site> sites;
    try {
        for (;;) {
            const auto tag = r.value<char>();
            if (tag == 'E') {
                dump.complete = true;
                break;
            }
            if (tag == 'T') {
                raw_thread t;
                t.tid = r.value<std::uint64_t>();
                t.overwritten = r.value<std::uint64_t>();
                t.until = r.value<std::uint64_t>();
                t.dropped = r.value<std::uint64_t>();
                t.name = r.take(r.value<std::uint32_t>());
                threads.push_back(std::move(t));
            } else if ((tag == 'R' || tag == 'X') && threads.empty()) {
                throw std::runtime_error(fmt::format("stint: crash dump '{}': section '{}' at byte {} comes before "
                                                     "any thread ('T')", path, tag, r.at() - 1));
            } else if (tag == 'R') {
                threads.back().records += r.take(r.value<std::uint64_t>());
            } else if (tag == 'X') {
                (void)r.value<std::uint64_t>();  // records written: the runs hold them
                threads.back().after_crash = r.value<std::uint64_t>();
                threads.back().unsettled = r.value<std::uint8_t>() == 1;
            } else if (tag == 'O') {
                raw_stack s;
                s.tid = r.value<std::uint64_t>();
                s.name = r.take(r.value<std::uint32_t>());
                s.depth = r.value<std::uint32_t>();
                const auto kept = r.value<std::uint32_t>();
                for (std::uint32_t i = 0; i < kept; ++i) {
                    raw_open e{};
                    e.address = r.value<std::uint64_t>();
                    e.begin = r.value<std::uint64_t>();
                    e.name_size = r.value<std::uint64_t>();
                    e.name = r.take(24);
                    s.entries.push_back(std::move(e));
                }
                stacks.push_back(std::move(s));
            } else if (tag == 'S') {
                const auto address = r.value<std::uint64_t>();
                detail::crash_site site;
                site.shape = r.value<std::uint8_t>();
                site.payload = r.value<std::uint8_t>();
                site.name = r.take(r.value<std::uint32_t>());
                sites[address] = std::move(site);
            } else {
                throw std::runtime_error(fmt::format("stint: crash dump '{}': unknown section '{}' at byte {}", path,
                                                     tag, r.at() - 1));
            }
        }
    } catch (const detail::crash_dump_bytes::cut_short&) {
        dump.complete = false;
    }
    dump.bytes_read = r.at();

    const auto site_of = [&](std::uint64_t address) -> detail::crash_site {
        const auto found = sites.find(address);
        if (found != sites.end()) return found->second;
        return {0, 0, fmt::format("[unknown site {:#x}]", address)};
    };
    const auto thread_for = [&](std::uint64_t tid, const std::string& name) -> crash_dump_contents::thread& {
        for (crash_dump_contents::thread& t : dump.threads) {
            if (t.tid == tid) {
                if (t.name.empty()) t.name = name;
                return t;
            }
        }
        crash_dump_contents::thread& t = dump.threads.emplace_back();
        t.tid = tid;
        t.name = name;
        t.crashed = tid == dump.crashed_tid;
        return t;
    };
    // A scope that ended by the crash but had not left its stack when the handler read it is drawn once,
    // as its record: the open scopes' (site address, begin ticks) per thread, and those a record matches.
    using scope_key = std::pair<std::uint64_t, std::uint64_t>;
    std::map<std::uint64_t, std::set<scope_key>> open_keys;
    for (const raw_stack& s : stacks) {
        for (const raw_open& o : s.entries) open_keys[s.tid].insert({o.address, o.begin});
    }
    std::map<std::uint64_t, std::set<scope_key>> recorded;
    for (const raw_thread& raw : threads) {
        crash_dump_contents::thread& t = thread_for(raw.tid, raw.name);
        const auto open_here = open_keys.find(raw.tid);
        t.overwritten += raw.overwritten;
        t.dropped += raw.dropped;
        t.after_crash += raw.after_crash;
        t.records_left_out = t.records_left_out || raw.unsettled;
        if (raw.until != 0) t.complete_from_ns = std::max(t.complete_from_ns, to_ns(raw.until));
        const std::string& d = raw.records;
        for (std::size_t at = 0; at + 24 <= d.size();) {
            std::uint64_t word = 0, begin = 0, end = 0;
            std::memcpy(&word, d.data() + at, 8);
            std::memcpy(&begin, d.data() + at + 8, 8);
            std::memcpy(&end, d.data() + at + 16, 8);
            const std::uint64_t address = word & ((std::uint64_t{1} << 48) - 1);
            const detail::crash_site site = site_of(address);
            if (open_here != open_keys.end() && open_here->second.count({address, begin}) != 0) {
                recorded[raw.tid].insert({address, begin});
            }
            std::size_t size = 24;
            std::string name = site.name;
            if (site.payload != 0) {
                if (at + 32 > d.size()) break;
                std::uint32_t bytes = 0, aux = 0;
                std::memcpy(&bytes, d.data() + at + 24, 4);
                std::memcpy(&aux, d.data() + at + 28, 4);
                const std::size_t body_size = bytes >= 8 ? std::min<std::size_t>(bytes - 8, d.size() - at - 32) : 0;
                const std::string_view body(d.data() + at + 32, body_size);
                if (site.payload == 1) {
                    name = std::string(body.substr(0, aux));
                } else if (site.payload == 2 && aux != 0 && body.size() >= 8) {
                    name = std::string(body.substr(8, aux));
                }
                size += std::max<std::size_t>(bytes, 8);
            }
            at += size;
            if (site.shape == 3) continue;
            crash_dump_contents::event e;
            e.name = std::move(name);
            e.overhead = site.shape == 2;
            e.instant = site.shape == 1;
            e.start_ns = to_ns(begin);
            e.end_ns = e.instant ? e.start_ns : std::max(to_ns(end), e.start_ns);
            t.events.push_back(std::move(e));
        }
    }
    for (const raw_stack& s : stacks) {
        crash_dump_contents::thread& t = thread_for(s.tid, s.name);
        std::uint32_t depth = 0;
        for (const raw_open& o : s.entries) {
            const std::uint32_t here = depth++;
            // Older than the session: entered before it, not noted by it; newer than the crash: entered
            // while the dump was written, after the snapshot.
            if (o.address == 0 || o.begin < anchor || o.begin > crash_ticks) continue;
            if (const auto found = recorded.find(s.tid);
                found != recorded.end() && found->second.count({o.address, o.begin}) != 0) {
                continue;  // ended by the crash: its record is drawn
            }
            detail::crash_site site = site_of(o.address);
            if (site.payload == 1) {
                site.name = o.name.substr(0, std::min<std::uint64_t>(o.name_size, 24)) + (o.name_size > 24 ? "..." : "");
            }
            crash_dump_contents::event e;
            e.name = site.name;
            e.start_ns = to_ns(o.begin);
            e.end_ns = std::max(dump.crash_ns, e.start_ns);
            e.still_open = true;
            e.depth = here;
            t.inside.push_back(e.name);
            t.events.push_back(std::move(e));
        }
        t.deeper_not_kept += s.depth > s.entries.size() ? s.depth - s.entries.size() : 0;  // per object's stack
    }
    for (crash_dump_contents::thread& t : dump.threads) {
        if (t.name.empty()) t.name = fmt::format("thread {}", t.tid);
    }
    if (!dump.complete) {
        dump.lost.push_back(fmt::format(
            "the dump was cut short after {} of {} bytes (a full disk, or a fault in the handler): threads, "
            "records and names after that point are lost; events of sites it had not named yet are named "
            "[unknown site]", dump.bytes_read, dump.bytes));
    }
    for (const crash_dump_contents::thread& t : dump.threads) {
        if (t.records_left_out) dump.lost.push_back(fmt::format("thread {}: its records were left out: it held its ring lock at the crash", t.tid));
        if (t.after_crash != 0) {
            dump.lost.push_back(fmt::format("thread {}: {} records that ended after the crash left out (the snapshot "
                                            "is the crash's instant)", t.tid, t.after_crash));
        }
        if (t.dropped != 0) {
            dump.lost.push_back(fmt::format("thread {}: {} records dropped (the ring stood still while the dump "
                                            "was written)", t.tid, t.dropped));
        }
        if (t.overwritten != 0) {
            dump.lost.push_back(fmt::format("thread {}: {} older records overwritten by the ring before the crash",
                                            t.tid, t.overwritten));
        }
    }
    return dump;
}

void write_crash_dump_trace(const crash_dump_contents& dump, const std::string& path) {
    detail::output_file file(path);
    detail::json_writer out(file);
    const std::string pid = std::to_string(dump.pid);
    out.raw("{\"schemaVersion\": 1, \"traceName\": \"stint crash dump\", \"displayTimeUnit\": \"ms\", "
            "\"baseTimeNanoseconds\": ");
    out.number(dump.base_time_ns);
    out.raw(",\n\"traceEvents\": [");
    bool first = true;
    const auto begin_event = [&] {
        out.raw(first ? "\n  {" : ",\n  {");
        first = false;
    };
    for (const crash_dump_contents::thread& t : dump.threads) {
        begin_event();
        out.raw("\"name\": \"thread_name\", \"ph\": \"M\", \"pid\": " + pid + ", \"tid\": " + std::to_string(t.tid) +
                ", \"args\": {\"name\": ");
        out.string(t.name);
        out.raw("}}");
        for (const crash_dump_contents::event& e : t.events) {
            begin_event();
            out.raw("\"name\": ");
            out.string(e.name);
            out.raw(", \"cat\": ");
            out.raw(e.overhead ? "\"overhead\"" : "\"user_annotation\"");
            out.raw(", \"pid\": " + pid + ", \"tid\": " + std::to_string(t.tid) + ", \"ts\": ");
            out.microseconds(e.start_ns);
            if (e.instant) {
                out.raw(", \"ph\": \"i\", \"s\": \"t\"}");
                continue;
            }
            out.raw(", \"ph\": \"X\", \"dur\": ");
            out.microseconds(e.end_ns - e.start_ns);
            if (e.still_open) {
                out.raw(", \"args\": {\"still open at the crash\": true, \"depth\": ");
                out.number(std::uint64_t{e.depth});
                out.raw("}");
            }
            out.raw("}");
        }
    }
    out.raw("\n],\n\"crash\": {\"signal\": ");
    out.number(dump.signal);
    out.raw(", \"tid\": ");
    out.number(dump.crashed_tid);
    out.raw(", \"pid\": ");
    out.number(dump.pid);
    out.raw(dump.complete ? ", \"complete\": true" : ", \"complete\": false");
    out.raw(", \"threads\": [");
    for (std::size_t i = 0; i < dump.threads.size(); ++i) {
        const crash_dump_contents::thread& t = dump.threads[i];
        out.raw(i == 0 ? "{\"tid\": " : ", {\"tid\": ");
        out.number(t.tid);
        out.raw(", \"name\": ");
        out.string(t.name);
        out.raw(t.crashed ? ", \"crashed\": true, \"inside\": [" : ", \"crashed\": false, \"inside\": [");
        for (std::size_t k = 0; k < t.inside.size(); ++k) {
            if (k != 0) out.raw(", ");
            out.string(t.inside[k]);
        }
        out.raw("], \"deeper_not_kept\": ");
        out.number(t.deeper_not_kept);
        out.raw(", \"overwritten\": ");
        out.number(t.overwritten);
        out.raw(", \"dropped\": ");
        out.number(t.dropped);
        out.raw(", \"after_crash\": ");
        out.number(t.after_crash);
        out.raw(t.records_left_out ? ", \"records_left_out\": true}" : ", \"records_left_out\": false}");
    }
    out.raw("], \"lost\": [");
    for (std::size_t i = 0; i < dump.lost.size(); ++i) {
        if (i != 0) out.raw(", ");
        out.string(dump.lost[i]);
    }
    out.raw("]}}\n");
    out.flush();
    file.commit();
}

std::string crash_dump_summary(const crash_dump_contents& dump) {
    std::string out = fmt::format("process {} died of {} on thread {}{}\n", dump.pid,
                                  dump.signal != 0 ? fmt::format("signal {}", dump.signal) : "std::terminate",
                                  dump.crashed_tid, dump.complete ? "" : " (dump cut short)");
    for (const crash_dump_contents::thread& t : dump.threads) {
        std::string inside;
        for (const std::string& name : t.inside) inside += (inside.empty() ? "" : " > ") + name;
        if (t.deeper_not_kept != 0) inside += fmt::format(" (and {} deeper)", t.deeper_not_kept);
        std::string last;
        std::size_t shown = 0;
        for (auto e = t.events.rbegin(); e != t.events.rend() && shown < 3; ++e) {
            if (e->overhead || e->still_open) continue;
            last = e->name + (last.empty() ? "" : ", ") + last;
            ++shown;
        }
        out += fmt::format("  thread {} {}{}: inside {}; last {}\n", t.tid, t.name, t.crashed ? " (crashed)" : "",
                           inside.empty() ? "no scope" : inside, last.empty() ? "nothing" : last);
    }
    for (const std::string& line : dump.lost) out += "  lost: " + line + "\n";
    return out;
}

}  // namespace stint
