#!/usr/bin/env bash
# Builds and runs examples/quickstart: profiles a small multi-threaded workload, prints the
# key-averages table and writes quickstart.pt.trace.json in the current directory.
set -euo pipefail
here=$(pwd)
root="$(cd "$(dirname "$0")/.." && pwd)"
bash "$root/tools/install_deps.sh"
cd "$root"
[ -f build-demo/build.ninja ] || meson setup build-demo -Dtests=false -Dbench=false --buildtype=release >/dev/null
ninja -C build-demo examples/quickstart >/dev/null
cd "$here"
"$root/build-demo/examples/quickstart"
