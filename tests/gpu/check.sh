#!/usr/bin/env bash
# The GPU check of stint's CUDA collection, in one call on a machine with a GPU (design §3, "On a GPU"):
# gpu_check (versions, the clock, record strides, runtime and driver launches, launch cost before, during
# and after a session, a CUDA graph and cuBLAS, back-to-back sessions, sync events on and off, CUPTI's
# overhead records, teardown while 4 threads launch, STINT_CUPTI_LIBRARY=/nonexistent, drift over 20 s),
# the GPU smoke test, and torch_check.py (stint beside torch.profiler in one process, and their
# per-kernel costs on the same workload). One line each: PASS, FAIL or INFO.
#
# usage: tests/gpu/check.sh [--bin BIN_DIR] [--report FILE]
#   --bin BIN_DIR  the binaries, made beforehand where stint's build dependencies are (the GPU machine
#                  has no fmt, doctest, nlohmann-json or zlib headers): tests/gpu/make_bin_dir.sh BIN_DIR
#                  puts gpu_check, gpu_smoke_tests and libstint_gpu_torch_side.so there with every
#                  shared library they need that a bare system lacks (checked with ldd; they find them
#                  through their $ORIGIN rpath). Without --bin, make_bin_dir.sh runs here first.
#   --report FILE  where the report goes when $OUT is not set; $OUT/gpu-check-report.txt when it is;
#                  else /tmp/stint-gpu-check-<time>.txt. Never inside the work tree.
#
# Time: every step has its own limit and together they stay under 8 minutes: build 100 s (only without
# --bin), probe 15 s, gpu_check 180 s, smoke test 45 s, torch check 90 s, nvidia-smi 10 s, and 5 s of
# grace after each SIGTERM: 465 s at most. A step that runs out is killed
# (its whole process group) and gets a FAIL line saying so; one killed by a signal gets a FAIL line
# naming it; one that fails without a FAIL line of its own gets one with its last 40 lines. Exit status
# 0 when no line says FAIL; 0 with one line where there is no GPU.
#
# Environment: STINT_GPU_CHECK_PYTHON (the Python with torch; python3), STINT_GPU_CHECK_NO_TORCH=1 (no
# torch there: its step is an INFO line, not a FAIL), STINT_GPU_CHECK_STEP_TIMEOUT (every step's limit,
# in seconds: the dry run's, tests/gpu/check_dry_run.py).
set -uo pipefail
set +m  # no job control: each step's setsid then makes it a process group of its own, killed as one
root=$(cd "$(dirname "$0")/../.." && pwd)
bin=""
report=""
while [ $# -gt 0 ]; do
  case "$1" in
    --bin) bin=${2:?--bin needs a folder}; shift 2 ;;
    --report) report=${2:?--report needs a file}; shift 2 ;;
    -h | --help) sed -n '2,/^set -uo/p' "$0" | sed '$d'; exit 0 ;;
    *) echo "check.sh: unknown argument '$1' (usage: tests/gpu/check.sh [--bin BIN_DIR] [--report FILE])" >&2; exit 2 ;;
  esac
done
if [ -n "${OUT:-}" ]; then
  report="$OUT/gpu-check-report.txt"
elif [ -z "$report" ]; then
  report="/tmp/stint-gpu-check-$(date -u +%Y%m%dT%H%M%SZ).txt"
