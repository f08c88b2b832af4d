#pragma once
// The bodies of profiler/crash_dump.hpp: the crash handlers and the async-signal-safe writer of the dump.
#include "stint/profiler/crash_dump.hpp"

#include <algorithm>     // std::min
#include <cerrno>        // errno, EINTR
#include <cstring>       // std::memcpy
#include <ctime>         // clock_gettime, nanosleep, timespec
#include <filesystem>    // std::filesystem::absolute
#include <stdexcept>     // std::logic_error
#include <system_error>  // std::system_error, std::generic_category

#include <fcntl.h>   // ::open, O_WRONLY, O_CREAT, O_CLOEXEC
#include <unistd.h>  // ::write, ::close, ::access, ::unlink, ::getpid

#include <fmt/format.h>  // fmt::format

#include "stint/recording/registry.hpp"

namespace stint::detail {

// Async-signal-safe clock and sleep for the handler's bounded waits. Inline, not in an unnamed namespace:
// the inline (header-only) functions below call them, and must call the same ones in every file.
inline std::int64_t crash_clock_ns() noexcept {
    timespec now{};
    ::clock_gettime(CLOCK_MONOTONIC, &now);
    return static_cast<std::int64_t>(now.tv_sec) * 1'000'000'000 + now.tv_nsec;
}
inline void crash_pause(long ns) noexcept {
    const timespec pause{0, ns};
    ::nanosleep(&pause, nullptr);
}

void crash_dump::install(const std::string& given_path, const tick_calibration& calibration) {
    crash_dump& self = instance();
    if (self.installed_.load(std::memory_order_acquire)) {
        throw std::logic_error("stint: flight_recorder.crash_dump_path: a crash dump is already installed");
    }
    // Resolved now: the program may change its working directory before it crashes.
    std::error_code resolved;
    const std::string path = std::filesystem::absolute(given_path, resolved).string();
    if (resolved) {
        throw std::system_error(resolved, fmt::format("stint: flight_recorder.crash_dump_path \"{}\" cannot be written",
                                                      given_path));
    }
    // A file left by an earlier crash may be there: it stays until a crash overwrites it.
    const bool existed = ::access(path.c_str(), F_OK) == 0;
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) {
        const int error = errno;
        throw std::system_error(error, std::generic_category(),
                                fmt::format("stint: flight_recorder.crash_dump_path \"{}\" cannot be written", given_path));
    }
    ::close(fd);
    if (!existed) ::unlink(path.c_str());
    self.path_.assign(path.begin(), path.end());
    self.path_.push_back('\0');
    self.buffer_.assign(buffer_bytes, std::byte{0});
    self.sites_.assign(site_slots, nullptr);
    self.calibration_ = calibration;
    self.pid_ = current_pid();
    self.writer_.store(0, std::memory_order_relaxed);
    struct sigaction ours {};
    ours.sa_sigaction = &on_signal;
    ours.sa_flags = SA_SIGINFO | SA_RESTART | SA_ONSTACK;
    sigemptyset(&ours.sa_mask);
    for (std::size_t i = 0; i < signals.size(); ++i) ::sigaction(signals[i], &ours, &self.previous_[i]);
    self.previous_terminate_ = std::set_terminate(&on_terminate);
    self.installed_.store(true, std::memory_order_release);
}

std::vector<std::string> crash_dump::overridden() {
    std::vector<std::string> out;
    crash_dump& self = instance();
    if (!self.installed_.load(std::memory_order_acquire)) return out;
    for (int sig : signals) {
        struct sigaction now {};
        ::sigaction(sig, nullptr, &now);
        if ((now.sa_flags & SA_SIGINFO) == 0 || now.sa_sigaction != &on_signal) {
            out.push_back(fmt::format("signal {} ({}): another handler replaced stint's crash dump", sig,
                                      sigabbrev_np(sig) != nullptr ? sigabbrev_np(sig) : "?"));
        }
    }
    if (std::get_terminate() != &on_terminate) {
        out.emplace_back("std::terminate: another terminate handler replaced stint's crash dump");
    }
    return out;
}

