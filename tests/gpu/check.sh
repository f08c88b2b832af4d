#!/usr/bin/env bash
# The GPU check of stint's CUDA collection (issue 34), in one call of a few minutes on a machine with a
# GPU: driver and CUPTI versions, the clock (a 5 ms %globaltimer kernel), each record kind's size in the
# real buffers against the headers, one runtime and one driver launch (API record, correlation id,
# threadId == gettid), launch cost in a fresh process before, during and after a session, a 3-kernel
# CUDA graph and a cuBLAS sgemm linked to their ops, three back-to-back sessions with nothing stale,
# STINT_CUPTI_LIBRARY=/nonexistent, drift over 20 s; then the GPU smoke test. Each line PASS, FAIL or
# INFO; the report is also written to $1 (default gpu-check-report.txt). Without a GPU it says so in one
# line and exits 0. What the CUPTI stand-in can show runs in CI: tests/device/cupti_test.cpp.
#
# usage: tests/gpu/check.sh [REPORT] [BIN_DIR]
#   BIN_DIR: a folder with gpu_check and gpu_smoke_tests already built (and any shared libraries they
#   need); otherwise they are built here with meson into build-gpu-check.
set -uo pipefail
cd "$(dirname "$0")/../.."
report=${1:-gpu-check-report.txt}
bin=${2:-}
if [ -z "$bin" ]; then
  if ! command -v nvidia-smi >/dev/null 2>&1 && [ ! -e /dev/nvidiactl ]; then
    echo "gpu check: no NVIDIA driver on this machine; nothing to check" | tee "$report"
    exit 0
  fi
  if [ ! -f build-gpu-check/build.ninja ]; then
    meson setup build-gpu-check -Dtests=true -Dexamples=false -Dbench=false -Dcupti=enabled \
      --buildtype=release >/dev/null || { echo "FAIL build: meson setup" | tee "$report"; exit 1; }
  fi
  ninja -C build-gpu-check tests/gpu_check tests/gpu_smoke_tests >/dev/null ||
    { echo "FAIL build: ninja (run it for the errors)" | tee "$report"; exit 1; }
  bin=build-gpu-check/tests
fi
export LD_LIBRARY_PATH="$bin${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
if ! probe=$("$bin/gpu_check" probe 2>&1); then
  if [ -n "$probe" ] && grep -q "no GPU here" <<<"$probe"; then
    echo "$probe" | tee "$report"
    exit 0
  fi
  echo "FAIL probe: $probe" | tee "$report"
  exit 1
fi
{
  echo "gpu check, $(date -u +%Y-%m-%dT%H:%M:%SZ), $(uname -r)"
  command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version --format=csv,noheader |
    sed 's/^/INFO nvidia-smi: /'
  timeout 420 "$bin/gpu_check"
  check=$?
  smoke=$(timeout 240 "$bin/gpu_smoke_tests" 2>&1)
  smoke_status=$?
  summary=$(grep -E '^\[doctest\] test cases:' <<<"$smoke" | tail -n 1)
  gpu_line=$(grep -E '^\[doctest\] MESSAGE|per launch:|clock alignment:' <<<"$smoke" | head -n 4 | tr '\n' ' ')
  if [ "$smoke_status" -eq 0 ]; then
    echo "PASS smoke test (tests/gpu/smoke_test.cpp): $summary $gpu_line"
  elif [ "$smoke_status" -eq 77 ]; then
    echo "INFO smoke test: $(tail -n 1 <<<"$smoke")"
  else
    echo "FAIL smoke test (exit $smoke_status): $summary"
    tail -n 40 <<<"$smoke"
  fi
  [ "$check" -eq 0 ] && { [ "$smoke_status" -eq 0 ] || [ "$smoke_status" -eq 77 ]; }
} 2>&1 | tee "$report"
status=${PIPESTATUS[0]}
echo "gpu check: $(grep -c '^PASS' "$report") passed, $(grep -c '^FAIL' "$report") failed (report: $report)"
exit "$status"
