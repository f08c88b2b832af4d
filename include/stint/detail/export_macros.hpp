#pragma once
// Process-wide symbols and the ABI tag.
//
// One registry and one recording flag must exist per process even when several shared libraries
// (some built with -fvisibility=hidden) include stint. Their symbols are given default visibility
// explicitly, so the dynamic linker binds every copy to one definition (gcc emits them as
// STB_GNU_UNIQUE, clang as interposable weak symbols). The inline namespace carries the layout
// version: two stint versions in one process get distinct symbols instead of sharing a mismatched
// registry.

#include "stint/detail/require_cxx20.hpp"

#if defined(__GNUC__) || defined(__clang__)
#define STINT_DETAIL_EXPORT __attribute__((visibility("default")))
#define STINT_DETAIL_NOINLINE __attribute__((noinline))
#define STINT_DETAIL_COLD __attribute__((cold, noinline))
#define STINT_DETAIL_ALWAYS_INLINE inline __attribute__((always_inline))
#else
#define STINT_DETAIL_EXPORT
#define STINT_DETAIL_NOINLINE
#define STINT_DETAIL_COLD
#define STINT_DETAIL_ALWAYS_INLINE inline
#endif

#define STINT_DETAIL_ABI_NAMESPACE abi_v5

#define STINT_VERSION_MAJOR 0
#define STINT_VERSION_MINOR 1
#define STINT_VERSION_PATCH 0
#define STINT_VERSION_STRING "0.1.0"