void crash_dump::uninstall() noexcept {
    crash_dump& self = instance();
    if (!self.installed_.exchange(false, std::memory_order_acq_rel)) return;
    for (std::size_t i = 0; i < signals.size(); ++i) {
        struct sigaction now {};
        ::sigaction(signals[i], nullptr, &now);
        if ((now.sa_flags & SA_SIGINFO) != 0 && now.sa_sigaction == &on_signal) {
            ::sigaction(signals[i], &self.previous_[i], nullptr);
        }
    }
    if (std::get_terminate() == &on_terminate) std::set_terminate(self.previous_terminate_);
}

void crash_dump::write_now(int sig) noexcept {
    crash_dump& self = instance();
    if (!self.installed_.load(std::memory_order_acquire)) return;
    // A forked child's session ended at the fork, and the file is its parent's: the child writes none.
    if (static_cast<std::uint64_t>(::getpid()) != self.pid_) return;
    const std::uint64_t me = current_os_tid();
    std::uint64_t writer = 0;
    if (self.writer_.compare_exchange_strong(writer, me, std::memory_order_acq_rel)) {
        self.write_file(sig);
        self.writer_.store(dump_done, std::memory_order_release);
        return;
    }
    if (writer == me) return;  // a fault in the writer itself: the file stays cut short
    // Another thread writes the dump. This thread's fault ends the process when its handler returns,
    // so it waits for the dump to be complete (or for so long that the writer must be stuck).
    const std::int64_t deadline = crash_clock_ns() + wait_for_writer_ns;
    while (self.writer_.load(std::memory_order_acquire) != dump_done && crash_clock_ns() < deadline) {
        crash_pause(1'000'000);
    }
}

std::string crash_dump::path() {
    crash_dump& self = instance();
    if (!self.installed_.load(std::memory_order_acquire) || self.path_.empty()) return {};
    return std::string(self.path_.data());
}

crash_dump& crash_dump::instance() noexcept {
    // Made at the first use and never destroyed (leaked): a crash may come during exit.
    static crash_dump* const dump = new crash_dump();
    return *dump;
}

void crash_dump::on_signal(int sig, siginfo_t* info, void* context) {
    // The interrupted code's errno: the handler chained to, and the code when the handler returns (a signal
    // raised by the program, a handler that recovers), see it as it was, whatever the dump's calls set.
    const int interrupted_errno = errno;
    write_now(sig);
    errno = interrupted_errno;
    chain(sig, info, context);
    errno = interrupted_errno;
}

void crash_dump::on_terminate() {
    write_now(0);
    std::terminate_handler previous = instance().previous_terminate_;
    if (previous != nullptr) previous();
    std::abort();
}

void crash_dump::chain(int sig, siginfo_t* info, void* context) {
    crash_dump& self = instance();
    std::size_t i = 0;
    while (i < signals.size() && signals[i] != sig) ++i;
    if (i == signals.size()) return;
    const struct sigaction& previous = self.previous_[i];
    if ((previous.sa_flags & SA_SIGINFO) != 0 && previous.sa_sigaction != nullptr) {
        previous.sa_sigaction(sig, info, context);
        return;
    }
    if (previous.sa_handler != SIG_DFL && previous.sa_handler != SIG_IGN && previous.sa_handler != nullptr) {
        previous.sa_handler(sig);
        return;
    }
    ::sigaction(sig, &previous, nullptr);
    if (info == nullptr || info->si_code <= 0) ::raise(sig);  // delivered when this handler returns
}

void crash_dump::put(const void* data, std::size_t size) noexcept {
    const auto* bytes = static_cast<const std::byte*>(data);
    while (size > 0) {
        if (used_ == buffer_.size()) flush();
        const std::size_t n = std::min(size, buffer_.size() - used_);
        std::memcpy(buffer_.data() + used_, bytes, n);
        used_ += n;
        bytes += n;
        size -= n;
    }
}

