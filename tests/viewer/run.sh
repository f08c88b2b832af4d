#!/usr/bin/env bash
# Runs every example of a build in a scratch directory and loads each trace and flame-graph file it
# writes into speedscope under Debian's headless Chromium (speedscope_check.mjs). Installs what it
# needs: the chromium package when /usr/bin/chromium is missing, and the npm packages pinned in
# package.json into $STINT_VIEWER_DEPS (default /tmp/stint-viewer), outside the repository.
# Also loads the device trace the unit tests write (tests/device_trace_test.cpp; required), and
# renders the memory timeline page they write (tests/memory_timeline_test.cpp) with
# memory_timeline_check.mjs: no console error, and a screenshot with the plot drawn in it.
# Usage: tests/viewer/run.sh [build dir with -Dexamples=true, default build-test-gcc]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=$(cd "${1:-$root/build-test-gcc}" && pwd)
deps=${STINT_VIEWER_DEPS:-/tmp/stint-viewer}

if [ ! -x /usr/bin/chromium ]; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
fi
mkdir -p "$deps"
if ! cmp -s "$here/package.json" "$deps/package.json" || [ ! -d "$deps/node_modules/speedscope" ]; then
  cp "$here/package.json" "$deps/package.json"
  (cd "$deps" && npm install --no-package-lock --no-audit --no-fund --loglevel=error)
fi

work=$(mktemp -d /tmp/stint-viewer-run.XXXXXX)
trap 'rm -rf "$work"' EXIT
for source in "$root"/examples/*.cpp; do
  example=$(basename "$source" .cpp)
  if [ "$example" = mpi_job ] && [ ! -x "$build/examples/$example" ]; then
    echo "examples/mpi_job is built only where MPI is found: not checked"; continue
  fi
  if [ "$example" = libtorch_training ] && [ ! -x "$build/examples/$example" ]; then
    echo "examples/libtorch_training is built only where libtorch is found: not checked"; continue
  fi
  mkdir "$work/$example"
  launch=()
  if [ "$example" = mpi_job ] && command -v mpirun >/dev/null; then
    # The job's trace with four ranks, each a process of its own.
    launch=(mpirun -np 4 --oversubscribe)
    [ "$(id -u)" = 0 ] && launch+=(--allow-run-as-root)
  fi
  (cd "$work/$example" && OMPI_MCA_btl_vader_single_copy_mechanism=none \
     "${launch[@]}" "$build/examples/$example" >output.txt 2>&1) ||
    { echo "example $example failed:"; cat "$work/$example/output.txt"; exit 1; }
done
# A device trace (hand-built GPU streams, flows, sync rows) from the unit tests: required, as is the
# memory timeline page (a test filter that matches nothing passes in doctest, so the files are checked).
[ -x "$build/tests/stint_tests" ] ||
  { echo "$build/tests/stint_tests is not built: no device trace or memory timeline page to check"; exit 1; }
mkdir "$work/device"
STINT_TEST_TRACE_DIR="$work/device" "$build/tests/stint_tests" -tc='*ac2g*' >"$work/device/output.txt" 2>&1 ||
  { echo "the device trace test failed:"; cat "$work/device/output.txt"; exit 1; }
[ -s "$work/device/device.pt.trace.json" ] ||
  { echo "the device trace test wrote no device.pt.trace.json:"; cat "$work/device/output.txt"; exit 1; }
mkdir "$work/memory"
STINT_TEST_TRACE_DIR="$work/memory" "$build/tests/stint_tests" -tc='*memory timeline page*' \
  >"$work/memory/output.txt" 2>&1 ||
  { echo "the memory timeline test failed:"; cat "$work/memory/output.txt"; exit 1; }
[ -s "$work/memory/memory_timeline.html" ] || { echo "the memory timeline test wrote no page"; exit 1; }
mapfile -t files < <(find "$work" -type f \( -name '*.pt.trace.json' -o -name '*.stacks' \) | sort)
if [ "${#files[@]}" -eq 0 ]; then echo "the examples wrote no trace"; exit 1; fi
status=0
node "$here/speedscope_check.mjs" "$deps" "${files[@]}" || status=1
mapfile -t pages < <(find "$work" -type f -name 'memory_timeline*.html' | sort)
if [ "${#pages[@]}" -gt 0 ]; then
  node "$here/memory_timeline_check.mjs" "$deps" "${pages[@]}" || status=1
fi
exit "$status"
