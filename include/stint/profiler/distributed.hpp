#pragma once
// Which rank of a multi-process job this process is, so traces carry Kineto's top-level
// "distributedInfo" object and multi-rank tools (HTA, TensorBoard's distributed view) group files
// by rank.

#include <cstdint>   // std::int64_t
#include <mutex>     // std::mutex
#include <optional>  // std::optional
#include <string>    // std::string

#include "stint/detail/export_macros.hpp"
#include "stint/detail/separate_compilation.hpp"

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

STINT_DECL STINT_DETAIL_EXPORT distributed_state& the_distributed_state();

}  // namespace STINT_DETAIL_ABI_NAMESPACE

/// The environment variable's value as a non-negative integer; nullopt when it is unset, and a
/// warning (once per variable and value) when it is set but not such a number.
STINT_DECL std::optional<std::int64_t> env_int(const char* name);

/// The job as torchrun (and most launchers) describe it in the environment: RANK (else LOCAL_RANK)
/// and WORLD_SIZE (else LOCAL_WORLD_SIZE, with LOCAL_RANK). nullopt when no rank is set or a value
/// is unusable; a rank without a size warns once.
STINT_DECL std::optional<distributed_info> distributed_info_from_env();

/// `{"backend": "nccl", "rank": 3, "world_size": 8}`: the fields torch's profiler writes.
STINT_DECL std::string distributed_info_json(const distributed_info& info);

}  // namespace stint::detail

namespace stint {

/// Tells stint which rank this process is; every trace exported afterwards carries it as the
/// top-level "distributedInfo" object. Overrides the environment. Throws std::invalid_argument
/// unless 0 <= rank < world_size.
///
///     stint::set_distributed_info({.rank = comm.rank(), .world_size = comm.size(), .backend = "mpi"});
STINT_DECL void set_distributed_info(distributed_info info);

/// Forgets what set_distributed_info() said; the environment applies again.
///
///     stint::clear_distributed_info();
STINT_DECL void clear_distributed_info();

/// What traces say about this process's rank: set_distributed_info()'s value, else the environment
/// (RANK and WORLD_SIZE, or LOCAL_RANK and LOCAL_WORLD_SIZE, as torchrun sets them), else nullopt
/// (a single-process run: no "distributedInfo" in the trace).
///
///     if (auto info = stint::current_distributed_info()) fmt::print("rank {}\n", info->rank);
STINT_DECL std::optional<distributed_info> current_distributed_info();

}  // namespace stint

#if defined(STINT_HEADER_ONLY)
#include "stint/profiler/impl/distributed.ipp"
#endif
