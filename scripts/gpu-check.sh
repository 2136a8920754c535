#!/usr/bin/env bash
# The GPU check (docs/gpu.md), for a machine with an NVIDIA GPU and driver:
# runs the gpu-labelled tests (device-buffer correctness matrix, mixed
# host/device ranks, the stream-ordering contract, kernels against the host
# kernels) and the GPU benchmark (reduction kernel vs device copy bandwidth;
# device vs host AllReduce on 1x2, 1x4, 2x1, 2x2 and 4x1 simulated nodes
# (across nodes the ratio is the cost of staging, pipelined with the phases;
# on 2x2 the local ends run on the GPUs), and on 1x2
# with the GPU path off, --gpu-collectives off, for the cost of staging, and
# 1x4 with the AllReduce spread over the ranks, --gpu-allreduce spread;
# and FSDP's two collectives, ReduceScatter on 1x4 and 2x2 and AllGather on
# 2x2, device vs host buffers the same way); then the PyTorch backend's
# CUDA tensors (scripts/gpu-torch-check.sh).
# Everything it prints is also written under OUTDIR (default gpu-results/).
#   scripts/gpu-check.sh [OUTDIR]
#       installs the dependencies and builds with -DBATON_CUDA=ON first
#   scripts/gpu-check.sh --bundle DIR [OUTDIR]
#       runs the programs packed by scripts/gpu-bundle.sh instead, for a GPU
#       machine without Baton's dependencies or a package archive
#   scripts/gpu-check.sh --budget SECONDS ...
#       fits the whole check into SECONDS of wall time (a lent GPU machine's
#       command limit): each part's time limit is cut to what is left, less
#       a share kept for every part after it, and a part with no time left
#       is skipped, saying so (and failing the check)
set -euo pipefail
cd "$(dirname "$0")/.."
usage="usage: scripts/gpu-check.sh [--budget SECONDS] [--bundle DIR] [OUTDIR]"
bundle=
budget=
while [[ ${1:-} == --* ]]; do
  case $1 in
    --bundle) bundle=${2:?$usage} ;;
    --budget)
      budget=${2:?$usage}
      [[ $budget =~ ^[0-9]+$ ]] || { echo "gpu-check: --budget takes whole seconds, not '$budget'" >&2; exit 2; }
      ;;
    *) echo "gpu-check: unknown option $1; $usage" >&2; exit 2 ;;
  esac
  shift 2
done
out=${1:-gpu-results}
started=$SECONDS  # the budget counts from here: the bundle's copy or the build included
mkdir -p "$out"
if ! nvidia-smi -L >"$out/gpus.txt" 2>&1; then
  echo "gpu-check: no NVIDIA GPU or driver here (nvidia-smi failed); the CPU suite is scripts/test.sh" >&2
  cat "$out/gpus.txt" >&2
  exit 77
fi
cat "$out/gpus.txt"

status=0
# Each part has a time limit, so that one that hangs (a GPU feature this
# machine's runtime lacks) leaves time and output for the others. Under
# --budget, part_time CAP NAME sets `part_limit` to CAP cut to the time left
# less kReserve seconds for each part still to come (parts_left counts
# them), but never to less than half of what is left: the earlier parts
# matter more (the tests before the benchmarks). With under 15 s left it
# says the part is skipped and returns 1. It runs in this shell (not in a
# pipeline's subshell) so that the count holds.
# The benchmark's configurations: nodes, ranks per node, a variant (- for
# none) and the collective (AllReduce when not named).
configs=("1 2" "1 4" "2 1" "2 2" "4 1" "1 2 off" "1 4 spread" "1 4 - reducescatter" "2 2 - reducescatter"
         "2 2 - allgather")
parts_left=$((3 + ${#configs[@]}))  # kernels, GPU tests, the configurations, PyTorch
kReserve=20
part_limit=0
part_time() {
  local cap=$1 name=$2
  parts_left=$((parts_left - 1))
  part_limit=$cap
  [[ -z $budget ]] && return 0
  local left=$((budget - (SECONDS - started) - 10))  # 10: timeout's grace before it kills
  if ((left < 15)); then
    echo "gpu-check: skipped $name: the --budget of ${budget} s is spent" | tee -a "$out/skipped.txt" >&2
    status=1
    return 1
  fi
  local share=$((left - parts_left * kReserve))
  ((share < left / 2)) && share=$((left / 2))
  ((share < cap)) && part_limit=$share
  echo "gpu-check: $name: up to ${part_limit} s (${left} s of the budget left)" >&2
  return 0
}
limit() {
  local rc=0
  timeout -k 10 "$part_limit" "$@" || rc=$?
  ((rc == 124 || rc == 137)) && echo "gpu-check: $(basename "$1") ran past its ${part_limit} s limit and was stopped" >&2
  return $rc
}
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
if part_time 120 "the kernel benchmark"; then
  limit "$bin/baton-gpu-bench" kernels -b 1M -e 1G -n 20 2>&1 | tee "$out/kernels.txt" || status=1
fi
if ! part_time 420 "the GPU tests"; then
  :
elif [[ -n $bundle ]]; then
  # The tests start batond, batonctl and baton_test_rank from here.
  export BATON_TEST_BIN_DIR=$bin
  limit "$bin/baton_gpu_tests" 2>&1 | tee "$out/gpu-tests.txt" || status=1
  skipped="\[  SKIPPED \]"
else
  (cd "$build" && limit ctest -L gpu --output-on-failure --timeout 400) 2>&1 | tee "$out/gpu-tests.txt" || status=1
  skipped="Skipped"
fi
# A skipped GPU test on a GPU machine is a failure: check for skips too.
if [[ -e $out/gpu-tests.txt ]] && grep -q "$skipped" "$out/gpu-tests.txt"; then
  echo "gpu-check: GPU tests were skipped on a machine with a GPU" >&2
  status=1
fi
for cfg in "${configs[@]}"; do
  set -- $cfg
  coll=${4:-allreduce}
  variant=${3:-}
  [[ $variant == - ]] && variant=
  daemon_args=()
  note=
  case $variant in
    off) daemon_args=(--daemon-arg --gpu-collectives --daemon-arg off) note=", --gpu-collectives off (staged through host memory)" ;;
    spread) daemon_args=(--daemon-arg --gpu-allreduce --daemon-arg spread) note=", --gpu-allreduce spread" ;;
  esac
  # AllReduce every power of two; the others every fourth, to fit the budget.
  sizes=(-b 8 -e 256M -n 10)
  [[ $coll == allreduce ]] || sizes=(-b 1K -e 256M -f 4 -n 10)
  part_time 120 "$coll ${1}x${2}${variant:+ $variant}" || continue
  echo "# ${1} node(s) x ${2} rank(s)$note" | tee -a "$out/$coll.txt"
  limit "$bin/baton-run" --nodes "$1" --ranks-per-node "$2" "${daemon_args[@]}" -- \
    "$bin/baton-gpu-bench" "$coll" "${sizes[@]}" 2>&1 | tee -a "$out/$coll.txt" || status=1
done
# Last, the PyTorch backend's CUDA tensors, built against this machine's
# torch (a skip, status 77, says what is missing and fails nothing).
client_lib=${root:+$root/client-lib}
torch_status=0
if part_time 400 "the PyTorch check"; then
  limit scripts/gpu-torch-check.sh "$bin" "${client_lib:-$build/lib}" "$out" 2>&1 | tee "$out/torch.txt" ||
    torch_status=${PIPESTATUS[0]}
fi
[[ $torch_status == 0 || $torch_status == 77 ]] || status=1
exit $status
