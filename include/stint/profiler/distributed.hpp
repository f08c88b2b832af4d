#pragma once
// Which rank of a multi-process job this process is, so traces carry Kineto's top-level
// "distributedInfo" object and multi-rank tools (HTA, TensorBoard's distributed view) group files
// by rank.

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <iterator>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>

#include <fmt/format.h>

#include "stint/detail/export_macros.hpp"
#include "stint/export/json_writer.hpp"
#include "stint/profiler/warning.hpp"

namespace stint {

/// This process's place in a distributed job, as torch.distributed reports it.
///
///     stint::set_distributed_info({.rank = 3, .world_size = 8, .backend = "nccl"});
struct distributed_info {
    std::int64_t rank = 0;        ///< 0 <= rank < world_size
    std::int64_t world_size = 1;  ///< number of processes in the job
    std::string backend{};        ///< communication backend ("nccl", "gloo", "mpi"); "" when unknown

    friend bool operator==(const distributed_info&, const distributed_info&) = default;
};

}  // namespace stint

namespace stint::detail {
inline namespace STINT_DETAIL_ABI_NAMESPACE {

/// What the program said with set_distributed_info(). Leaked on purpose, like the registry.
struct distributed_state {
    std::mutex mutex;
    std::optional<distributed_info> info;
};

STINT_DETAIL_EXPORT inline distributed_state& the_distributed_state() {
    static distributed_state* const instance = new distributed_state();
    return *instance;
}

}  // namespace STINT_DETAIL_ABI_NAMESPACE

/// The environment variable's value as a non-negative integer; nullopt when it is unset, and a
/// warning (once per variable and value) when it is set but not such a number.
template <class Unused = void>
std::optional<std::int64_t> env_int(deferred_t<const char*, Unused> name) {
    const char* text = std::getenv(name);
    if (text == nullptr) return std::nullopt;
    errno = 0;
    char* end = nullptr;
    const long long value = std::strtoll(text, &end, 10);
    if (*text == '\0' || *end != '\0' || errno == ERANGE || value < 0) {
        warn_once(fmt::format("stint.distributed.env.{}={}", name, text),
                  fmt::format("{}='{}' is not a non-negative integer; traces carry no distributedInfo", name, text));
        return std::nullopt;
    }
    return static_cast<std::int64_t>(value);
}

/// The job as torchrun (and most launchers) describe it in the environment: RANK (else LOCAL_RANK)
/// and WORLD_SIZE (else LOCAL_WORLD_SIZE, with LOCAL_RANK). nullopt when no rank is set or a value
/// is unusable; a rank without a size warns once.
template <class Unused = void>
std::optional<distributed_info> distributed_info_from_env() {
    // Named through Unused (detail/deferred.hpp): the messages below are checked only where this is used.
    const bool global = std::getenv("RANK") != nullptr;
    const deferred_t<const char*, Unused> rank_name = global ? "RANK" : "LOCAL_RANK";
    const deferred_t<const char*, Unused> size_name = global ? "WORLD_SIZE" : "LOCAL_WORLD_SIZE";
    if (std::getenv(rank_name) == nullptr) return std::nullopt;
    const std::optional<std::int64_t> rank = env_int(rank_name);
    if (!rank) return std::nullopt;
    if (std::getenv(size_name) == nullptr) {
        warn_once(fmt::format("stint.distributed.env.no_{}", size_name),
                  fmt::format("{} is set but {} is not; traces carry no distributedInfo", rank_name, size_name));
        return std::nullopt;
    }
    const std::optional<std::int64_t> size = env_int(size_name);
    if (!size) return std::nullopt;
    if (*rank >= *size) {
        warn_once(fmt::format("stint.distributed.env.range.{}.{}", *rank, *size),
                  fmt::format("{}={} is not below {}={}; traces carry no distributedInfo", rank_name, *rank,
                              size_name, *size));
        return std::nullopt;
    }
    return distributed_info{*rank, *size, {}};
}

/// `{"backend": "nccl", "rank": 3, "world_size": 8}`: the fields torch's profiler writes.
template <class Unused = void>
std::string distributed_info_json(const deferred_t<distributed_info, Unused>& info) {
    deferred_t<fmt::memory_buffer, Unused> out;
    fmt::format_to(std::back_inserter(out), "{{\"backend\": ");
    append_json_string(out, info.backend);
    fmt::format_to(std::back_inserter(out), ", \"rank\": {}, \"world_size\": {}}}", info.rank, info.world_size);
    return fmt::to_string(out);
}

}  // namespace stint::detail

namespace stint {

/// Tells stint which rank this process is; every trace exported afterwards carries it as the
/// top-level "distributedInfo" object. Overrides the environment. Throws std::invalid_argument
/// unless 0 <= rank < world_size.
///
///     stint::set_distributed_info({.rank = comm.rank(), .world_size = comm.size(), .backend = "mpi"});
template <class Unused = void>
void set_distributed_info(detail::deferred_t<distributed_info, Unused> info) {
    if (info.world_size < 1 || info.rank < 0 || info.rank >= info.world_size) {
        throw std::invalid_argument(fmt::format(
            "stint: set_distributed_info(): need 0 <= rank < world_size, got rank={} world_size={}", info.rank,
            info.world_size));
    }
    detail::distributed_state& state = detail::the_distributed_state();
    std::lock_guard lock(state.mutex);
    state.info = std::move(info);
}

/// Forgets what set_distributed_info() said; the environment applies again.
///
///     stint::clear_distributed_info();
template <class = void>
void clear_distributed_info() {
    detail::distributed_state& state = detail::the_distributed_state();
    std::lock_guard lock(state.mutex);
    state.info.reset();
}

/// What traces say about this process's rank: set_distributed_info()'s value, else the environment
/// (RANK and WORLD_SIZE, or LOCAL_RANK and LOCAL_WORLD_SIZE, as torchrun sets them), else nullopt
/// (a single-process run: no "distributedInfo" in the trace).
///
///     if (auto info = stint::current_distributed_info()) fmt::print("rank {}\n", info->rank);
template <class = void>
std::optional<distributed_info> current_distributed_info() {
    {
        detail::distributed_state& state = detail::the_distributed_state();
        std::lock_guard lock(state.mutex);
        if (state.info) return state.info;
    }
    return detail::distributed_info_from_env();
}

}  // namespace stint
