#pragma once
// The bodies of profiler/distributed.hpp: the rank from set_distributed_info() or the environment, as JSON.
#include "stint/profiler/distributed.hpp"

#include <cerrno>     // errno, ERANGE
#include <cstdlib>    // std::getenv, std::strtoll
#include <iterator>   // std::back_inserter
#include <stdexcept>  // std::invalid_argument
#include <utility>    // std::move

#include <fmt/format.h>  // fmt::format, fmt::memory_buffer

#include "stint/common/number_text.hpp"

#include "stint/export/json_writer.hpp"
#include "stint/common/warning.hpp"

namespace stint::detail {
inline namespace STINT_DETAIL_ABI_NAMESPACE {

distributed_state& the_distributed_state() {
    static distributed_state* const instance = new distributed_state();
    return *instance;
}

}  // namespace STINT_DETAIL_ABI_NAMESPACE

std::optional<std::int64_t> env_int(const char* name) {
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

std::optional<distributed_info> distributed_info_from_env() {
    const bool global = std::getenv("RANK") != nullptr;
    const char* const rank_name = global ? "RANK" : "LOCAL_RANK";
    const char* const size_name = global ? "WORLD_SIZE" : "LOCAL_WORLD_SIZE";
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

std::string distributed_info_json(const distributed_info& info) {
    fmt::memory_buffer backend;
    append_json_string(backend, info.backend);
    std::string out = "{\"backend\": ";
    out.append(backend.data(), backend.size());
    out += ", \"rank\": ";
    append_integer(out, info.rank);
    out += ", \"world_size\": ";
    append_integer(out, info.world_size);
    out += '}';
    return out;
}

}  // namespace stint::detail

namespace stint {

void set_distributed_info(distributed_info info) {
    if (info.world_size < 1 || info.rank < 0 || info.rank >= info.world_size) {
        throw std::invalid_argument(fmt::format(
            "stint: set_distributed_info(): need 0 <= rank < world_size, got rank={} world_size={}", info.rank,
            info.world_size));
    }
    detail::distributed_state& state = detail::the_distributed_state();
    std::lock_guard lock(state.mutex);
    state.info = std::move(info);
}

void clear_distributed_info() {
    detail::distributed_state& state = detail::the_distributed_state();
    std::lock_guard lock(state.mutex);
    state.info.reset();
}

std::optional<distributed_info> current_distributed_info() {
    {
        detail::distributed_state& state = detail::the_distributed_state();
        std::lock_guard lock(state.mutex);
        if (state.info) return state.info;
    }
    return detail::distributed_info_from_env();
}

}  // namespace stint
