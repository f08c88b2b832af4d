#pragma once
// The bodies of profiler/crash_dump.hpp: the crash handlers and the async-signal-safe writer of the dump.
#include "stint/profiler/crash_dump.hpp"

#include <algorithm>     // std::min
#include <cerrno>        // errno, EINTR
#include <cstring>       // std::memcpy
#include <stdexcept>     // std::logic_error
#include <system_error>  // std::system_error, std::generic_category

#include <fcntl.h>   // ::open, O_WRONLY, O_CREAT, O_CLOEXEC
#include <unistd.h>  // ::write, ::close, ::access, ::unlink

#include <fmt/format.h>  // fmt::format

#include "stint/recording/registry.hpp"

namespace stint::detail {

void crash_dump::install(const std::string& path, const tick_calibration& calibration) {
    crash_dump& self = instance();
    if (self.installed_.load(std::memory_order_acquire)) {
        throw std::logic_error("stint: flight_recorder.crash_dump_path: a crash dump is already installed");
    }
    // A file left by an earlier crash may be there: it stays until a crash overwrites it.
    const bool existed = ::access(path.c_str(), F_OK) == 0;
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) {
        const int error = errno;
        throw std::system_error(error, std::generic_category(),
                                fmt::format("stint: flight_recorder.crash_dump_path \"{}\" cannot be written", path));
    }
    ::close(fd);
    if (!existed) ::unlink(path.c_str());
    self.path_.assign(path.begin(), path.end());
    self.path_.push_back('\0');
    self.buffer_.assign(buffer_bytes, std::byte{0});
    self.sites_.assign(site_slots, nullptr);
    self.calibration_ = calibration;
    self.pid_ = current_pid();
    self.dumped_.store(false, std::memory_order_relaxed);
    struct sigaction ours {};
    ours.sa_sigaction = &on_signal;
    ours.sa_flags = SA_SIGINFO | SA_RESTART;
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
    if (!self.installed_.load(std::memory_order_acquire) || self.dumped_.exchange(true)) return;
    self.write_file(sig);
}

crash_dump& crash_dump::instance() noexcept {
    // Made at the first use and never destroyed (leaked): a crash may come during exit.
    static crash_dump* const dump = new crash_dump();
    return *dump;
}

void crash_dump::on_signal(int sig, siginfo_t* info, void* context) {
    write_now(sig);
    chain(sig, info, context);
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

std::uint8_t crash_dump::shape_of(const site& where) noexcept {
    if (where.payload == payload_kind::device_link || where.payload == payload_kind::outputs ||
        where.payload == payload_kind::args) {
        return 3;
    }
    if (where.kind == event_kind::overhead) return 2;
    if (where.kind == event_kind::instant || where.kind == event_kind::counter || is_point_kind(where.kind) ||
        where.kind == event_kind::memory || where.kind == event_kind::out_of_memory) {
        return 1;
    }
    return 0;
}

std::uint8_t crash_dump::payload_of(const site& where) noexcept {
    switch (where.payload) {
        case payload_kind::none:
        case payload_kind::device_link: return 0;
        case payload_kind::runtime_name:
        case payload_kind::runtime_name_inputs: return 1;
        case payload_kind::point: return 2;
        default: return 3;
    }
}

void crash_dump::write_file(int sig) noexcept {
    fd_ = ::open(path_.data(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd_ < 0) return;
    used_ = 0;
    put("STINTCRASH", 10);
    put_value(std::uint16_t{2});
    put_value(static_cast<std::uint64_t>(pid_));
    put_value(static_cast<std::uint64_t>(sig));
    put_value(current_os_tid());
    put_value(calibration_.anchor.ticks);
    put_value(static_cast<std::uint64_t>(calibration_.anchor.system_ns));
    put_value(calibration_.ns_per_tick);
    put_value(read_ticks());
    the_registry().for_each_node_in_crash([&](const thread_node& node) {
        const chunk* const current = node.current.load(std::memory_order_acquire);
        std::uint64_t bytes = 0;
        for (const chunk* c = node.head.load(std::memory_order_acquire); c != nullptr;
             c = c == current ? nullptr : c->next.load(std::memory_order_acquire)) {
            bytes += static_cast<std::uint64_t>(c->published.load(std::memory_order_acquire) -
                                                reinterpret_cast<const std::byte*>(c)) - chunk::header_bytes;
        }
        put_value(std::uint8_t{'T'});
        put_value(node.os_tid);
        put_value(node.overwritten);
        put_value(node.overwritten_until);
        put_value(static_cast<std::uint32_t>(node.name.size()));
        put(node.name.data(), node.name.size());
        put_value(bytes);
        for (const chunk* c = node.head.load(std::memory_order_acquire); c != nullptr && bytes > 0;
             c = c == current ? nullptr : c->next.load(std::memory_order_acquire)) {
            const std::byte* const data = reinterpret_cast<const std::byte*>(c) + chunk::header_bytes;
            const std::byte* end = c->published.load(std::memory_order_acquire);
            // Whole records only, and never more than the thread's count said.
            end = std::min(end, data + bytes);
            put(data, static_cast<std::size_t>(end - data));
            bytes -= static_cast<std::uint64_t>(end - data);
            for_each_record(data, end, [&](const record& r, const record_payload&) { note_site(r.where()); });
        }
        for (; bytes > 0; --bytes) put_value(std::byte{0});  // a chain that changed: keep the length said
    });
    // Where each thread was: the scopes it is inside (recording/open_scopes.hpp), which left no record.
    the_registry().for_each_open_stack_in_crash([&](const thread_node& node) {
        const open_scope_stack& open = *node.open;
        const std::uint32_t depth = open.depth.load(std::memory_order_acquire);
        const std::uint32_t kept = std::min(depth, open_scope_stack::capacity);
        put_value(std::uint8_t{'O'});
        put_value(node.os_tid);
        put_value(depth);
        put_value(kept);
        for (std::uint32_t i = 0; i < kept; ++i) {
            const open_scope_stack::entry& e = open.entries[i];
            const site* where = e.where.load(std::memory_order_relaxed);
            if (where != nullptr) note_site(where);
            put_value(static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(where)));
            put_value(e.begin_ticks.load(std::memory_order_relaxed));
            put_value(static_cast<std::uint64_t>(e.name_size.load(std::memory_order_relaxed)));
            for (const auto& word : e.name) put_value(word.load(std::memory_order_relaxed));
        }
    });
    for (const site* where : sites_) {
        if (where == nullptr) continue;
        put_value(std::uint8_t{'S'});
        put_value(static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(where)));
        put_value(shape_of(*where));
        put_value(payload_of(*where));
        put_value(static_cast<std::uint32_t>(where->name.size()));
        put(where->name.data(), where->name.size());
    }
    put_value(std::uint8_t{'E'});
    flush();
    ::close(fd_);
    fd_ = -1;
}

}  // namespace stint::detail

namespace stint {

std::vector<std::string> check_crash_handlers() { return detail::crash_dump::overridden(); }

}  // namespace stint
