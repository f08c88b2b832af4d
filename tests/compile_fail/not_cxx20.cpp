// expect: stint needs C++20, but this file is compiled as an older C++ (__cplusplus < 202002L). Fix, one of:
// expect: 1. compile with -std=c++20
// expect: 2. with CMake, link the target stint::stint
// expect: 3. with meson, add default_options: ['cpp_std=c++20'] to project().
// reject: does not name a type
// reject: has not been declared
// Including stint in C++17 mode (tests/meson.build compiles this file with -std=c++17) stops at stint's
// #error with the fixes, before the first C++20 construct could produce a cascade of unrelated errors.
#include <stint/stint.hpp>

int main() { return 0; }
