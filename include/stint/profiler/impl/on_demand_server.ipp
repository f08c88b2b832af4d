#pragma once
// The bodies of profiler/on_demand_server.hpp: the request parser, the socket's listener and the captures it runs.
#include "stint/profiler/on_demand_server.hpp"

#include <fcntl.h>       // O_CLOEXEC
#include <poll.h>        // ::poll, pollfd, POLLIN
#include <sys/socket.h>  // ::socket, ::bind, ::listen, ::accept4, ::getsockopt
#include <sys/stat.h>    // ::mkdir, ::lstat, ::chmod, S_ISDIR
#include <sys/types.h>   // ssize_t
#include <sys/un.h>      // sockaddr_un
#include <unistd.h>      // ::close, ::write, ::unlink, ::geteuid, ::pipe2

#include <algorithm>     // std::replace
#include <array>         // std::array
#include <cerrno>        // errno, EINTR, EEXIST
#include <charconv>      // std::from_chars
#include <cstdlib>       // std::getenv
#include <cstring>       // std::memcpy
#include <exception>     // std::exception
#include <stdexcept>     // std::invalid_argument, std::runtime_error
#include <system_error>  // std::system_error, std::generic_category, std::errc
#include <utility>       // std::move

#include <fmt/format.h>  // fmt::format

#include "stint/stint.hpp"  // the profiler and what it needs, in their order
#include "stint/detail/platform.hpp"
#include "stint/export/output_file.hpp"
#include "stint/profiler.hpp"
#include "stint/profiler/flight_recorder.hpp"
#include "stint/profiler/step_tracker.hpp"
#include "stint/common/warning.hpp"

