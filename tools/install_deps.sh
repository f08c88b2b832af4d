#!/usr/bin/env bash
# Installs the Debian 12 packages a use of stint needs (idempotent; run as root).
# usage: install_deps.sh [demo|mpi|all]   (default: all)
#   demo: a compiler, meson and ninja, fmt and zlib: what tools/demo.sh builds (examples/quickstart)
#   mpi:  the demo's, and OpenMPI: examples/mpi_job (docs/guide/08-many-processes.md)
#   all:  everything the tests, benchmarks and CI use (tools/test.sh, .ci/run): clang 14 and its
#         sanitizer runtimes, Boost, doctest, Google Benchmark, nlohmann-json, protobuf, OpenMPI,
#         DLPack and libtorch
set -euo pipefail
demo=(g++ meson ninja-build pkg-config libfmt-dev zlib1g-dev)
mpi=("${demo[@]}" libopenmpi-dev openmpi-bin)
all=("${mpi[@]}" clang-14 libclang-rt-14-dev cmake git python3 libboost1.81-dev doctest-dev libbenchmark-dev
     nlohmann-json3-dev binutils diffutils protobuf-compiler libdlpack-dev libtorch-dev)
case "${1:-all}" in
  demo) packages=("${demo[@]}") ;;
  mpi) packages=("${mpi[@]}") ;;
  all) packages=("${all[@]}") ;;
  *) echo "usage: install_deps.sh [demo|mpi|all]" >&2; exit 2 ;;
esac
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
