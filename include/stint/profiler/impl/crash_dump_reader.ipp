#pragma once
// The bodies of profiler/crash_dump_reader.hpp.
#include "stint/profiler/crash_dump_reader.hpp"

#include <algorithm>      // std::max, std::min
#include <cstddef>        // std::byte, std::size_t
#include <cstring>        // std::memcpy
#include <fstream>        // std::ifstream
#include <iterator>       // std::istreambuf_iterator
#include <map>            // std::map
#include <set>            // std::set
#include <stdexcept>      // std::runtime_error
#include <string_view>    // std::string_view
#include <unordered_map>  // std::unordered_map
#include <utility>        // std::pair
#include <vector>         // std::vector

#include <fmt/format.h>  // fmt::format

#include "stint/export/json_writer.hpp"
#include "stint/export/output_file.hpp"
#include "stint/profiler/crash_dump_format.hpp"
#include "stint/recording/buffer.hpp"
#include "stint/recording/record_walk.hpp"

namespace stint {

namespace detail {

/// Reads the dump's little-endian fields; throws cut_short when the file ends inside one.
class crash_dump_bytes {
public:
    explicit crash_dump_bytes(std::string_view data) : data_(data) {}
    template <class T>
    T value() {
        T v{};
        if (sizeof v > data_.size() - at_) throw cut_short{};
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
    /// A u32 length, then that many bytes.
    std::string name() { return std::string(take(value<std::uint32_t>())); }
    std::size_t at() const noexcept { return at_; }
    std::size_t size() const noexcept { return data_.size(); }
    struct cut_short {};

private:
    std::string_view data_;
    std::size_t at_ = 0;
};

struct crash_site {
    crash_site_shape shape = crash_site_shape::span;
    crash_site_payload payload = crash_site_payload::none;
    std::string name;
};

/// The dump's sections as the file holds them, before a thread's sections are merged and its records
/// decoded.
struct raw_crash_dump {
    struct thread {
        crash_thread_fields fields;
        std::string name;
        std::uint64_t after_crash = 0;
        bool unsettled = false;
        std::string records;  // its records sections' runs, one after the other
    };
    struct stack {
        std::uint64_t tid = 0;
        std::string name;
        std::uint32_t depth = 0;
        std::vector<crash_open_entry> entries;
    };
    crash_dump_header header;
    std::vector<thread> threads;
    std::vector<stack> stacks;
    std::unordered_map<std::uint64_t, crash_site> sites;
    bool complete = false;