void crash_dump::flush() noexcept {
    const std::byte* at = buffer_.data();
    while (used_ > 0 && fd_ >= 0) {
        const ssize_t n = ::write(fd_, at, used_);
        if (n <= 0) {
            if (n < 0 && errno == EINTR) continue;
            break;  // a full disk: the rest is lost, the file stays a prefix
        }
        at += n;
        used_ -= static_cast<std::size_t>(n);
    }
    used_ = 0;
}

void crash_dump::note_site(const site* where) noexcept {
    std::size_t slot = (reinterpret_cast<std::uintptr_t>(where) >> 3) & (site_slots - 1);
    for (std::size_t probe = 0; probe < site_slots; ++probe, slot = (slot + 1) & (site_slots - 1)) {
        if (sites_[slot] == where) return;
        if (sites_[slot] == nullptr) {
            sites_[slot] = where;
            return;
        }
    }
}

crash_site_shape crash_dump::shape_of(const site& where) noexcept {
    if (where.payload == payload_kind::device_link || where.payload == payload_kind::outputs ||
        where.payload == payload_kind::args) {
        return crash_site_shape::none;
    }
    if (where.kind == event_kind::overhead) return crash_site_shape::own;
    if (where.kind == event_kind::instant || where.kind == event_kind::counter || is_point_kind(where.kind) ||
        where.kind == event_kind::memory || where.kind == event_kind::out_of_memory) {
        return crash_site_shape::point;
    }
    return crash_site_shape::span;
}

crash_site_payload crash_dump::payload_of(const site& where) noexcept {
    switch (where.payload) {
        case payload_kind::none:
        case payload_kind::device_link: return crash_site_payload::none;
        case payload_kind::runtime_name:
        case payload_kind::runtime_name_inputs: return crash_site_payload::runtime_name;
        case payload_kind::point: return crash_site_payload::point;
        default: return crash_site_payload::other;
    }
}

void crash_dump::write_records(const std::byte* from, const std::byte* end, std::uint64_t crash_ticks,
                               std::uint64_t& written, std::uint64_t& after_crash) noexcept {
    const auto write_run = [&](const std::byte* run, const std::byte* to) {
        if (to <= run) return;
        put_tag(crash_section::records);
        put_value(static_cast<std::uint64_t>(to - run));
        put(run, static_cast<std::size_t>(to - run));
    };
    const std::byte* run = from;  // kept records not yet written: [run, at)
    const std::byte* at = from;
    while (at + sizeof(record) <= end) {
        record r;
        std::memcpy(&r, at, sizeof r);
        const site* where = r.where();
        if (where == nullptr) break;  // not a record: the end of what was published
        std::size_t bytes = sizeof(record);
        if (has_payload(where->payload)) {
            if (at + sizeof(record) + sizeof(payload_header) > end) break;
            payload_header header;
            std::memcpy(&header, at + sizeof(record), sizeof header);
            bytes += header.bytes;
        }
        if (at + bytes > end) break;
        if (r.end_ticks > crash_ticks) {
            // Ended after the crash (its thread kept running while this one wrote): not in the snapshot.
            write_run(run, at);
            run = at + bytes;
            ++after_crash;
        } else {
            note_site(where);
            ++written;
        }
        at += bytes;
    }
    write_run(run, at);
}

