#pragma once
// tensorboard_trace_handler's bodies: unique file names in a directory made on demand.
#include "stint/export/tensorboard.hpp"

#include <algorithm>     // std::max
#include <cerrno>        // errno, EEXIST
#include <chrono>        // std::chrono::system_clock
#include <cstddef>       // std::size_t
#include <stdexcept>     // std::invalid_argument
#include <system_error>  // std::system_error, std::generic_category
#include <utility>       // std::move

#include "stint/detail/platform.hpp"

// POSIX calls instead of <filesystem>, which costs every file that includes stint.hpp.
#if defined(__unix__) || defined(__APPLE__)
#include <sys/stat.h>  // mkdir, stat
#include <unistd.h>    // gethostname
#else
#include <filesystem>  // std::filesystem::create_directories
#endif

namespace stint::detail {

std::int64_t next_trace_stamp_ms() {
    const std::int64_t now = std::chrono::duration_cast<std::chrono::milliseconds>(
                                 std::chrono::system_clock::now().time_since_epoch())
                                 .count();
    trace_stamp_state& state = the_trace_stamp_state();
    std::lock_guard lock(state.mutex);
    state.last_ms = std::max(now, state.last_ms + 1);
    return state.last_ms;
}

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

bool path_exists(const std::string& path) {
#if defined(__unix__) || defined(__APPLE__)
    struct stat info = {};
    return ::stat(path.c_str(), &info) == 0;
#else
    std::error_code error;
    return std::filesystem::exists(path, error);
#endif
}

std::string current_host_name() {
#if defined(__unix__) || defined(__APPLE__)
    char name[256] = {};
    if (::gethostname(name, sizeof(name) - 1) == 0 && name[0] != '\0') return name;
#endif
    return "localhost";
}

}  // namespace stint::detail

namespace stint {

tensorboard_trace_handler::tensorboard_trace_handler(std::string dir, std::string worker_name, bool use_gzip)
    : dir_(std::move(dir)), worker_name_(std::move(worker_name)), use_gzip_(use_gzip) {
    if (dir_.empty()) throw std::invalid_argument("stint: tensorboard_trace_handler(): the directory is empty");
}

std::string tensorboard_trace_handler::next_path() const {
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


}  // namespace stint