    std::int64_t to_ns(std::uint64_t ticks) const noexcept {
        return static_cast<std::int64_t>((static_cast<double>(ticks) - static_cast<double>(header.anchor_ticks)) *
                                         header.ns_per_tick);
    }
    crash_site site_at(std::uint64_t address) const {
        const auto found = sites.find(address);
        if (found != sites.end()) return found->second;
        return {crash_site_shape::span, crash_site_payload::none, fmt::format("[unknown site {:#x}]", address)};
    }
};

inline crash_dump_header read_crash_header(crash_dump_bytes& r, const std::string& path) {
    try {
        if (r.take(crash_dump_magic.size()) != crash_dump_magic) {
            throw std::runtime_error(fmt::format("stint: '{}' is not a stint crash dump (byte 0)", path));
        }
        const auto version = r.value<std::uint16_t>();
        if (version != crash_dump_version) {
            throw std::runtime_error(fmt::format("stint: '{}' is a crash dump of version {} (byte {}); this reader "
                                                 "reads version {}", path, version, crash_dump_magic.size(),
                                                 crash_dump_version));
        }
        return r.value<crash_dump_header>();
    } catch (const crash_dump_bytes::cut_short&) {
        throw std::runtime_error(
            fmt::format("stint: crash dump '{}' is cut short inside its header (it ends at byte {}, the header at "
                        "byte {})", path, r.size(), crash_dump_header_end));
    }
}

inline raw_crash_dump::stack read_open_scopes(crash_dump_bytes& r) {
    raw_crash_dump::stack s;
    s.tid = r.value<std::uint64_t>();
    s.name = r.name();
    s.depth = r.value<std::uint32_t>();
    const auto kept = r.value<std::uint32_t>();
    for (std::uint32_t i = 0; i < kept; ++i) s.entries.push_back(r.value<crash_open_entry>());
    return s;
}

/// Reads one section into `raw`; false at the end section.
inline bool read_crash_section(crash_dump_bytes& r, const std::string& path, raw_crash_dump& raw) {
    const auto tag = r.value<crash_section>();
    const auto needs_thread = [&] {
        if (!raw.threads.empty()) return;
        throw std::runtime_error(fmt::format("stint: crash dump '{}': section '{}' at byte {} comes before any "
                                             "thread ('{}')", path, static_cast<char>(tag), r.at() - 1,
                                             static_cast<char>(crash_section::thread_begin)));
    };
    switch (tag) {
        case crash_section::end: return false;
        case crash_section::thread_begin: {
            raw_crash_dump::thread& t = raw.threads.emplace_back();
            t.fields = r.value<crash_thread_fields>();
            t.name = r.name();
            return true;
        }
        case crash_section::records: {
            needs_thread();
            raw.threads.back().records += r.take(r.value<std::uint64_t>());
            return true;
        }
        case crash_section::thread_end: {
            needs_thread();
            (void)r.value<std::uint64_t>();  // records written: the runs hold them
            raw.threads.back().after_crash = r.value<std::uint64_t>();
            raw.threads.back().unsettled = r.value<std::uint8_t>() == 1;
            return true;
        }
        case crash_section::open_scopes: raw.stacks.push_back(read_open_scopes(r)); return true;
        case crash_section::site: {
            const auto address = r.value<std::uint64_t>();
            crash_site& site = raw.sites[address];
            site.shape = r.value<crash_site_shape>();
            site.payload = r.value<crash_site_payload>();
            site.name = r.name();
            return true;
        }
    }
    throw std::runtime_error(fmt::format("stint: crash dump '{}': unknown section '{}' at byte {}", path,
                                         static_cast<char>(tag), r.at() - 1));
}

/// The dump's sections, as far as the file goes (`complete` false when it ends before the end section).
inline raw_crash_dump read_raw_crash_dump(std::string_view data, const std::string& path, std::uint64_t& bytes_read) {
    crash_dump_bytes r(data);
    raw_crash_dump raw;
    raw.header = read_crash_header(r, path);
    try {
        while (read_crash_section(r, path, raw)) {
        }
        raw.complete = true;
    } catch (const crash_dump_bytes::cut_short&) {
        raw.complete = false;
    }
    bytes_read = r.at();
    return raw;
}

/// One record of a thread's runs, laid out as recording/buffer.hpp writes it, with its site's address in
/// the dead process (the key of the dump's site table).
struct dumped_record {
    record fixed;
    record_payload payload;
    std::uint64_t site_address() const noexcept {
        return static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(fixed.where()));
    }
};

/// Calls `on_record(dumped_record, site)` for each whole record of `run`. The sites are the dump's: a
/// record's site pointer is only an address of the dead process, never followed.
template <class OnRecord>
void for_each_dumped_record(std::string_view run, const raw_crash_dump& raw, OnRecord&& on_record) {
    const auto* const begin = reinterpret_cast<const std::byte*>(run.data());
    const auto* const end = begin + run.size();
    for (const std::byte* at = begin; sizeof(record) <= static_cast<std::size_t>(end - at);) {
        dumped_record r;
        std::memcpy(&r.fixed, at, sizeof r.fixed);
        const crash_site site = raw.site_at(r.site_address());
        std::size_t bytes = sizeof(record);
        if (site.payload != crash_site_payload::none) {
            if (static_cast<std::size_t>(end - at) < sizeof(record) + sizeof(payload_header)) break;
            payload_header header;
            std::memcpy(&header, at + sizeof(record), sizeof header);
            const std::byte* const body = at + sizeof(record) + sizeof header;
            const auto available = static_cast<std::size_t>(end - body);
            const std::size_t body_bytes =
                header.bytes >= sizeof header ? std::min<std::size_t>(header.bytes - sizeof header, available) : 0;
            r.payload = {header.aux, {body, body_bytes}};
            bytes += std::max<std::size_t>(header.bytes, sizeof header);
        }
        at += std::min<std::size_t>(bytes, static_cast<std::size_t>(end - at));
        on_record(r, site);
    }
}

/// The name a record's event takes: its runtime name, a point's name, else its site's.
inline std::string dumped_event_name(const dumped_record& r, const crash_site& site) {
    if (site.payload == crash_site_payload::runtime_name) {
        const std::size_t size = std::min<std::size_t>(r.payload.aux, r.payload.bytes.size());
        return std::string(reinterpret_cast<const char*>(r.payload.bytes.data()), size);
    }
    const bool named_point = site.payload == crash_site_payload::point && r.payload.aux != 0 &&
                             r.payload.bytes.size() >= sizeof(std::uint64_t);
    if (named_point) {
        return std::string(read_point(r.payload).name);
    }
    return site.name;
}

/// The name an open scope is drawn with: the first bytes of its runtime name, else its site's.
inline std::string open_scope_name(const crash_open_entry& entry, const crash_site& site) {
    if (site.payload != crash_site_payload::runtime_name) return site.name;
    const std::size_t kept = std::min<std::size_t>(entry.name_size, crash_open_name_bytes);
    return std::string(entry.name, kept) + (entry.name_size > crash_open_name_bytes ? "..." : "");
}

/// Builds the read-back dump from its sections: a thread's sections merged (one per object that recorded
/// on it), its records decoded, then its open scopes drawn ending at the crash.
class crash_dump_assembly {
public:
    crash_dump_assembly(const raw_crash_dump& raw, crash_dump_contents& dump) : raw_(raw), dump_(dump) {}