namespace stint::detail {

capture_request parse_capture_request(std::string_view line) {
    const auto fail = [](std::string_view why) {
        throw std::invalid_argument(fmt::format("malformed request: {}", why));
    };
    if (line.size() > 4096) fail("longer than 4096 bytes");
    capture_request request;
    constexpr std::string_view capture_verb = "capture ";
    constexpr std::string_view dump_verb = "dump ";
    if (line.substr(0, capture_verb.size()) == capture_verb) {
        line.remove_prefix(capture_verb.size());
    } else if (line.substr(0, dump_verb.size()) == dump_verb) {
        line.remove_prefix(dump_verb.size());
        request.dump = true;
    } else {
        fail("it must begin with \"capture \" or \"dump \"");
    }
    const auto number = [&](std::string_view key, std::string_view text) {
        std::int64_t value = 0;
        const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
        if (error != std::errc{} || end != text.data() + text.size() || value <= 0) {
            fail(fmt::format("{} must be a positive integer, got \"{}\"", key, text));
        }
        return value;
    };
    while (!line.empty()) {
        const std::size_t eq = line.find('=');
        if (eq == std::string_view::npos || eq == 0) fail("expected key=value");
        const std::string_view key = line.substr(0, eq);
        line.remove_prefix(eq + 1);
        if (key == "output") {
            request.output.assign(line);
            break;
        }
        const std::size_t space = line.find(' ');
        const std::string_view value = line.substr(0, space);
        line.remove_prefix(space == std::string_view::npos ? line.size() : space + 1);
        if (request.dump) {
            fail(fmt::format("a dump takes output=PATH only, not \"{}\"", key));
        } else if (key == "duration_ms" && !request.duration) {
            request.duration = std::chrono::milliseconds(number(key, value));
        } else if (key == "steps" && !request.steps) {
            request.steps = number(key, value);
        } else if (key == "timeout_ms" && !request.timeout) {
            request.timeout = std::chrono::milliseconds(number(key, value));
        } else {
            fail(fmt::format("unknown or repeated key \"{}\"", key));
        }
    }
    if (!request.dump && request.duration.has_value() == request.steps.has_value()) {
        fail("give either duration_ms or steps");
    }
    if (request.timeout && !request.steps) fail("timeout_ms applies to steps only");
    if (request.output.empty()) fail("output=PATH is missing");
    if (request.output.front() != '/') fail("output must be an absolute path");
    if (request.output.find('\0') != std::string::npos) fail("output holds a NUL byte");
    if (request.dump && !dump_format_of(request.output)) {
        fail("a dump's output must end in .json, .json.gz or .pftrace (the trace's format)");
    }
    return request;
}

std::string on_demand_dir(const std::string& dir) {
    if (!dir.empty()) return dir;
    if (const char* env = std::getenv("STINT_ON_DEMAND_DIR"); env != nullptr && *env != '\0') return env;
    return fmt::format("/tmp/stint-{}", ::geteuid());
}

void answer(int fd, std::string_view text) noexcept {
    std::string line(text);
    std::replace(line.begin(), line.end(), '\n', ' ');
    line.push_back('\n');
    std::size_t sent = 0;
    while (sent < line.size()) {
        const ssize_t n = ::send(fd, line.data() + sent, line.size() - sent, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return;
        sent += static_cast<std::size_t>(n);
    }
}

std::optional<std::string> read_line(int fd, std::chrono::milliseconds timeout) {
    std::string line;
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    char c = 0;
    while (line.size() <= 4096) {
        using std::chrono::milliseconds;
        const auto left = std::chrono::duration_cast<milliseconds>(deadline - std::chrono::steady_clock::now());
        if (left.count() <= 0) return std::nullopt;
        pollfd p{fd, POLLIN, 0};
        const int ready = ::poll(&p, 1, static_cast<int>(left.count()));
        if (ready < 0 && errno == EINTR) continue;
        if (ready <= 0) return std::nullopt;
        const ssize_t n = ::recv(fd, &c, 1, 0);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return line.empty() ? std::nullopt : std::optional<std::string>(line);
        if (c == '\n') return line;
        line.push_back(c);
    }
    return line;  // too long: the parser says so
}

on_demand_server::~on_demand_server() {
    if (owner_pid_ == current_pid()) stop();  // a forked child leaves its parent's socket alone
}

std::string on_demand_server::start(const on_demand_options& options) {
    std::lock_guard lock(control_);
    if (listener_.joinable()) return path_;
    options_ = options;
    const std::string dir = on_demand_dir(options.socket_dir);
    prepare_dir(dir);
    const std::string path = fmt::format("{}/{}.sock", dir, current_pid());
    sockaddr_un address{};
    if (path.size() >= sizeof(address.sun_path)) {
        throw std::invalid_argument(fmt::format("stint: enable_on_demand(): socket path \"{}\" is too long", path));
    }
    const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) throw std::system_error(errno, std::generic_category(), "stint: enable_on_demand(): socket()");
    address.sun_family = AF_UNIX;
    std::memcpy(address.sun_path, path.c_str(), path.size() + 1);
    ::unlink(path.c_str());  // a socket left by an earlier process of this pid
    if (::bind(fd, reinterpret_cast<const sockaddr*>(&address), sizeof(address)) != 0 || ::listen(fd, 8) != 0) {
        const int error = errno;
        ::close(fd);
        throw std::system_error(error, std::generic_category(),
                                "stint: enable_on_demand(): cannot listen on " + path);
    }
    ::chmod(path.c_str(), 0600);
    if (::pipe2(wake_, O_CLOEXEC) != 0) {
        const int error = errno;
        ::close(fd);
        ::unlink(path.c_str());
        throw std::system_error(error, std::generic_category(), "stint: enable_on_demand(): pipe()");
    }
    listen_fd_ = fd;
    path_ = path;
    owner_pid_ = current_pid();
    stopping_ = false;
    listener_ = std::thread([this] { listen(); });
    return path_;
}

void on_demand_server::stop() {
    std::lock_guard lock(control_);
    if (!listener_.joinable()) return;
    {
        std::lock_guard state(mutex_);
        stopping_ = true;
    }
    wake_capture_.notify_all();
    const char byte = 0;
    [[maybe_unused]] const ssize_t n = ::write(wake_[1], &byte, 1);
    listener_.join();
    if (capture_.joinable()) capture_.join();
    ::close(listen_fd_);
    ::close(wake_[0]);
    ::close(wake_[1]);
    ::unlink(path_.c_str());
    listen_fd_ = -1;
    path_.clear();
}

std::string on_demand_server::path() const {
    std::lock_guard lock(control_);
    return path_;
}

void on_demand_server::prepare_dir(const std::string& dir) {
    if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
        throw std::system_error(errno, std::generic_category(), "stint: enable_on_demand(): cannot make " + dir);
    }
    struct stat info{};
    if (::lstat(dir.c_str(), &info) != 0) {
        throw std::system_error(errno, std::generic_category(), "stint: enable_on_demand(): cannot read " + dir);
    }
    if (!S_ISDIR(info.st_mode) || info.st_uid != ::geteuid() || (info.st_mode & 0077) != 0) {
        throw std::runtime_error(fmt::format(
            "stint: enable_on_demand(): {} must be a directory of this user (uid {}) with mode 0700; it is not. "
            "Fix: remove it, or set STINT_ON_DEMAND_DIR (on_demand_options::socket_dir) to another",
            dir, ::geteuid()));
    }
}

