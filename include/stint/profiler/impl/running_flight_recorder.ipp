#pragma once
// The bodies of profiler/running_flight_recorder.hpp.
#include "stint/profiler/running_flight_recorder.hpp"

#include <stdexcept>  // std::invalid_argument

#include <fmt/core.h>  // fmt::format

namespace stint::detail {

void running_flight_recorder::set(void* profiler, dump_function dumper) {
    const std::lock_guard lock(mutex_);
    profiler_ = profiler;
    dump_ = dumper;
}

void running_flight_recorder::clear(const void* profiler) noexcept {
    const std::lock_guard lock(mutex_);
    if (profiler_ == profiler) profiler_ = nullptr;
}

std::optional<flight_dump> running_flight_recorder::dump(const std::string& path) {
    const std::lock_guard lock(mutex_);
    if (profiler_ == nullptr) return std::nullopt;
    return dump_(profiler_, path);
}

inline namespace STINT_DETAIL_ABI_NAMESPACE {
running_flight_recorder& the_running_flight_recorder() {
    static auto* const running = new running_flight_recorder();
    return *running;
}
}  // namespace STINT_DETAIL_ABI_NAMESPACE

std::optional<dump_format> dump_format_of(std::string_view path) noexcept {
    if (path.ends_with(".json") || path.ends_with(".json.gz")) return dump_format::chrome;
    if (path.ends_with(".pftrace") || path.ends_with(".perfetto-trace")) return dump_format::perfetto;
    return std::nullopt;
}

void require_dump_format(std::string_view call, std::string_view path) {
    if (!dump_format_of(path)) {
        throw std::invalid_argument(fmt::format("stint: {}(\"{}\"): the trace format is chosen by the path's ending; "
                                                "give .json, .json.gz or .pftrace",
                                                call, path));
    }
}

}  // namespace stint::detail
