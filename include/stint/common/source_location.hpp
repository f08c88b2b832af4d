#pragma once
// Where a site is in the source: vocabulary shared by the recording engine and the analysis.

#include "stint/detail/require_cxx20.hpp"

#include <cstdint>  // std::uint32_t

namespace stint {

/// Where a site is in the source: `file(line): function` in stacks. (std::source_location is
/// unusable with clang 14 and libstdc++ 12; the builtins behind it work in both compilers.)
struct source_location {
    const char* file = "";
    const char* function = "";
    std::uint32_t line = 0;
};

}  // namespace stint
