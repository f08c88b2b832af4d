#pragma once
// with_stack at drain: each event's stack, innermost frame first, from its site's source location
// and its ancestors' (or from the native frames it recorded). Stacks are interned as a tree: events on
// the same call path share one stack, and a stack costs one node over its caller's, so a million
// events cost at most a million nodes however deep they nest.

#include <cstdint>      // std::uint64_t
#include <string>       // std::string
#include <string_view>  // std::string_view
#include <vector>       // std::vector

#include "stint/analysis/detail/event_store.hpp"
#include "stint/analysis/event_list.hpp"
#include "stint/detail/separate_compilation.hpp"

namespace stint::detail {

/// A source file as stacks show it (collapsed stacks, the trace's "Call stack", the table's Source
/// Location). `__FILE__` is the path the build gave the compiler, relative to the build directory
/// (meson, make: "../examples/quickstart.cpp") or absolute (CMake). Shown instead:
/// 1. "." components and "dir/.." pairs removed ("src/./a/../b.cpp" -> "src/b.cpp");
/// 2. an absolute path under `cwd` (the working directory when the stacks are built) made relative to
///    it ("/home/u/proj/src/a.cpp" in /home/u/proj -> "src/a.cpp"); other absolute paths stay whole;
/// 3. a relative path that climbs out of the build directory ("../src/a.cpp") and names a file from
///    `cwd` (a program run in its build directory, as tests are): from the source root where the
///    directory it climbs to looks like one (meson.build, CMakeLists.txt, Makefile or .git: a build
///    directory inside the source tree), else absolute (a build directory elsewhere: "/tmp/build"
///    and "../work/proj/src/a.cpp" show "/work/proj/src/a.cpp");
/// 4. otherwise its leading ".." components dropped ("../../src/a.cpp" -> "src/a.cpp"): the common
///    build directory inside the source tree, run from elsewhere.
/// A path that a build already shortened with -fmacro-prefix-map passes through unchanged.
[[nodiscard]] STINT_DECL std::string readable_source_path(std::string_view file, std::string_view cwd);

/// Sets `events[i].stack` for every event to its node in `stacks`, innermost frame first. On entry,
/// an event whose `stack` is not no_index recorded native frames: `native[stack]`, innermost first.
/// Events must be ordered parents first (as event_list_builder orders them). Stacks are interned as a
/// tree: a stack is its innermost frame on top of its parent's stack, the frame the site's location
/// (one per site) or, for names made at run time, the name; (frame, parent stack) -> stack. Memory is
/// linear in the events whatever their depth.
STINT_DECL void assign_call_stacks(event_store& events, const std::vector<std::vector<std::uint64_t>>& native,
                                   stack_tree& stacks);

}  // namespace stint::detail

#if defined(STINT_HEADER_ONLY)
#include "stint/analysis/detail/impl/call_stacks.ipp"
#endif
