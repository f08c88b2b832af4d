#pragma once
// torch.profiler.tensorboard_trace_handler: an on_trace_ready callback that writes each schedule
// window as `<dir>/<worker>.<ms since epoch>.pt.trace.json[.gz]`, the layout the TensorBoard profiler
// plugin reads.

#include <cstdint>       // std::int64_t
#include <mutex>         // std::mutex
#include <string>        // std::string
#include <system_error>  // std::error_code

#include "stint/detail/export_macros.hpp"
#include "stint/detail/separate_compilation.hpp"

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
STINT_DECL std::int64_t next_trace_stamp_ms();

/// Makes `dir` and its missing parents (mkdir -p); an error when it is not a directory after.
STINT_DECL std::error_code make_directories(const std::string& dir);

/// Whether anything is at `path`.
STINT_DECL bool path_exists(const std::string& path);

/// The host's name ("localhost" when the OS does not say).
STINT_DECL std::string current_host_name();

}  // namespace stint::detail

namespace stint {

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
class tensorboard_trace_handler {
public:
    /// Throws std::invalid_argument when `dir` is empty.
    STINT_DECL explicit tensorboard_trace_handler(std::string dir, std::string worker_name = {}, bool use_gzip = false);

    /// Writes the profiler's current window (`prof.export_chrome_trace`) under a new name in the
    /// directory. Throws std::system_error when the directory cannot be created or the file written.
    template <class Profiler>
    void operator()(Profiler& prof) const {
        prof.export_chrome_trace(next_path());
    }

    /// A new file path in the directory, creating the directory if needed (what operator() writes to).
    ///
    ///     std::string path = handler.next_path();   // "./log/host_1234.1718000000000.pt.trace.json"
    [[nodiscard]] STINT_DECL std::string next_path() const;

    /// The directory the files go to.
    [[nodiscard]] const std::string& dir() const noexcept { return dir_; }

private:
    std::string dir_;
    std::string worker_name_;
    bool use_gzip_;
};

}  // namespace stint

#if defined(STINT_HEADER_ONLY)
#include "stint/export/impl/tensorboard.ipp"
#endif
