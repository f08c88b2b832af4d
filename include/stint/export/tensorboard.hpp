#pragma once
// torch.profiler.tensorboard_trace_handler: an on_trace_ready callback that writes each schedule
// window as `<dir>/<worker>.<ms since epoch>.pt.trace.json[.gz]`, the layout the TensorBoard profiler
// plugin reads.

#include <algorithm>
#include <chrono>
#include <cerrno>
#include <cstdint>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <system_error>
#include <utility>

#include "stint/detail/export_macros.hpp"
#include "stint/detail/platform.hpp"

// POSIX calls instead of <filesystem>, which costs every file that includes stint.hpp.
#if defined(__unix__) || defined(__APPLE__)
#include <sys/stat.h>
#include <unistd.h>
#else
#include <filesystem>
#endif

namespace stint::detail {
inline namespace STINT_DETAIL_ABI_NAMESPACE {

/// The last time stamp a trace handler used in this process: each new file takes a later one, so
/// two windows saved within one millisecond still get distinct names.
struct trace_stamp_state {
    std::mutex mutex;
    std::int64_t last_ms = 0;
};

STINT_DETAIL_EXPORT inline trace_stamp_state& the_trace_stamp_state() {
    static trace_stamp_state* const instance = new trace_stamp_state();
    return *instance;
}

}  // namespace STINT_DETAIL_ABI_NAMESPACE

/// Milliseconds since the Unix epoch, strictly greater than every earlier result in this process.
inline std::int64_t next_trace_stamp_ms() {
    const std::int64_t now = std::chrono::duration_cast<std::chrono::milliseconds>(
                                 std::chrono::system_clock::now().time_since_epoch())
                                 .count();
    trace_stamp_state& state = the_trace_stamp_state();
    std::lock_guard lock(state.mutex);
    state.last_ms = std::max(now, state.last_ms + 1);
    return state.last_ms;
}

/// Makes `dir` and its missing parents (mkdir -p); an error when it is not a directory after.
template <class = void>
std::error_code make_directories(const std::string& dir) {
#if defined(__unix__) || defined(__APPLE__)
    for (std::size_t end = 1; end <= dir.size(); ++end) {
        if (end != dir.size() && dir[end] != '/') continue;
        if (::mkdir(dir.substr(0, end).c_str(), 0777) != 0 && errno != EEXIST) {
            return {errno, std::generic_category()};
        }
    }
    struct stat info = {};
    if (::stat(dir.c_str(), &info) != 0) return {errno, std::generic_category()};
    if (!S_ISDIR(info.st_mode)) return std::make_error_code(std::errc::not_a_directory);
    return {};
#else
    std::error_code error;
    std::filesystem::create_directories(dir, error);
    if (!error && !std::filesystem::is_directory(dir)) error = std::make_error_code(std::errc::not_a_directory);
    return error;
#endif
}

/// Whether anything is at `path`.
template <class = void>
bool path_exists(const std::string& path) {
#if defined(__unix__) || defined(__APPLE__)
    struct stat info = {};
    return ::stat(path.c_str(), &info) == 0;
#else
    std::error_code error;
    return std::filesystem::exists(path, error);
#endif
}

/// The host's name ("localhost" when the OS does not say).
inline std::string current_host_name() {
#if defined(__unix__) || defined(__APPLE__)
    char name[256] = {};
    if (::gethostname(name, sizeof(name) - 1) == 0 && name[0] != '\0') return name;
#endif
    return "localhost";
}

}  // namespace stint::detail

namespace stint {

template <class = void>
class basic_tensorboard_trace_handler;
/// basic_tensorboard_trace_handler's one form (a template only so that a file that does not use it does not compile it).
using tensorboard_trace_handler = basic_tensorboard_trace_handler<>;

/// An `on_trace_ready` callback that writes each saved window into `dir` as
/// `<worker_name>.<ms since epoch>.pt.trace.json` (`.pt.trace.json.gz` with `use_gzip`), the file
/// layout of torch.profiler.tensorboard_trace_handler, which the TensorBoard profiler plugin reads.
/// `dir` is created when a window is saved, if needed. `worker_name` defaults to
/// `<host name>_<pid>`. File names never repeat within a process, even for two windows saved in
/// the same millisecond, and a name already on disk is skipped.
///
///     stint::profiler<> prof({
///         .schedule = stint::schedule({.wait = 1, .warmup = 1, .active = 2}),
///         .on_trace_ready = stint::tensorboard_trace_handler("./log"),
///     });
template <class>
class basic_tensorboard_trace_handler {
public:
    /// Throws std::invalid_argument when `dir` is empty.
    explicit basic_tensorboard_trace_handler(std::string dir, std::string worker_name = {}, bool use_gzip = false)
        : dir_(std::move(dir)), worker_name_(std::move(worker_name)), use_gzip_(use_gzip) {
        if (dir_.empty()) throw std::invalid_argument("stint: tensorboard_trace_handler(): the directory is empty");
    }

    /// Writes the profiler's current window (`prof.export_chrome_trace`) under a new name in the
    /// directory. Throws std::system_error when the directory cannot be created or the file written.
    template <class Profiler>
    void operator()(Profiler& prof) const {
        prof.export_chrome_trace(next_path());
    }

    /// A new file path in the directory, creating the directory if needed (what operator() writes to).
    ///
    ///     std::string path = handler.next_path();   // "./log/host_1234.1718000000000.pt.trace.json"
    [[nodiscard]] std::string next_path() const {
        if (const std::error_code error = detail::make_directories(dir_)) {
            throw std::system_error(error, "stint: tensorboard_trace_handler: can't create directory '" + dir_ + "'");
        }
        const std::string worker = worker_name_.empty()
                                       ? detail::current_host_name() + "_" + std::to_string(detail::current_pid())
                                       : worker_name_;
        const char* suffix = use_gzip_ ? ".pt.trace.json.gz" : ".pt.trace.json";
        for (;;) {
            const std::string path = dir_ + (dir_.back() == '/' ? "" : "/") + worker + "." +
                                     std::to_string(detail::next_trace_stamp_ms()) + suffix;
            if (!detail::path_exists(path)) return path;
        }
    }

    /// The directory the files go to.
    [[nodiscard]] const std::string& dir() const noexcept { return dir_; }

private:
    std::string dir_;
    std::string worker_name_;
    bool use_gzip_;
};

}  // namespace stint