void on_demand_server::listen() noexcept {
    const own_allocation_scope own;  // the listener's memory is not the program's
    name_this_thread("stint on-demand");
    for (;;) {
        pollfd fds[2] = {{listen_fd_, POLLIN, 0}, {wake_[0], POLLIN, 0}};
        if (::poll(fds, 2, -1) < 0 && errno != EINTR) return;
        if ((fds[1].revents & POLLIN) != 0) return;
        if ((fds[0].revents & POLLIN) == 0) continue;
        const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
        if (fd < 0) continue;
        try {
            serve(fd);
        } catch (...) {
            answer(fd, "error: the service could not take the request (out of memory)");
            ::close(fd);
        }
    }
}

void on_demand_server::serve(int fd) {
    ucred peer{};
    socklen_t size = sizeof(peer);
    if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &peer, &size) != 0 || peer.uid != ::geteuid()) {
        answer(fd, fmt::format("error: refused: requests are taken from uid {} only", ::geteuid()));
        ::close(fd);
        return;
    }
    const std::optional<std::string> line = read_line(fd, std::chrono::seconds(5));
    capture_request request;
    try {
        if (!line) throw std::invalid_argument("malformed request: no request line within 5 s");
        request = parse_capture_request(*line);
        const std::chrono::milliseconds longest =
            request.dump       ? std::chrono::milliseconds(0)
            : request.duration ? *request.duration
                               : request.timeout.value_or(options_.default_steps_timeout);
        if (longest > options_.max_capture) {
            throw std::invalid_argument(fmt::format("the capture may last {} ms at most; this one asks for {} ms",
                                                    options_.max_capture.count(), longest.count()));
        }
        output_file probe(request.output);  // an unwritable path fails now, before recording
    } catch (const std::exception& e) {
        answer(fd, fmt::format("error: {}", e.what()));
        ::close(fd);
        return;
    }
    std::lock_guard state(mutex_);
    if (capturing_) {
        answer(fd, fmt::format("error: busy: a capture (to {}) is already running; try again when it ends",
                               running_output_));
        ::close(fd);
        return;
    }
    if (capture_.joinable()) capture_.join();  // the last one, finished
    capturing_ = true;
    running_output_ = request.output;
    capture_ = std::thread([this, fd, request = std::move(request)] { capture(fd, request); });
}

void on_demand_server::capture(int fd, const capture_request& request) noexcept {
    const own_allocation_scope own;
    name_this_thread("stint capture");
    std::string reply;
    try {
        reply = request.dump ? dump_flight_recorder(request) : record(request);
    } catch (const std::exception& e) {
        reply = fmt::format("error: {}", e.what());
    } catch (...) {
        reply = "error: the capture failed";
    }
    {
        // Free before answering: a requester that asks again as soon as it reads the answer is not busy.
        std::lock_guard state(mutex_);
        capturing_ = false;
    }
    answer(fd, reply);
    ::close(fd);
}

std::string on_demand_server::dump_flight_recorder(const capture_request& request) {
    const std::optional<flight_dump> written = the_running_flight_recorder().dump(request.output);
    if (!written) {
        return "error: no flight recorder is recording in this process (profiler_options::flight_recorder); "
               "ask for a capture instead";
    }
    return fmt::format("ok events={} overwritten={} path={} table={}", written->events, written->overwritten,
                       written->path, written->table_path);
}

std::string on_demand_server::record(const capture_request& request) {
    if (request.steps) return record_steps(request);
    profiler_options<> options;
    if (options_.buffer_budget_bytes != 0) options.buffer_budget_bytes = options_.buffer_budget_bytes;
    profiler<> prof(options);
    prof.start();
    const auto began = std::chrono::steady_clock::now();
    const std::int64_t first_step = step_tracker::current_step();
    std::string ended = "complete";
    {
        std::unique_lock state(mutex_);
        if (wake_capture_.wait_for(state, *request.duration, [this] { return stopping_; })) ended = "exiting";
    }
    prof.stop();
    const std::int64_t steps = step_tracker::current_step() - first_step;
    const auto took =
        std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - began);
    prof.export_chrome_trace(request.output);
    const profiler_stats& stats = prof.stats();
    return fmt::format("ok recorded={} dropped={} steps={} duration_ms={} ended={} path={}",
                       stats.recorded, stats.dropped, steps, took.count(), ended, request.output);
}

