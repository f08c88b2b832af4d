#pragma once
// The on-demand server (design §13): the socket, its requests and the captures they ask for. A program
// opts in by including <stint/profiler/on_demand.hpp>, which also reads STINT_ON_DEMAND at start-up.

#include <chrono>              // std::chrono::milliseconds
#include <condition_variable>  // std::condition_variable
#include <cstddef>             // std::size_t
#include <cstdint>             // std::int64_t, std::uint64_t
#include <mutex>               // std::mutex
#include <optional>            // std::optional
#include <string>              // std::string
#include <string_view>         // std::string_view
#include <thread>              // std::thread

#include "stint/detail/export_macros.hpp"
#include "stint/detail/separate_compilation.hpp"

namespace stint {

/// How a process answers capture requests.
struct on_demand_options {
    /// Where the socket goes: `<dir>/<pid>.sock`. Empty: $STINT_ON_DEMAND_DIR, else /tmp/stint-<uid>.
    /// The directory is made with mode 0700 and must belong to this user and be closed to others.
    std::string socket_dir;
    /// The longest capture a request may ask for (a duration, or the time a steps capture may wait).
    std::chrono::milliseconds max_capture{std::chrono::minutes(10)};
    /// How long a steps capture waits for its steps when the request gives no timeout.
    std::chrono::milliseconds default_steps_timeout{std::chrono::seconds(60)};
    /// The capture session's record budget (profiler_options::buffer_budget_bytes); 0: its default.
    std::size_t buffer_budget_bytes = 0;
};

namespace detail {

/// One parsed request: `capture duration_ms=N output=PATH`, `capture steps=N [timeout_ms=N]
/// output=PATH` or `dump output=PATH` (the running flight recorder's window), one line; `output=` takes
/// the rest of the line (a path may hold spaces).
struct capture_request {
    bool dump = false;
    std::optional<std::chrono::milliseconds> duration;
    std::optional<std::int64_t> steps;
    std::optional<std::chrono::milliseconds> timeout;
    std::string output;
};

/// Parses a request line (without its newline); throws std::invalid_argument saying what is wrong.
STINT_DECL capture_request parse_capture_request(std::string_view line);

/// The directory of the sockets: `dir`, $STINT_ON_DEMAND_DIR, or /tmp/stint-<uid>.
STINT_DECL std::string on_demand_dir(const std::string& dir);

/// Writes `text` and a newline to a connection, ignoring a peer that went away.
STINT_DECL void answer(int fd, std::string_view text) noexcept;

/// Reads one line (up to 4096 bytes) within `timeout`; nullopt when none came.
STINT_DECL std::optional<std::string> read_line(int fd, std::chrono::milliseconds timeout);

/// The listener: one thread accepts connections and answers those it refuses at once; a capture runs
/// on a thread of its own, one at a time. Its socket is removed when it stops, at the latest when the
/// process exits (a capture then in progress is cut short, written and answered).
class on_demand_server {
public:
    on_demand_server() = default;
    on_demand_server(const on_demand_server&) = delete;
    on_demand_server& operator=(const on_demand_server&) = delete;
    STINT_DECL ~on_demand_server();

    STINT_DECL std::string start(const on_demand_options& options);

    /// Stops listening; a capture in progress ends now, is written and answered.
    STINT_DECL void stop();

    [[nodiscard]] STINT_DECL std::string path() const;

private:
    // Makes `dir` with mode 0700, or checks that it is this user's own and closed to others.
    STINT_DECL static void prepare_dir(const std::string& dir);

    STINT_DECL void listen() noexcept;

    // Answers a connection: refused at once (another user, malformed, busy, unwritable output) or
    // handed to the capture thread, which answers when the trace is written.
    STINT_DECL void serve(int fd);

    STINT_DECL void capture(int fd, const capture_request& request) noexcept;

    // A "dump" request: the running flight recorder's window, written while it keeps recording.
    STINT_DECL static std::string dump_flight_recorder(const capture_request& request);

    // A "capture" request: a session of its own for the duration or the steps asked for.
    STINT_DECL std::string record(const capture_request& request);

    // A steps capture: its session starts and stops inside the program's step() (at the rises of the
    // global step, step_tracker's observer), so the trace holds whole steps, each a ProfilerStep#N.
    struct step_window;  // impl/on_demand_server.ipp
    STINT_DECL std::string record_steps(const capture_request& request);
    STINT_DECL static void on_step(std::int64_t global_step) noexcept;

    mutable std::mutex control_;  // start() and stop()
    std::mutex mutex_;            // what the listener and the capture share
    std::condition_variable wake_capture_;
    on_demand_options options_;
    std::string path_;
    std::uint64_t owner_pid_ = 0;
    int listen_fd_ = -1;
    int wake_[2] = {-1, -1};
    bool stopping_ = false;
    bool capturing_ = false;
    std::string running_output_;
    step_window* steps_ = nullptr;  // the steps capture waiting for or recording steps (under mutex_)
    std::thread listener_;
    std::thread capture_;
};

inline namespace STINT_DETAIL_ABI_NAMESPACE {
/// One listener per process, even when several shared libraries include stint (export_macros.hpp).
/// Destroyed at exit, which ends a capture in progress and removes the socket.
STINT_DECL STINT_DETAIL_EXPORT on_demand_server& the_on_demand_server();
}  // namespace STINT_DETAIL_ABI_NAMESPACE

}  // namespace detail

/// Starts accepting capture requests (idempotent): a thread listens on `<dir>/<pid>.sock`, a
/// Unix-domain socket only this user may use. Returns the socket's path. Throws std::system_error or
/// std::runtime_error, naming the path, when it cannot listen.
STINT_DECL std::string enable_on_demand(const on_demand_options& options = {});

/// Stops accepting requests and removes the socket; a capture in progress ends now, and its trace is
/// written and answered. The process's exit does the same.
STINT_DECL void disable_on_demand();

namespace detail {
/// STINT_ON_DEMAND=1 in the environment enables on-demand capture (read once); a failure to listen is
/// a warning, not an exception, as nothing could catch it. on_demand.hpp calls it at start-up.
STINT_DECL bool enable_on_demand_from_environment() noexcept;
}  // namespace detail

}  // namespace stint

#if defined(STINT_HEADER_ONLY)
#include "stint/profiler/impl/on_demand_server.ipp"
#endif
