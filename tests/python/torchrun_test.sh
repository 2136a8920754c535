#!/usr/bin/env bash
# The baton backend under torchrun, with no baton-run and no BATON_* job
# variables: one batond (as systemd would run it), torchrun starts 2 ranks,
# and the job's rendezvous reaches them through torch's store.
#   torchrun_test.sh BATOND PYTHON SOURCE_DIR PYTHONPATH
set -euo pipefail
batond=$1 python=$2 src=$3 pypath=$4
dir=$(mktemp -d /tmp/baton-torchrun.XXXXXX)
daemon=""
cleanup() {
  [[ -n $daemon ]] && kill "$daemon" 2>/dev/null && wait "$daemon" 2>/dev/null
  rm -rf "$dir"
}
trap cleanup EXIT
"$batond" --socket "$dir/batond.sock" --listen 127.0.0.1:0 --grpc 127.0.0.1:0 --node-name torchrun \
  --ready-file "$dir/ready" >"$dir/batond.log" 2>&1 &
daemon=$!
for _ in $(seq 100); do [[ -s $dir/ready ]] && break; sleep 0.1; done
[[ -s $dir/ready ]] || { echo "batond did not start:"; cat "$dir/batond.log"; exit 1; }

# Only the daemon's socket: job id, secret and rendezvous come from the store.
for v in $(env | grep -o '^BATON_[A-Z_]*'); do unset "$v"; done
unset RANK WORLD_SIZE LOCAL_RANK MASTER_ADDR MASTER_PORT
export BATON_SOCKET=$dir/batond.sock PYTHONPATH=$pypath
# --redirects/--tee 1: Debian 12's torch 1.13 under Python 3.11 cannot parse
# "0" or "3" (IntFlag iteration skips NONE and ALL), so stdout is teed.
"$python" -W ignore -m torch.distributed.run --standalone --nproc_per_node 2 --redirects 1 --tee 1 \
  "$src/tests/python/ops_test.py" --quick
echo "torchrun: both ranks passed"
