#!/usr/bin/env bash
# The PyTorch part of the GPU check (docs/pytorch.md, "CUDA tensors"): builds
# the baton backend against this machine's own torch (which has CUDA), then
# runs tests/python/cuda_test.py on 1 node x 2 ranks and 2 nodes x 1 rank.
#   scripts/gpu-torch-check.sh BIN CLIENT_LIB OUTDIR
# BIN holds baton-run (and the batond it starts); CLIENT_LIB holds libbaton
# and the libraries it needs beyond the C and C++ runtime (scripts/gpu-bundle.sh
# packs both). Needs python3 with torch, its headers and Python's, g++ and
# the CUDA toolkit's headers; exit status 77, with the reason, if one is
# missing.
set -uo pipefail
cd "$(dirname "$0")/.."
bin=${1:?usage: scripts/gpu-torch-check.sh BIN CLIENT_LIB OUTDIR}
client_lib=$(cd "${2:?}" && pwd)
out=${3:?}
python=${BATON_PYTHON:-python3}
skip() {
  echo "gpu-torch-check: skipped: $*"
  exit 77
}

command -v g++ >/dev/null || skip "no g++"
probe=$("$python" - <<'EOF'
import sysconfig, torch
from torch.utils import cpp_extension as e
print(torch.__version__)
print(int(torch.cuda.is_available()))
print(";".join(e.include_paths()))
print(sysconfig.get_paths()["include"])
print(sysconfig.get_config_var("EXT_SUFFIX"))
print(int(torch._C._GLIBCXX_USE_CXX11_ABI))
print(";".join(e.library_paths()))
for name in ("_PYBIND11_COMPILER_TYPE", "_PYBIND11_STDLIB", "_PYBIND11_BUILD_ABI"):
    print(getattr(torch._C, name, "") or "")
EOF
) || skip "$python cannot import torch"
mapfile -t f <<<"$probe"
torch_version=${f[0]} cuda_ok=${f[1]} python_inc=${f[3]} ext_suffix=${f[4]} abi=${f[5]}
IFS=';' read -r -a torch_incs <<<"${f[2]}"
IFS=';' read -r -a torch_libs <<<"${f[6]}"
echo "torch $torch_version, CUDA available: $cuda_ok"
[[ $cuda_ok == 1 ]] || skip "torch sees no CUDA device"
[[ -e $python_inc/Python.h ]] || skip "no Python.h in $python_inc"
cuda_inc=
for d in "${CUDA_HOME:-/usr/local/cuda}/include" "$(dirname "$(command -v nvcc 2>/dev/null || echo /x/x)")/../include"; do
  [[ -e $d/cuda_runtime_api.h ]] && cuda_inc=$d && break
done
[[ -n $cuda_inc ]] || skip "no CUDA toolkit headers (cuda_runtime_api.h)"

ext=$(mktemp -d /tmp/baton-torch-ext.XXXXXX)
mkdir -p "$ext/baton_torch"
cp python/baton_torch/__init__.py "$ext/baton_torch/"
defines=(-DBATON_TORCH_2 -DBATON_TORCH_CUDA -DTORCH_EXTENSION_NAME=_C -DTORCH_API_INCLUDE_EXTENSION_H
         -D_GLIBCXX_USE_CXX11_ABI="$abi")
[[ -n ${f[7]} ]] && defines+=(-DPYBIND11_COMPILER_TYPE="\"${f[7]}\"")
[[ -n ${f[8]} ]] && defines+=(-DPYBIND11_STDLIB="\"${f[8]}\"")
[[ -n ${f[9]} ]] && defines+=(-DPYBIND11_BUILD_ABI="\"${f[9]}\"")
incs=()
for d in "${torch_incs[@]}" "$python_inc" "$cuda_inc"; do incs+=(-isystem "$d"); done
libdirs=()
for d in "${torch_libs[@]}"; do libdirs+=(-L "$d" -Wl,-rpath,"$d"); done
echo "building the backend against torch $torch_version"
objs=()
for src in python/csrc/*.cc; do
  o=$ext/$(basename "$src").o
  objs+=("$o")
  g++ -std=c++17 -O1 -fPIC -fvisibility=hidden -c -o "$o" "${defines[@]}" "${incs[@]}" -Iclient/include "$src" \
    >"$o.log" 2>&1 &
done
fail=0
for job in $(jobs -p); do wait "$job" || fail=1; done
if ((fail)); then
  cat "$ext"/*.log
  echo "gpu-torch-check: the backend does not compile against torch $torch_version"
  exit 1
fi
g++ -shared -o "$ext/baton_torch/_C$ext_suffix" "${objs[@]}" -L "$client_lib" -Wl,-rpath,"$client_lib" -lbaton \
  "${libdirs[@]}" -ltorch_python -ltorch -ltorch_cpu -lc10 -lc10_cuda || {
  echo "gpu-torch-check: the backend does not link"
  exit 1
}

status=0
for layout in "1 2" "2 1"; do
  set -- $layout
  echo "# torch CUDA tensors, $1 node(s) x $2 rank(s)" | tee -a "$out/torch-cuda.txt"
  PYTHONPATH=$ext LD_LIBRARY_PATH=$client_lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} timeout -k 10 240 \
    "$bin/baton-run" --nodes "$1" --ranks-per-node "$2" -- "$python" -W ignore tests/python/cuda_test.py 2>&1 |
    tee -a "$out/torch-cuda.txt" || status=1
done
rm -rf "$ext"
exit $status
