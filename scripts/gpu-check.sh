#!/usr/bin/env bash
# The GPU check (docs/gpu.md), for a machine with an NVIDIA GPU and driver:
# runs the gpu-labelled tests (device-buffer correctness matrix, mixed
# host/device ranks, the stream-ordering contract, kernels against the host
# kernels) and the GPU benchmark (reduction kernel vs device copy bandwidth;
# device vs host AllReduce on 1x2, 1x4, 2x1 and 4x1 simulated nodes (across
# nodes the ratio is the cost of staging, pipelined with the phases), and on 1x2
# with the GPU path off, --gpu-collectives off, for the cost of staging, and
# 1x4 with the AllReduce spread over the ranks, --gpu-allreduce spread);
# then the PyTorch backend's CUDA tensors (scripts/gpu-torch-check.sh).
# Everything it prints is also written under OUTDIR (default gpu-results/).
#   scripts/gpu-check.sh [OUTDIR]
#       installs the dependencies and builds with -DBATON_CUDA=ON first
#   scripts/gpu-check.sh --bundle DIR [OUTDIR]
#       runs the programs packed by scripts/gpu-bundle.sh instead, for a GPU
#       machine without Baton's dependencies or a package archive
set -euo pipefail
cd "$(dirname "$0")/.."
bundle=
if [[ ${1:-} == --bundle ]]; then
  bundle=${2:?usage: scripts/gpu-check.sh --bundle DIR [OUTDIR]}
  shift 2
fi
out=${1:-gpu-results}
mkdir -p "$out"
if ! nvidia-smi -L >"$out/gpus.txt" 2>&1; then
  echo "gpu-check: no NVIDIA GPU or driver here (nvidia-smi failed); the CPU suite is scripts/test.sh" >&2
  cat "$out/gpus.txt" >&2
  exit 77
fi
cat "$out/gpus.txt"

status=0
# Each part has a time limit, so that one that hangs (a GPU feature this
# machine's runtime lacks) leaves time and output for the others.
limit() { timeout -k 10 "$@"; }
if [[ -n $bundle ]]; then
  # The bundle's programs name their loader and libraries by absolute path
  # under the root it was packed for (scripts/gpu-bundle.sh).
  root=$(awk '$1 == "root" {print $2}' "$bundle/BUNDLE")
  rm -rf "$root"
  mkdir -p "$root"
  cp -r "$bundle"/. "$root"/
  cat "$root/BUNDLE" | tee "$out/bundle.txt"
  bin=$root/bin
  # The driver is the one library taken from this machine. The bundle's
  # loader reads this machine's ld.so.cache, but the driver's folder may not
  # be in it; the bundle's RPATH still comes first for everything else.
  for dir in $(ldconfig -p 2>/dev/null | awk '$1 == "libcuda.so.1" {print $NF}' | xargs -r -n1 dirname) \
             /usr/local/nvidia/lib64 /usr/lib/x86_64-linux-gnu /usr/lib64; do
    if [[ -e $dir/libcuda.so.1 ]]; then
      export LD_LIBRARY_PATH=$dir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
      echo "driver: $dir/libcuda.so.1" | tee -a "$out/bundle.txt"
      break
    fi
  done
else
  [[ ${BATON_SKIP_DEPS:-0} == 1 ]] || scripts/install-deps.sh
  build=${BATON_BUILD_DIR:-build-gpu}
  BATON_BUILD_DIR=$build scripts/build.sh -DBATON_CUDA=ON -DBATON_TORCH=OFF 2>&1 | tail -3
  bin=$build/bin
fi
# The kernels first: they need nothing but the driver, so they tell whether
# CUDA works here at all before anything needs CUDA IPC between processes.
limit 120 "$bin/baton-gpu-bench" kernels -b 1M -e 1G -n 20 2>&1 | tee "$out/kernels.txt" || status=1
if [[ -n $bundle ]]; then
  # The tests start batond, batonctl and baton_test_rank from here.
  export BATON_TEST_BIN_DIR=$bin
  limit 420 "$bin/baton_gpu_tests" 2>&1 | tee "$out/gpu-tests.txt" || status=1
  skipped="\[  SKIPPED \]"
else
  (cd "$build" && limit 420 ctest -L gpu --output-on-failure --timeout 400) 2>&1 | tee "$out/gpu-tests.txt" || status=1
  skipped="Skipped"
fi
# A skipped GPU test on a GPU machine is a failure: check for skips too.
if grep -q "$skipped" "$out/gpu-tests.txt"; then
  echo "gpu-check: GPU tests were skipped on a machine with a GPU" >&2
  status=1
fi
for cfg in "1 2" "1 4" "2 1" "4 1" "1 2 off" "1 4 spread"; do
  set -- $cfg
  daemon_args=()
  note=
  case ${3:-} in
    off) daemon_args=(--daemon-arg --gpu-collectives --daemon-arg off) note=", --gpu-collectives off (staged through host memory)" ;;
    spread) daemon_args=(--daemon-arg --gpu-allreduce --daemon-arg spread) note=", --gpu-allreduce spread" ;;
  esac
  echo "# ${1} node(s) x ${2} rank(s)$note" | tee -a "$out/allreduce.txt"
  limit 120 "$bin/baton-run" --nodes "$1" --ranks-per-node "$2" "${daemon_args[@]}" -- \
    "$bin/baton-gpu-bench" allreduce -b 8 -e 256M -n 10 2>&1 | tee -a "$out/allreduce.txt" || status=1
done
# Last, the PyTorch backend's CUDA tensors, built against this machine's
# torch (a skip, status 77, says what is missing and fails nothing).
client_lib=${root:+$root/client-lib}
torch_status=0
limit 400 scripts/gpu-torch-check.sh "$bin" "${client_lib:-$build/lib}" "$out" 2>&1 | tee "$out/torch.txt" ||
  torch_status=${PIPESTATUS[0]}
[[ $torch_status == 0 || $torch_status == 77 ]] || status=1
exit $status
