#!/usr/bin/env bash
# Compiles the backend's C++ against torch 2.x headers, twice:
#   - the BATON_TORCH_2 variant (c10d::Backend as the base class), against
#     Debian 13's libtorch-dev;
#   - the same with BATON_TORCH_CUDA (CUDA tensors on their current stream),
#     against Debian 13's libtorch-cuda-dev (contrib) and /usr/local/cuda.
# Downloads the two .debs (headers only; nothing is installed) into a
# scratch folder. Compile-only: linking and running need a torch 2.x
# installation.
#   python/check_torch2.sh [libtorch-dev .deb URL] [libtorch-cuda-dev .deb URL]
set -euo pipefail
cd "$(dirname "$0")"
pool=http://deb.debian.org/debian/pool
url=${1:-$pool/main/p/pytorch/libtorch-dev_2.6.0+dfsg-7_amd64.deb}
cuda_url=${2:-$pool/contrib/p/pytorch-cuda/libtorch-cuda-dev_2.6.0+dfsg-7+b1_amd64.deb}
cuda_inc=${CUDA_HOME:-/usr/local/cuda}/include
work=$(mktemp -d /tmp/baton-torch2.XXXXXX)
trap 'rm -rf "$work"' EXIT
python_inc=$(/usr/bin/python3 -c 'import sysconfig; print(sysconfig.get_paths()["include"])')

# compile VARIANT DEB_URL EXTRA_FLAGS...: every source against that package's headers.
compile() {
  local variant=$1 deb_url=$2
  shift 2
  curl -fsS --max-time 300 -o "$work/$variant.deb" "$deb_url"
  dpkg-deb -x "$work/$variant.deb" "$work/$variant"
  local inc=$work/$variant/usr/include
  for f in csrc/*.cc; do
    echo "$variant: compiling $f against $(basename "$deb_url")"
    g++ -std=c++17 -c -o "$work/$variant-$(basename "$f").o" -DBATON_TORCH_2 -DTORCH_EXTENSION_NAME=_C \
      -DTORCH_API_INCLUDE_EXTENSION_H -isystem "$inc" -isystem "$inc/torch/csrc/api/include" -isystem "$python_inc" \
      "$@" -I../client/include -Wall -Wextra "$f" &
  done
  local fail=0
  for job in $(jobs -p); do wait "$job" || fail=1; done
  ((fail == 0)) && echo "$variant: every source compiles" || { echo "$variant: compile errors"; return 1; }
}

compile torch2 "$url"
if [[ -f $cuda_inc/cuda_runtime_api.h ]]; then
  compile torch2-cuda "$cuda_url" -DBATON_TORCH_CUDA -isystem "$cuda_inc"
else
  echo "torch2-cuda: skipped (no CUDA toolkit headers in $cuda_inc)"
fi