/// What a steps capture and the program's step() share, under the server's mutex_.
struct on_demand_server::step_window {
    step_window(profiler<>& p, std::int64_t steps) : prof(p), wanted(steps) {}
    profiler<>& prof;
    std::int64_t wanted;
    std::int64_t recorded_steps = 0;  // whole steps in the session: ProfilerStep#N spans ended
    bool started = false;
    bool finished = false;  // stopped after `wanted` steps, or failed to start (error says why)
    std::string error;
    std::chrono::steady_clock::time_point began{};
    std::optional<record_function> span;  // the step now recording: ProfilerStep#<global step>
};

void on_demand_server::on_step(std::int64_t global_step) noexcept {
    on_demand_server& server = the_on_demand_server();
    const own_allocation_scope own;  // the capture's memory is not the program's
    std::lock_guard state(server.mutex_);
    step_window* window = server.steps_;
    if (window == nullptr || window->finished) return;
    try {
        if (window->started) {
            window->span.reset();  // the step that just ended, whole
            if (++window->recorded_steps >= window->wanted) {
                window->prof.stop();
                window->finished = true;
                server.wake_capture_.notify_all();
                return;
            }
        } else {
            window->prof.start();
            window->started = true;
            window->began = std::chrono::steady_clock::now();
        }
        std::array<char, 48> name{};  // "ProfilerStep#" and at most 20 digits
        const auto written = fmt::format_to_n(name.data(), name.size(), "ProfilerStep#{}", global_step);
        window->span.emplace(std::string_view(name.data(), written.size));
    } catch (const std::exception& e) {
        // The program's step() must not fail for a capture: the capture fails and says why.
        window->span.reset();
        window->error = e.what();
        window->finished = true;
        server.wake_capture_.notify_all();
    }
}

std::string on_demand_server::record_steps(const capture_request& request) {
    profiler_options<> options;
    if (options_.buffer_budget_bytes != 0) options.buffer_budget_bytes = options_.buffer_budget_bytes;
    profiler<> prof(options);
    step_window window(prof, *request.steps);
    const auto timeout = request.timeout.value_or(options_.default_steps_timeout);
    std::string ended = "complete";
    {
        std::unique_lock state(mutex_);
        steps_ = &window;
        set_step_observer(&on_step);
        const bool woken = wake_capture_.wait_for(state, timeout, [&] { return stopping_ || window.finished; });
        set_step_observer(nullptr);
        steps_ = nullptr;  // a step() now finds no window (it takes mutex_ first)
        if (!window.finished) {
            ended = woken ? "exiting" : "timeout";
            window.span.reset();  // the step in progress, cut short: in the file, not counted
            if (window.started) prof.stop();
        }
    }
    if (!window.error.empty()) return fmt::format("error: {}", window.error);
    if (!window.started) {
        return fmt::format("error: {}: no step came within {} ms (steps are profiler::step() or "
                           "step_tracker::increment_step()); nothing was written",
                           ended, timeout.count());
    }
    const auto took =
        std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - window.began);
    prof.export_chrome_trace(request.output);
    const profiler_stats& stats = prof.stats();
    return fmt::format("ok recorded={} dropped={} steps={} duration_ms={} ended={} path={}", stats.recorded,
                       stats.dropped, window.recorded_steps, took.count(), ended, request.output);
}

inline namespace STINT_DETAIL_ABI_NAMESPACE {
on_demand_server& the_on_demand_server() {
    static on_demand_server server;
    return server;
}
}  // namespace STINT_DETAIL_ABI_NAMESPACE

}  // namespace stint::detail

namespace stint {

std::string enable_on_demand(const on_demand_options& options) {
    return detail::the_on_demand_server().start(options);
}

void disable_on_demand() { detail::the_on_demand_server().stop(); }

}  // namespace stint

namespace stint::detail {

bool enable_on_demand_from_environment() noexcept {
    const char* value = std::getenv("STINT_ON_DEMAND");
    if (value == nullptr || *value == '\0' || std::string_view(value) == "0") return false;
    try {
        enable_on_demand();
        return true;
    } catch (const std::exception& e) {
        warn(fmt::format("stint: STINT_ON_DEMAND is set but on-demand capture is off: {}", e.what()));
        return false;
    }
}

}  // namespace stint::detail
