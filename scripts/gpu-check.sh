#!/usr/bin/env bash
# The GPU check (docs/gpu.md), for a machine with an NVIDIA GPU and driver:
# installs the dependencies, builds with -DBATON_CUDA=ON, runs the gpu-labelled
# tests (device-buffer correctness matrix, mixed host/device ranks, the
# stream-ordering contract, kernels against the host kernels) and the GPU
# benchmark (reduction kernel vs device copy bandwidth; device vs host
# AllReduce on 1x2, 1x4 and 2x1 simulated nodes, and on 1x2 with the GPU
# path off, --gpu-collectives off, for the cost of staging). Everything it prints is
# also written under OUTDIR (default gpu-results/).
#   scripts/gpu-check.sh [OUTDIR]
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-gpu-results}
mkdir -p "$out"
if ! nvidia-smi -L >"$out/gpus.txt" 2>&1; then
  echo "gpu-check: no NVIDIA GPU or driver here (nvidia-smi failed); the CPU suite is scripts/test.sh" >&2
  cat "$out/gpus.txt" >&2
  exit 77
fi
cat "$out/gpus.txt"
[[ ${BATON_SKIP_DEPS:-0} == 1 ]] || scripts/install-deps.sh
build=${BATON_BUILD_DIR:-build-gpu}
BATON_BUILD_DIR=$build scripts/build.sh -DBATON_CUDA=ON -DBATON_TORCH=OFF 2>&1 | tail -3

status=0
# A skipped GPU test on a GPU machine is a failure: check for skips too.
(cd "$build" && ctest -L gpu --output-on-failure --timeout 600) 2>&1 | tee "$out/gpu-tests.txt" || status=1
if grep -q "Skipped" "$out/gpu-tests.txt"; then
  echo "gpu-check: GPU tests were skipped on a machine with a GPU" >&2
  status=1
fi
"$build/bin/baton-gpu-bench" kernels -b 1M -e 1G -n 20 2>&1 | tee "$out/kernels.txt" || status=1
for cfg in "1 2" "1 4" "2 1" "1 2 off"; do
  set -- $cfg
  daemon_args=()
  [[ ${3:-} == off ]] && daemon_args=(--daemon-arg --gpu-collectives --daemon-arg off)
  echo "# ${1} node(s) x ${2} rank(s)${3:+, --gpu-collectives $3 (staged through host memory)}" | tee -a "$out/allreduce.txt"
  "$build/bin/baton-run" --nodes "$1" --ranks-per-node "$2" "${daemon_args[@]}" -- \
    "$build/bin/baton-gpu-bench" allreduce -b 8 -e 256M -n 10 2>&1 | tee -a "$out/allreduce.txt" || status=1
done
exit $status
