#!/usr/bin/env bash
# Makes the BIN_DIR that tests/gpu/check.sh --bin runs, here, where stint's build dependencies are: the
# GPU machine has a compiler, CUDA 13, torch, meson, ninja and cmake, but no fmt, doctest, nlohmann-json
# or zlib headers, and no network. Builds gpu_check, gpu_smoke_tests and libstint_gpu_torch_side.so
# (release, CUDA runtime linked statically, CUPTI and the driver loaded at run time), copies them into
# BIN_DIR with every shared library they need that a bare glibc system does not have (libfmt, zlib: what
# ldd resolves outside the base set below), and checks with ldd, LD_LIBRARY_PATH unset, that every one
# resolves and each copied one from BIN_DIR itself (the binaries' rpath is $ORIGIN).
#
# usage: tests/gpu/make_bin_dir.sh BIN_DIR [BUILD_DIR]   (BUILD_DIR: build-gpu-bin in the work tree)
# Then, on the GPU machine: tests/gpu/check.sh --bin BIN_DIR (with the device tool: name BIN_DIR in carry;
# keep it inside the work tree's ignored build-* folders, e.g. build-gpu-bin/bin).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
out=${1:?usage: tests/gpu/make_bin_dir.sh BIN_DIR [BUILD_DIR]}
build=${2:-$root/build-gpu-bin}
if [ ! -f "$build/build.ninja" ]; then
  meson setup "$build" "$root" -Dtests=true -Dexamples=false -Dbench=false -Dcupti=enabled --buildtype=release
fi
targets=(tests/gpu_check tests/gpu_smoke_tests tests/libstint_gpu_torch_side.so)
ninja -C "$build" ${JOBS:+-j "$JOBS"} "${targets[@]}"
mkdir -p "$out"
for t in "${targets[@]}"; do cp -f "$build/$t" "$out/"; done
# Everything a glibc system with the NVIDIA driver has; the rest is copied.
base='^(linux-vdso\.so|linux-gate\.so|ld-linux[-a-z0-9_]*\.so|libc\.so|libm\.so|libdl\.so|libpthread\.so|librt\.so|libstdc\+\+\.so|libgcc_s\.so|libcuda\.so)'
copied=()
for f in "${targets[@]}"; do
  while read -r name arrow path _; do
    [ "$arrow" = "=>" ] || continue
    [[ "$name" =~ $base ]] && continue
    if [ "$path" = "not" ]; then echo "make_bin_dir: $name, needed by $f, is not found here" >&2; exit 1; fi
    cp -fL "$path" "$out/$name"
    copied+=("$name")
  done < <(env -u LD_LIBRARY_PATH ldd "$build/$f")
done
status=0
for f in "$out"/*; do
  [ -f "$f" ] || continue
  while read -r name arrow path _; do
    [ "$arrow" = "=>" ] || continue
    if [ "$path" = "not" ]; then echo "make_bin_dir: $(basename "$f") cannot find $name" >&2; status=1; continue; fi
    if ! [[ "$name" =~ $base ]] && [ "$(dirname "$(realpath "$path")")" != "$(realpath "$out")" ]; then
      echo "make_bin_dir: $(basename "$f") takes $name from $path, not from $out" >&2
      status=1
    fi
  done < <(env -u LD_LIBRARY_PATH ldd "$f")
done
[ "$status" -eq 0 ] || exit 1
# What they were built from, for check.sh to print beside the work tree's commit.
{ git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown; } >"$out/COMMIT"
[ -z "$(git -C "$root" status --porcelain --untracked-files=no 2>/dev/null)" ] || echo "(with uncommitted changes)" >>"$out/COMMIT"
echo "bin dir $out: ${targets[*]##*/} and $(printf '%s\n' "${copied[@]}" | sort -u | tr '\n' ' ')($(du -sh "$out" | cut -f1)), checked with ldd"
