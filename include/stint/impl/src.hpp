#pragma once
// The session side of stint, compiled once: include this header in exactly one file of a program built
// with STINT_SEPARATE_COMPILATION defined in every file (or link stint::compiled, which does).
// detail/separate_compilation.hpp says why and how.

#if !defined(STINT_SEPARATE_COMPILATION)
#error "stint: <stint/impl/src.hpp> compiles the session side for a program built with STINT_SEPARATE_COMPILATION. Fix: 1. define STINT_SEPARATE_COMPILATION in every file of the program (a build flag), or 2. don't include this file: a header-only build needs nothing more than <stint/stint.hpp>"
#endif

#include "stint/stint.hpp"

// Every impl/*.ipp file, in the order of the headers that declare them (tools/check_layout.py checks
// that none is missing).
#include "stint/profiler/impl/profiler_core.ipp"

namespace stint::detail {
void stint_impl_src_hpp_must_be_included_in_one_file_of_a_program_built_with_STINT_SEPARATE_COMPILATION() noexcept {}
}  // namespace stint::detail
