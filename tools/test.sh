#!/usr/bin/env bash
# Builds stint's tests with gcc 12 and clang 14 (-Wall -Wextra -Wpedantic -Werror), runs every test
# binary, and ends with one line "N passed, N failed". Exit status is non-zero on any failure.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/install_deps.sh
for compiler in gcc clang; do
  dir=build-test-$compiler
  cxx=g++; [ "$compiler" = clang ] && cxx=clang++
  if [ ! -f "$dir/build.ninja" ]; then
    CXX=$cxx meson setup "$dir" -Dtests=true -Dexamples=true -Dbench=false --buildtype=debugoptimized >/dev/null
  fi
  if ! ninja -C "$dir" -j2 >/dev/null; then
    ninja -C "$dir" -j1 2>&1 | tail -40
    echo "0 passed, 1 failed"
    exit 1
  fi
done
python3 tools/run_tests.py build-test-gcc build-test-clang
