#!/usr/bin/env bash
# Builds and runs examples/quickstart: profiles a small multi-threaded workload, prints the
# key-averages table and writes quickstart.pt.trace.json and quickstart.stacks in the current
# directory. A plain release build, as a user makes one (without -Werror, which is not a project default:
# gcc 12 at -O3 reports false -Wstringop-overflow inside fmt 9).
set -euo pipefail
here=$(pwd)
root="$(cd "$(dirname "$0")/.." && pwd)"
bash "$root/tools/install_deps.sh" demo  # only what the demo needs: a compiler, meson, fmt, zlib
cd "$root"
[ -f build-demo/build.ninja ] || meson setup build-demo -Dtests=false -Dbench=false -Dexamples=true --buildtype=release >/dev/null
ninja -C build-demo examples/quickstart >/dev/null || { ninja -C build-demo examples/quickstart | tail -20; exit 1; }
cd "$here"
"$root/build-demo/examples/quickstart"