fi
case "$(realpath -m "$report")/" in
  "$root"/*) echo "check.sh: the report '$report' would be inside the work tree; set OUT or give --report elsewhere" >&2; exit 2 ;;
esac
mkdir -p "$(dirname "$report")" && : >"$report" || { echo "check.sh: cannot write the report '$report'" >&2; exit 2; }
python=${STINT_GPU_CHECK_PYTHON:-python3}
logs=$(mktemp -d)
# Only the script itself cleans up: a background subshell (the watchdog) keeps this trap, and runs it
# even when killed.
trap '[ "$BASHPID" = "$$" ] && rm -rf "$logs"' EXIT

say() { printf '%s\n' "$*" | tee -a "$report"; }

# Kills the step's process group once it has run `limit` seconds (TERM, then KILL 5 s later), noting
# which signal ended it in `marker`. Polls, so nothing of it outlives the step.
watchdog() {
  trap - EXIT
  local pid=$1 limit=$2 marker=$3 ticks=0
  while kill -0 "$pid" 2>/dev/null; do
    if [ "$ticks" -ge $((limit * 10)) ]; then
      echo SIGTERM >"$marker"
      kill -TERM -- "-$pid" 2>/dev/null
      for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.1; done
      echo SIGKILL >"$marker"
      kill -KILL -- "-$pid" 2>/dev/null
      return 0
    fi
    sleep 0.1
    ticks=$((ticks + 1))
  done
}

# run_step NAME LIMIT MODE OK COMMAND...: runs COMMAND in a process group of its own under its limit.
# MODE "lines": its output goes into the report as it is (its own PASS/FAIL/INFO lines); "quiet": only
# its last 40 lines, and only when it fails. OK: the exit codes that are no failure ("0 3"). Sets
# step_rc; a FAIL line for a timeout, a signal, or another exit code with no FAIL line of its own.
run_step() {
  local name=$1 limit=${STINT_GPU_CHECK_STEP_TIMEOUT:-$2} mode=$3 ok=" $4 "
  shift 4
  local log="$logs/$name.log" marker="$logs/$name.timeout"
  rm -f "$marker"
  setsid "$@" >"$log" 2>&1 </dev/null &
  local pid=$!
  watchdog "$pid" "$limit" "$marker" &
  local dog=$!
  wait "$pid"
  step_rc=$?
  wait "$dog" 2>/dev/null  # it sees the step gone within 0.1 s (never signalled: see the EXIT trap)
  kill -KILL -- "-$pid" 2>/dev/null  # what it left running (a child of a crashed step)
  [ "$mode" = lines ] && tee -a "$report" <"$log"
  if [ -s "$marker" ]; then
    say "FAIL $name: timed out after $limit s, killed with $(cat "$marker") (exit $step_rc)"
  elif [ "$step_rc" -gt 128 ] && [ "$step_rc" -lt 160 ]; then
    say "FAIL $name: killed by signal SIG$(kill -l $((step_rc - 128)) 2>/dev/null || echo $((step_rc - 128))) (exit $step_rc)"
  elif [[ "$ok" != *" $step_rc "* ]] && { [ "$mode" = quiet ] || ! grep -q '^FAIL' "$log"; }; then
    say "FAIL $name: exit $step_rc"
  else
    [[ "$ok" == *" $step_rc "* ]]
    return
  fi
  if [ "$mode" = quiet ]; then  # "lines": all of it is in the report already
    say "  its last 40 lines:"
    tail -n 40 "$log" | sed 's/^/  | /' | tee -a "$report"
  fi
  return 1
}

finish() {
  local passed failed
  passed=$(grep -c '^PASS' "$report")
  failed=$(grep -c '^FAIL' "$report")
  echo "gpu check: $passed passed, $failed failed (report: $report)"
  [ "$failed" -eq 0 ]
  exit $?
}

say "gpu check, $(date -u +%Y-%m-%dT%H:%M:%SZ), $(uname -srm), commit $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)"
if [ -z "$bin" ]; then
  bin="$logs/bin"
  run_step build 100 quiet 0 "$root/tests/gpu/make_bin_dir.sh" "$bin" || finish
  say "INFO build: $(tail -n 1 "$logs/build.log")"
fi
for f in gpu_check gpu_smoke_tests; do
  [ -x "$bin/$f" ] || { say "FAIL binaries: $bin/$f is missing (make the folder with tests/gpu/make_bin_dir.sh)"; finish; }
done
[ -f "$bin/COMMIT" ] && say "INFO binaries: built from commit $(tr '\n' ' ' <"$bin/COMMIT")"
run_step probe 15 quiet "0 3" "$bin/gpu_check" probe
if [ "$step_rc" -eq 3 ]; then  # no driver or no device: nothing to check
  say "$(tail -n 1 "$logs/probe.log")"
  exit 0
fi
[ "$step_rc" -eq 0 ] || finish
if command -v nvidia-smi >/dev/null 2>&1; then
  say "INFO nvidia-smi: $(timeout 10 nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>&1 | head -n 1)"
fi
run_step gpu_check 180 lines 0 "$bin/gpu_check"
run_step smoke_test 45 quiet "0 77" "$bin/gpu_smoke_tests"
summary=$(grep -E '^\[doctest\] test cases:' "$logs/smoke_test.log" | tail -n 1)
if [ "$step_rc" -eq 0 ]; then
  say "PASS smoke test (tests/gpu/smoke_test.cpp): $summary $(grep -E 'per launch:|clock alignment:' "$logs/smoke_test.log" | head -n 3 | tr '\n' ' ')"
elif [ "$step_rc" -eq 77 ]; then
  say "INFO smoke test: $(tail -n 1 "$logs/smoke_test.log")"
fi
if [ "${STINT_GPU_CHECK_NO_TORCH:-0}" = 1 ]; then
  say "INFO torch check: not run (STINT_GPU_CHECK_NO_TORCH=1)"
else
  run_step torch_check 90 lines 0 env PYTHONUNBUFFERED=1 "$python" "$root/tests/gpu/torch_check.py" "$bin"
fi
finish
