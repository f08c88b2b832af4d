#pragma once
// stint is C++20 (concepts, requires-clauses, designated initialisers). Without this check a C++17
// build fails with hundreds of unrelated errors, the first of them "'requires' does not name a type"
// deep in config.hpp. Every header that needs C++20 reaches this one before its own code.
// (MSVC reports __cplusplus as 199711L unless /Zc:__cplusplus; _MSVC_LANG is its real mode.)

#if defined(_MSVC_LANG)
#define STINT_DETAIL_CPLUSPLUS _MSVC_LANG
#else
#define STINT_DETAIL_CPLUSPLUS __cplusplus
#endif

#if STINT_DETAIL_CPLUSPLUS < 202002L
#error "stint needs C++20, but this file is compiled as an older C++ (__cplusplus < 202002L). Fix, one of:"
#error "1. compile with -std=c++20 (g++ 12 or later, clang++ 14 or later);"
#error "2. with CMake, link the target stint::stint (it requires cxx_std_20) or set CMAKE_CXX_STANDARD 20;"
#error "3. with meson, add default_options: ['cpp_std=c++20'] to project()."
// Stop here: the rest of stint would only add hundreds of errors that follow from this one. A missing
// header is the one error gcc and clang treat as fatal.
#include <stint: C++20 is required, see the error above>  // deliberately missing: a fatal error stops here
#endif
