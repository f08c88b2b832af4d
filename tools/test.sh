#!/usr/bin/env bash
# Builds stint's tests twice: with gcc 12 as a user's release build (-O3, NDEBUG), and with clang 14
# under AddressSanitizer and UndefinedBehaviorSanitizer (-O1, assertions on). Runs every test in both
# (doctest binaries, compile-fail rules, the code blocks of README and docs/, codegen) and ends with one
# line "N passed, N failed, N skipped": a suite this machine cannot build or run (no CUDA headers, no MPI, no
# GPU) is named with its reason and counted as skipped. Exit status is non-zero on any failure; a build
# that fails is one failure, named as such.
# Warnings are errors: clang's build passes -Werror; gcc 12 at -O3 reports false -Wrestrict and
# -Wstringop-overflow located inside libstdc++ and fmt 9 (/usr/include), so gcc's build fails on any
# warning located in stint's own code (include/, tests/, examples/: every path not under /usr/).
# (-Werror is this script's choice, not a default of the project: a user's build must not fail on
# those false warnings.) The check does not depend on what this run rebuilt: an object or target that
# warned is deleted, so every later run rebuilds it and warns again until the code is fixed. Unity builds (each test binary's sources compiled a few at a time) halve
# the build on two cores.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/install_deps.sh
common=(-Dtests=true -Dexamples=true -Dbench=false -Dunity=on -Dunity_size=10)
gcc_options=("${common[@]}" -Dbuildtype=release -Dwerror=false)
# b_lundef=false: clang links the sanitizer runtimes into executables, not shared libraries. -O1 with line
# tables only (what a sanitizer's reports need): 22 % less compile time than -O2 -g (one example, one run).
clang_options=("${common[@]}" -Doptimization=1 -Ddebug=false -Dcpp_args=-gline-tables-only -Dwerror=true
               -Db_sanitize=address,undefined -Db_lundef=false)
configure() {  # DIR CXX OPTIONS...: sets a build directory up, or brings its options up to date
  local dir=$1 cxx=$2; shift 2
  if [ -f "$dir/build.ninja" ]; then
    meson configure "$dir" "$@" >/dev/null
  else
    CXX=$cxx meson setup "$dir" "$@" >/dev/null
  fi
}
configure build-test-gcc g++ "${gcc_options[@]}"
configure build-test-clang-asan clang++ "${clang_options[@]}"
# The outputs (last word of ninja's "[n/m] Compiling C++ object OUT" line, printed when the command ends,
# before its output) whose commands warned in stint's own code.
warned_outputs() {  # LOG
  awk '/^\[[0-9]+\/[0-9]+\] / { out = $NF; next }
       /^[^ ]+:[0-9]+:[0-9]+: warning:/ && !/^\/usr\// && out != "" { print out }' "$1" | sort -u
}
for dir in build-test-gcc build-test-clang-asan; do
  log=$dir/meson-logs/test-build.log
  if ! ninja -C "$dir" -j2 >"$log" 2>&1; then
    ninja -C "$dir" -j1 2>&1 | tail -40
    echo "$dir: build FAILED (the whole log: $log)"
    echo "0 passed, 1 failed, 0 skipped"
    exit 1
  fi
  mapfile -t warned < <(warned_outputs "$log")
  if [ "${#warned[@]}" -gt 0 ]; then
    grep -E '^[^ ]+:[0-9]+:[0-9]+: warning:' "$log" | grep -v '^/usr/'
    (cd "$dir" && rm -f -- "${warned[@]}")  # rebuilt, and checked again, by the next run
    echo "$dir: build FAILED: warnings in stint's own code (above; the whole log: $log)"
    echo "0 passed, 1 failed, 0 skipped"
    exit 1
  fi
done
UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 ASAN_OPTIONS=detect_leaks=1 \
  python3 tools/run_tests.py build-test-gcc build-test-clang-asan
