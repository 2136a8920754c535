#!/usr/bin/env bash
# Packs what the GPU check needs into one folder that runs on a machine with
# an NVIDIA GPU but none of Baton's dependencies and no package archive to
# fetch them from (the GPU machines lent to this project: docs/gpu.md).
#   scripts/gpu-bundle.sh [DIR]     (default: gpu-bundle/, ignored by git)
#
# Builds with -DBATON_CUDA=ON (into ${BATON_BUILD_DIR:-build-gpu}), then puts
# in DIR/bin the programs scripts/gpu-check.sh runs, in DIR/client-lib
# libbaton for the PyTorch check (not relocated), and in DIR/lib every
# shared library they load, the C library and its loader included, so that
# the programs do not depend on the other machine's libraries at all. The
# driver (libcuda.so.1) is the one thing taken from the GPU machine: Baton
# loads it at run time. Every program's interpreter and library path point
# at $BATON_BUNDLE_ROOT (default /tmp/baton-gpu), where gpu-check.sh --bundle
# copies the folder before it runs anything: an ELF interpreter must be an
# absolute path.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-gpu-bundle}
root=${BATON_BUNDLE_ROOT:-/tmp/baton-gpu}
build=${BATON_BUILD_DIR:-build-gpu}

scripts/install-deps.sh
if ! command -v patchelf >/dev/null; then
  sudo_cmd=()
  [[ $(id -u) -ne 0 ]] && sudo_cmd=(sudo)
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends patchelf >/dev/null
fi
BATON_BUILD_DIR=$build scripts/build.sh -DBATON_CUDA=ON -DBATON_TORCH=OFF 2>&1 | tail -1

programs=(batond baton-run batonctl baton-bench baton-gpu-bench baton_gpu_tests baton_test_rank)
rm -rf "$out"
mkdir -p "$out/bin" "$out/lib"
for p in "${programs[@]}"; do
  cp "$build/bin/$p" "$out/bin/"
done

# Every library the programs load (ldd follows the whole tree), and the C
# library's parts that the driver may load by name after them.
libs=()
for p in "${programs[@]}"; do
  while read -r path; do libs+=("$path"); done < <(ldd "$build/bin/$p" | awk '$3 ~ /^\// {print $3} $1 ~ /^\// {print $1}')
done
libc_dir=$(dirname "$(ldd "$build/bin/batond" | awk '$1 == "libc.so.6" {print $3}')")
for extra in libdl.so.2 libpthread.so.0 librt.so.1 libm.so.6 libresolv.so.2; do
  [[ -e $libc_dir/$extra ]] && libs+=("$libc_dir/$extra")
done
for l in $(printf '%s\n' "${libs[@]}" | sort -u); do
  cp -L "$l" "$out/lib/$(basename "$l")"
done
loader=$(basename "$(ldd "$build/bin/batond" | awk '$1 ~ /ld-linux/ {print $1}')")

# For the PyTorch check (scripts/gpu-torch-check.sh): libbaton as built, not
# relocated, with the two libraries it needs beyond the C and C++ runtime. A
# Python process of the GPU machine loads it with that machine's own C
# library, so it must not bring the bundle's.
mkdir -p "$out/client-lib"
cp -L "$build/lib/libbaton.so.0" "$out/client-lib/"
ln -sf libbaton.so.0 "$out/client-lib/libbaton.so"
while read -r path; do
  case $(basename "$path") in
    libspdlog* | libfmt*) cp -L "$path" "$out/client-lib/" ;;
  esac
done < <(ldd "$build/lib/libbaton.so.0" | awk '$3 ~ /^\// {print $3}')

# Debug information is most of the size (the device takes 64 MiB in all).
strip --strip-debug "$out"/bin/* "$out"/lib/* "$out"/client-lib/*.so.*
for p in "$out"/bin/*; do
  patchelf --set-interpreter "$root/lib/$loader" --force-rpath --set-rpath "$root/lib" "$p"
done
# The C library's own parts find each other; every other library gets the
# path too, in case it carried a search path of its own.
for l in "$out"/lib/*; do
  case $(basename "$l") in
    ld-linux* | libc.so.* | libm.so.* | libdl.so.* | libpthread.so.* | librt.so.* | libresolv.so.*) ;;
    *) patchelf --force-rpath --set-rpath "$root/lib" "$l" ;;
  esac
done
{
  echo "root $root"
  echo "built $(date -u +%Y-%m-%dT%H:%M:%SZ) from $(git rev-parse --short HEAD 2>/dev/null || echo unknown)$(git diff --quiet 2>/dev/null || echo ' with uncommitted changes')"
  echo "cuda $(/usr/local/cuda/bin/nvcc --version 2>/dev/null | awk '/release/ {print $5 $6}')"
} >"$out/BUNDLE"
echo "gpu-bundle: $out ($(du -sh "$out" | cut -f1)); run it with: scripts/gpu-check.sh [--budget SECONDS] --bundle $out [OUTDIR]"
