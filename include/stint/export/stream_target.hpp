#pragma once
// stint::stream_target: where profiler_options::stream_to streams a session (export/trace_stream.hpp).
// Made from a path where the program names one, and only there does it reach the streaming writer's code,
// so a program that never streams emits none of it (design §16, "pay for what you name").

#include <string>       // std::string
#include <string_view>  // std::string_view
#include <utility>      // std::move

#include "stint/detail/separate_compilation.hpp"

namespace stint {
namespace detail {

struct trace_stream_code;  // export/trace_stream.hpp

/// The table a stream_target made from a path points to (export/impl/trace_stream.ipp).
STINT_DECL const trace_stream_code& trace_stream_code_table() noexcept;

}  // namespace detail

/// A Chrome trace file (".json", or ".json.gz" for gzip) to stream a session to; empty: no streaming.
///
///     stint::profiler<> prof({.stream_to = "run.pt.trace.json.gz"});
class stream_target {
public:
    stream_target() = default;
    // Implicit, so that a path is the option's spelling: .stream_to = "run.json".
    stream_target(std::string path)  // NOLINT(google-explicit-constructor)
        : path_(std::move(path)), code_(path_.empty() ? nullptr : &detail::trace_stream_code_table()) {}
    stream_target(std::string_view path) : stream_target(std::string(path)) {}  // NOLINT(google-explicit-constructor)
    stream_target(const char* path) : stream_target(std::string(path)) {}  // NOLINT(google-explicit-constructor)

    [[nodiscard]] const std::string& path() const noexcept { return path_; }
    [[nodiscard]] bool empty() const noexcept { return path_.empty(); }
    /// The streaming writer's code (null when empty).
    [[nodiscard]] const detail::trace_stream_code* code() const noexcept { return code_; }

private:
    std::string path_;
    const detail::trace_stream_code* code_ = nullptr;
};

}  // namespace stint

#if defined(STINT_HEADER_ONLY)
#include "stint/export/trace_stream.hpp"  // the bodies the table points to
#endif