    void run() {
        for (const raw_crash_dump::stack& s : raw_.stacks) {
            for (const crash_open_entry& o : s.entries) open_keys_[s.tid].insert({o.site, o.begin_ticks});
        }
        for (const raw_crash_dump::thread& t : raw_.threads) add_records(t);
        for (const raw_crash_dump::stack& s : raw_.stacks) add_open_scopes(s);
        for (crash_dump_contents::thread& t : dump_.threads) {
            if (t.name.empty()) t.name = fmt::format("thread {}", t.tid);
        }
    }

private:
    using scope_key = std::pair<std::uint64_t, std::uint64_t>;  // (site address, begin ticks)

    crash_dump_contents::thread& thread_for(std::uint64_t tid, const std::string& name) {
        for (crash_dump_contents::thread& t : dump_.threads) {
            if (t.tid == tid) {
                if (t.name.empty()) t.name = name;
                return t;
            }
        }
        crash_dump_contents::thread& t = dump_.threads.emplace_back();
        t.tid = tid;
        t.name = name;
        t.crashed = tid == dump_.crashed_tid;
        return t;
    }

    void add_records(const raw_crash_dump::thread& raw) {
        crash_dump_contents::thread& t = thread_for(raw.fields.tid, raw.name);
        t.overwritten += raw.fields.overwritten;
        t.dropped += raw.fields.dropped;
        t.after_crash += raw.after_crash;
        t.records_left_out = t.records_left_out || raw.unsettled;
        if (raw.fields.overwritten_until != 0) {
            t.complete_from_ns = std::max(t.complete_from_ns, raw_.to_ns(raw.fields.overwritten_until));
        }
        const auto open_here = open_keys_.find(raw.fields.tid);
        for_each_dumped_record(raw.records, raw_, [&](const dumped_record& r, const crash_site& site) {
            const scope_key key{r.site_address(), r.fixed.begin_ticks};
            if (open_here != open_keys_.end() && open_here->second.count(key) != 0) {
                recorded_[raw.fields.tid].insert(key);
            }
            if (site.shape == crash_site_shape::none) return;
            crash_dump_contents::event e;
            e.name = dumped_event_name(r, site);
            e.overhead = site.shape == crash_site_shape::own;
            e.instant = site.shape == crash_site_shape::point;
            e.start_ns = raw_.to_ns(r.fixed.begin_ticks);
            e.end_ns = e.instant ? e.start_ns : std::max(raw_.to_ns(r.fixed.end_ticks), e.start_ns);
            t.events.push_back(std::move(e));
        });
    }