void crash_dump::write_file(int sig) noexcept {
    const std::uint64_t crash_ticks = read_ticks();
    registry& reg = the_registry();
    // From here no thread overwrites or hands over a chunk (recording/ring.hpp), so nothing copied below
    // changes under the copy; appending to a thread's current chunk goes on.
    reg.freeze_ring(true);
    fd_ = ::open(path_.data(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd_ < 0) {
        reg.freeze_ring(false);
        return;
    }
    used_ = 0;
    put(crash_dump_magic.data(), crash_dump_magic.size());
    put_value(crash_dump_version);
    crash_dump_header header;
    header.pid = static_cast<std::uint64_t>(::getpid());
    header.signal = static_cast<std::uint64_t>(sig);
    header.crashed_tid = current_os_tid();
    header.anchor_ticks = calibration_.anchor.ticks;
    header.anchor_system_ns = static_cast<std::uint64_t>(calibration_.anchor.system_ns);
    header.ns_per_tick = calibration_.ns_per_tick;
    header.crash_ticks = crash_ticks;
    put_value(header);
    // Where each thread was, read before the records: a scope open at the crash and ending while the
    // records are read is then drawn open, and its record (ended after the crash) is left out.
    reg.for_each_open_stack_in_crash([&](const thread_node& node) {
        if (node.exited.load(std::memory_order_acquire)) return;
        const open_scope_stack& open = *node.open;
        const std::uint32_t depth = open.depth.load(std::memory_order_acquire);
        const std::uint32_t kept = std::min(depth, open_scope_stack::capacity);
        put_tag(crash_section::open_scopes);
        put_value(node.os_tid);
        put_value(static_cast<std::uint32_t>(node.name.size()));
        put(node.name.data(), node.name.size());
        put_value(depth);
        put_value(kept);
        for (std::uint32_t i = 0; i < kept; ++i) {
            // An entry its thread rewrote while it was read held a scope that ended after the crash: its
            // site is written as 0, which the readers skip (its record, ended after the crash, is left out).
            open_scope_stack::snapshot e;
            const site* where = open.read_entry(i, e) ? e.where : nullptr;
            if (where != nullptr) note_site(where);
            crash_open_entry entry;
            entry.site = static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(where));
            entry.begin_ticks = e.begin_ticks;
            entry.name_size = e.name_size;
            static_assert(sizeof e.name == sizeof entry.name);
            std::memcpy(entry.name, e.name, sizeof entry.name);
            put_value(entry);
        }
    });
    reg.for_each_node_in_crash([&](thread_node& node) {
        // The node's ring settles: a thread inside its ring lock (overwriting a chunk) finishes, and any
        // later one sees the freeze. A handshake: here the freeze is stored, then the lock loaded (seq_cst);
        // a thread takes the lock, then a seq_cst fence, then loads the freeze (ring.ipp); so one of the two
        // sees the other. The lock is only watched, never taken: releasing it would have to wake a waiter,
        // which is no signal-safe call.
        const std::int64_t deadline = crash_clock_ns() + wait_for_ring_lock_ns;
        bool settled = true;
        while (node.ring_lock.test(std::memory_order_seq_cst)) {
            if (crash_clock_ns() >= deadline) {
                settled = false;
                break;
            }
            crash_pause(10'000);
        }
        put_tag(crash_section::thread_begin);
        crash_thread_fields fields;
        fields.tid = node.os_tid;
        fields.overwritten = node.overwritten;
        fields.overwritten_until = node.overwritten_until;
        fields.dropped = node.dropped.load(std::memory_order_relaxed);
        put_value(fields);
        put_value(static_cast<std::uint32_t>(node.name.size()));
        put(node.name.data(), node.name.size());
        std::uint64_t written = 0;
        std::uint64_t after_crash = 0;
        if (settled) {
            const chunk* const current = node.current.load(std::memory_order_acquire);
            for (const chunk* c = node.head.load(std::memory_order_acquire); c != nullptr;
                 c = c == current ? nullptr : c->next.load(std::memory_order_acquire)) {
                const std::byte* const data = reinterpret_cast<const std::byte*>(c) + chunk::header_bytes;
                write_records(data, c->published.load(std::memory_order_acquire), crash_ticks, written, after_crash);
            }
        }
        put_tag(crash_section::thread_end);
        put_value(written);
        put_value(after_crash);
        put_value(static_cast<std::uint8_t>(settled ? 0 : 1));
    });
    for (const site* where : sites_) {
        if (where == nullptr) continue;
        put_tag(crash_section::site);
        put_value(static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(where)));
        put_value(shape_of(*where));
        put_value(payload_of(*where));
        put_value(static_cast<std::uint32_t>(where->name.size()));
        put(where->name.data(), where->name.size());
    }
    put_tag(crash_section::end);
    flush();
    ::close(fd_);
    fd_ = -1;
    reg.freeze_ring(false);  // a handler chained to may recover: the ring turns again
}

}  // namespace stint::detail

namespace stint {

std::vector<std::string> check_crash_handlers() { return detail::crash_dump::overridden(); }

}  // namespace stint
