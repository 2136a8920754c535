#!/usr/bin/env bash
# Compiles the backend's C++ against torch 2.x headers (the BATON_TORCH_2
# variant: c10d::Backend as the base class). Downloads Debian 13's
# libtorch-dev (headers only; nothing is installed) into a scratch folder.
# Compile-only: linking and running need a torch 2.x installation.
#   python/check_torch2.sh [libtorch-dev .deb URL]
set -euo pipefail
cd "$(dirname "$0")"
url=${1:-http://deb.debian.org/debian/pool/main/p/pytorch/libtorch-dev_2.6.0+dfsg-7_amd64.deb}
work=$(mktemp -d /tmp/baton-torch2.XXXXXX)
trap 'rm -rf "$work"' EXIT
curl -fsS --max-time 300 -o "$work/libtorch-dev.deb" "$url"
dpkg-deb -x "$work/libtorch-dev.deb" "$work/root"
inc=$work/root/usr/include
python_inc=$(/usr/bin/python3 -c 'import sysconfig; print(sysconfig.get_paths()["include"])')
for f in csrc/*.cc; do
  echo "compiling $f against $(basename "$url")"
  g++ -std=c++17 -c -o "$work/$(basename "$f").o" -DBATON_TORCH_2 -DTORCH_EXTENSION_NAME=_C \
    -DTORCH_API_INCLUDE_EXTENSION_H -isystem "$inc" -isystem "$inc/torch/csrc/api/include" -isystem "$python_inc" \
    -I../client/include -Wall -Wextra "$f" &
done
fail=0
for job in $(jobs -p); do wait "$job" || fail=1; done
((fail == 0)) && echo "torch 2.x variant: every source compiles" || { echo "torch 2.x variant: compile errors"; exit 1; }
