#!/usr/bin/env bash
# Builds and runs examples/quickstart: profiles a small multi-threaded workload, prints the
# key-averages table and writes quickstart.pt.trace.json in the current directory. (Release -O3 with
# gcc 12 trips a false -Wstringop-overflow inside fmt 9, so this build does not use -Werror; the test
# builds do.)
set -euo pipefail
here=$(pwd)
root="$(cd "$(dirname "$0")/.." && pwd)"
bash "$root/tools/install_deps.sh"
cd "$root"
[ -f build-demo/build.ninja ] || meson setup build-demo -Dtests=false -Dbench=false --buildtype=release -Dwerror=false >/dev/null
ninja -C build-demo examples/quickstart >/dev/null || { ninja -C build-demo examples/quickstart | tail -20; exit 1; }
cd "$here"
"$root/build-demo/examples/quickstart"
