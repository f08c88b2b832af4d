#!/usr/bin/env bash
# Installs the Debian 12 packages stint's builds need (idempotent; run as root).
set -euo pipefail
packages=(g++ clang-14 libclang-rt-14-dev meson ninja-build pkg-config cmake python3
          libfmt-dev libboost1.81-dev doctest-dev libbenchmark-dev zlib1g-dev nlohmann-json3-dev
          binutils diffutils protobuf-compiler libopenmpi-dev openmpi-bin libdlpack-dev libtorch-dev)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
