#!/usr/bin/env bash
# Builds stint's tests with gcc 12 and clang 14 (-Wall -Wextra -Wpedantic -Werror), runs every test
# (doctest binaries, compile-fail rules, the README's code blocks, codegen), and ends with one line
# "N passed, N failed". Exit status is non-zero on any failure. (-Werror is this script's choice, not a
# default of the project: a user's release build must not fail on gcc 12's false warnings in libstdc++.)
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/install_deps.sh
for compiler in gcc clang; do
  dir=build-test-$compiler
  cxx=g++; [ "$compiler" = clang ] && cxx=clang++
  if [ ! -f "$dir/build.ninja" ]; then
    CXX=$cxx meson setup "$dir" -Dwerror=true -Dtests=true -Dexamples=true -Dbench=false \
      --buildtype=debugoptimized >/dev/null
  fi
  if ! ninja -C "$dir" -j2 >/dev/null; then
    ninja -C "$dir" -j1 2>&1 | tail -40
    echo "0 passed, 1 failed"
    exit 1
  fi
done
python3 tools/run_tests.py build-test-gcc build-test-clang