    /// Whether an open scope is drawn: not older than the session (entered before it, not noted by it),
    /// not newer than the crash (entered while the dump was written), and not ended by the crash (a scope
    /// that had not left its stack when the handler read it is drawn once, as its record).
    bool drawn_open(std::uint64_t tid, const crash_open_entry& o) const {
        if (o.site == 0 || o.begin_ticks < raw_.header.anchor_ticks || o.begin_ticks > raw_.header.crash_ticks) {
            return false;
        }
        const auto found = recorded_.find(tid);
        return found == recorded_.end() || found->second.count({o.site, o.begin_ticks}) == 0;
    }

    void add_open_scopes(const raw_crash_dump::stack& s) {
        crash_dump_contents::thread& t = thread_for(s.tid, s.name);
        for (std::uint32_t depth = 0; depth < s.entries.size(); ++depth) {
            const crash_open_entry& o = s.entries[depth];
            if (!drawn_open(s.tid, o)) continue;
            crash_dump_contents::event e;
            e.name = open_scope_name(o, raw_.site_at(o.site));
            e.start_ns = raw_.to_ns(o.begin_ticks);
            e.end_ns = std::max(dump_.crash_ns, e.start_ns);
            e.still_open = true;
            e.depth = depth;
            t.inside.push_back(e.name);
            t.events.push_back(std::move(e));
        }
        t.deeper_not_kept += s.depth > s.entries.size() ? s.depth - s.entries.size() : 0;  // per object's stack
    }

    const raw_crash_dump& raw_;
    crash_dump_contents& dump_;
    std::map<std::uint64_t, std::set<scope_key>> open_keys_;  // per thread, its open scopes
    std::map<std::uint64_t, std::set<scope_key>> recorded_;   // per thread, its open scopes a record matches
};

/// What the dump could not hold, one line each.
inline void note_crash_dump_losses(crash_dump_contents& dump) {
    if (!dump.complete) {
        dump.lost.push_back(fmt::format(
            "the dump was cut short after {} of {} bytes (a full disk, or a fault in the handler): threads, "
            "records and names after that point are lost; events of sites it had not named yet are named "
            "[unknown site]", dump.bytes_read, dump.bytes));
    }
    for (const crash_dump_contents::thread& t : dump.threads) {
        if (t.records_left_out) {
            dump.lost.push_back(
                fmt::format("thread {}: its records were left out: it held its ring lock at the crash", t.tid));
        }
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
}

/// A thread's newest `count` records' names, oldest first: what the thread did last (stint's own work
/// and its open scopes apart).
inline std::vector<std::string> last_events(const crash_dump_contents::thread& t, std::size_t count) {
    std::vector<std::string> out;
    for (auto e = t.events.rbegin(); e != t.events.rend() && out.size() < count; ++e) {
        if (!e->overhead && !e->still_open) out.push_back(e->name);
    }
    return {out.rbegin(), out.rend()};
}

}  // namespace detail

crash_dump_contents read_crash_dump(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw std::runtime_error(fmt::format("stint: cannot read crash dump '{}'", path));
    const std::string data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    crash_dump_contents dump;
    dump.bytes = data.size();
    const detail::raw_crash_dump raw = detail::read_raw_crash_dump(data, path, dump.bytes_read);
    dump.pid = raw.header.pid;
    dump.signal = raw.header.signal;
    dump.crashed_tid = raw.header.crashed_tid;
    dump.base_time_ns = raw.header.anchor_system_ns;
    dump.crash_ns = raw.to_ns(raw.header.crash_ticks);
    dump.complete = raw.complete;
    detail::crash_dump_assembly(raw, dump).run();
    detail::note_crash_dump_losses(dump);
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
        out.raw("], \"last_events\": [");
        const std::vector<std::string> last = detail::last_events(t, 3);
        for (std::size_t k = 0; k < last.size(); ++k) {
            if (k != 0) out.raw(", ");
            out.string(last[k]);
        }
        out.raw("], \"complete_from_us\": ");
        out.microseconds(t.complete_from_ns);
        out.raw(", \"deeper_not_kept\": ");
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
        for (const std::string& name : detail::last_events(t, 3)) last += (last.empty() ? "" : ", ") + name;
        out += fmt::format("  thread {} {}{}: inside {}; last {}\n", t.tid, t.name, t.crashed ? " (crashed)" : "",
                           inside.empty() ? "no scope" : inside, last.empty() ? "nothing" : last);
    }
    for (const std::string& line : dump.lost) out += "  lost: " + line + "\n";
    return out;
}

}  // namespace stint
