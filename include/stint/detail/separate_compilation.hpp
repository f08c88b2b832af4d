#pragma once
// Header-only (the default) or compiled once, as Boost.Asio does it.
//
// Header-only: every session-side function is `inline` and its body comes with its header (the header
// includes its `impl/*.ipp` file at its end), so one file that includes <stint/stint.hpp> builds and
// links with nothing else.
//
// Compiled once: a program defines STINT_SEPARATE_COMPILATION in every one of its files (a build flag)
// and includes <stint/impl/src.hpp> in exactly one of them (or links stint::compiled, which does). The
// headers then give declarations only, and the session side (profiler core, drain, analysis,
// exporters, flight recorder, on-demand, MPI glue) is compiled in that one file.
//
// The recording side (scopes, ops, the thread buffers: what <stint/annotate.hpp> gives) is the same
// in both: it stays inline, and links safely between files built either way.

#include "stint/detail/require_cxx20.hpp"

#if defined(STINT_SEPARATE_COMPILATION) && defined(STINT_HEADER_ONLY)
#error "stint: STINT_SEPARATE_COMPILATION and STINT_HEADER_ONLY are both defined. Fix: 1. define STINT_SEPARATE_COMPILATION in every file of the program and include <stint/impl/src.hpp> in one, or 2. define neither (header-only)"
#endif

#if defined(STINT_SEPARATE_COMPILATION)
/// Declares a session-side function whose body <stint/impl/src.hpp> compiles once.
#define STINT_DECL
/// The inline namespace of the types whose members <stint/impl/src.hpp> compiles (the profiler and its
/// core): a file built header-only and one built with STINT_SEPARATE_COMPILATION name them apart, so a
/// program that mixes the two fails to link, naming this namespace, instead of mixing two builds.
#define STINT_DETAIL_BUILD_NAMESPACE compiled
#else
#define STINT_HEADER_ONLY 1
#define STINT_DECL inline
#define STINT_DETAIL_BUILD_NAMESPACE header_only
#endif

#if defined(STINT_SEPARATE_COMPILATION)
namespace stint::detail {
/// Defined only by <stint/impl/src.hpp>. A program built with STINT_SEPARATE_COMPILATION that never
/// compiles that file fails to link with this name in the error, rather than running without a session
/// side.
void stint_impl_src_hpp_must_be_included_in_one_file_of_a_program_built_with_STINT_SEPARATE_COMPILATION() noexcept;
}  // namespace stint::detail
#define STINT_DETAIL_REQUIRE_COMPILED_SESSION_SIDE() \
    ::stint::detail::stint_impl_src_hpp_must_be_included_in_one_file_of_a_program_built_with_STINT_SEPARATE_COMPILATION()
#else
#define STINT_DETAIL_REQUIRE_COMPILED_SESSION_SIDE() static_cast<void>(0)
#endif
