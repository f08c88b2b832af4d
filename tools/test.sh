#!/usr/bin/env bash
# Builds stint's tests twice, -Wall -Wextra -Wpedantic -Werror: with gcc 12, and with clang 14 under
# AddressSanitizer and UndefinedBehaviorSanitizer. Runs every test in both (doctest binaries,
# compile-fail rules, the README's code blocks, codegen) and ends with one line "N passed, N failed".
# Exit status is non-zero on any failure. (-Werror is this script's choice, not a default of the
# project: a user's release build must not fail on gcc 12's false warnings in libstdc++.)
# Unity builds (each test binary's sources compiled a few at a time) halve the build on two cores.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/install_deps.sh
common=(-Dwerror=true -Dtests=true -Dexamples=true -Dbench=false --buildtype=debugoptimized
        -Dunity=on -Dunity_size=10)
if [ ! -f build-test-gcc/build.ninja ]; then
  CXX=g++ meson setup build-test-gcc "${common[@]}" >/dev/null
fi
if [ ! -f build-test-clang-asan/build.ninja ]; then
  # b_lundef=false: clang links the sanitizer runtimes into executables, not shared libraries.
  CXX=clang++ meson setup build-test-clang-asan "${common[@]}" -Db_sanitize=address,undefined -Db_lundef=false \
    >/dev/null
fi
for dir in build-test-gcc build-test-clang-asan; do
  if ! ninja -C "$dir" -j2 >/dev/null; then
    ninja -C "$dir" -j1 2>&1 | tail -40
    echo "0 passed, 1 failed"
    exit 1
  fi
done
UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 ASAN_OPTIONS=detect_leaks=1 \
  python3 tools/run_tests.py build-test-gcc build-test-clang-asan
