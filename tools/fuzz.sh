#!/usr/bin/env bash
# Fuzzes the exporters: builds tests/fuzz/exporters_fuzz (clang, libFuzzer + ASan + UBSan) in build-fuzz
# and runs it for SECONDS (default 60) over the corpus kept in tests/fuzz/corpus. New inputs go to a
# temporary directory, never into the repository. Exits non-zero on a crash, a leak, a timeout or a
# failed check, and prints the reproducer's path. Ends with one line:
#     fuzz: <executions> executions in <seconds> s (<n>/s), corpus <files> files, <new> new inputs
#
#     bash tools/fuzz.sh            # 60 s
#     bash tools/fuzz.sh 600        # 10 min
#     bash tools/fuzz.sh 300 --merge   # then add the inputs that reach new edges to tests/fuzz/corpus
# Reproduce a crash: build-fuzz/tests/fuzz/exporters_fuzz <reproducer>
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
merge=${2:-}
if ! [[ "$seconds" =~ ^[0-9]+$ ]] || { [ -n "$merge" ] && [ "$merge" != "--merge" ]; }; then
  echo "usage: bash tools/fuzz.sh [seconds] [--merge]" >&2
  exit 2
fi

# clang-14 and its libFuzzer runtime (libclang-rt-14-dev): tools/install_deps.sh installs what is missing.
fuzzer_runtime() { clang++ -print-file-name=libclang_rt.fuzzer-x86_64.a 2>/dev/null; }
if ! command -v clang++ >/dev/null || [ ! -f "$(fuzzer_runtime)" ]; then
  bash tools/install_deps.sh
fi

if [ ! -f build-fuzz/build.ninja ]; then
  CXX=clang++ meson setup build-fuzz -Dfuzz=true -Dtests=true -Dexamples=false -Dbench=false -Dwerror=true \
    --buildtype=debugoptimized >/dev/null
fi
ninja -C build-fuzz -j"${FUZZ_BUILD_JOBS:-2}" tests/fuzz/exporters_fuzz >/dev/null
target=build-fuzz/tests/fuzz/exporters_fuzz

corpus=tests/fuzz/corpus
work=$(mktemp -d /tmp/stint-fuzz.XXXXXX)
mkdir -p "$work/new" "$work/artifacts"
log="$work/fuzz.log"
echo "fuzzing $target for $seconds s over $corpus (new inputs: $work/new, log: $log)"
set +e
# The first directory receives new inputs; the repository's corpus is only read.
"$target" "$work/new" "$corpus" -dict=tests/fuzz/exporters.dict -max_total_time="$seconds" -timeout=10 \
  -rss_limit_mb=2048 -max_len=65536 -print_final_stats=1 -artifact_prefix="$work/artifacts/" >"$log" 2>&1
status=$?
set -e

stat() { grep -E "^stat::$1:" "$log" | tail -n 1 | awk '{print $2}'; }
executions=$(stat number_of_executed_units)
per_second=$(stat average_exec_per_sec)
elapsed=$(grep -oE 'DONE.* in [0-9]+ second' "$log" | grep -oE '[0-9]+ second' | cut -d' ' -f1 || true)
if [ "$status" -ne 0 ]; then
  grep -E 'ERROR|exporters_fuzz:|SUMMARY' "$log" | head -n 20 || true
  tail -n 40 "$log"
  for reproducer in "$work"/artifacts/*; do
    [ -e "$reproducer" ] && echo "reproducer: $reproducer (run: $target $reproducer)"
  done
  echo "fuzz: FAILED (status $status) after ${executions:-?} executions; log: $log"
  exit 1
fi
if [ -n "$merge" ]; then
  # Adds to the corpus only the new inputs that reach new edges (hit counts and comparisons aside,
  # which would keep hundreds of near-copies); the seeds and earlier entries stay.
  "$target" -merge=1 -use_counters=0 -use_cmp=0 -max_len=65536 "$corpus" "$work/new" >>"$log" 2>&1
  echo "merged into $corpus: $(find "$corpus" -type f | wc -l) files, $(cat "$corpus"/* | wc -c) bytes"
fi
echo "fuzz: ${executions:-?} executions in ${elapsed:-$seconds} s (${per_second:-?}/s)," \
  "corpus $(find "$corpus" -type f | wc -l) files, $(find "$work/new" -type f | wc -l) new inputs"
