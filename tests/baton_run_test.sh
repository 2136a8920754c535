#!/usr/bin/env bash
# baton-run's contract: rank environment, output prefixes, exit status.
set -u
baton_run=$1
fail() { echo "FAIL: $*"; exit 1; }

# Every rank sees its environment; output is prefixed with the rank.
out=$("$baton_run" --nodes 2 --ranks-per-node 2 -- /bin/sh -c \
  'echo "r=$BATON_RANK n=$BATON_WORLD_SIZE l=$BATON_LOCAL_RANK node=$BATON_NODE_RANK job=$BATON_JOB_ID"' 2>&1) \
  || fail "a clean run exited non-zero: $out"
for r in 0 1 2 3; do
  echo "$out" | grep -q "^\[rank $r\] r=$r n=4 l=$((r % 2)) node=$((r / 2)) job=baton-run-" \
    || fail "rank $r line missing or wrong in: $out"
done

# torchrun's variables for torch.distributed's env://, inherited RANK replaced.
out=$(RANK=99 "$baton_run" --nodes 2 --ranks-per-node 2 -- /bin/sh -c \
  'echo "R=$RANK W=$WORLD_SIZE L=$LOCAL_RANK LW=$LOCAL_WORLD_SIZE G=$GROUP_RANK M=$MASTER_ADDR:$MASTER_PORT"' 2>&1) \
  || fail "torch variables run exited non-zero: $out"
for r in 0 1 2 3; do
  echo "$out" | grep -Eq "^\[rank $r\] R=$r W=4 L=$((r % 2)) LW=2 G=$((r / 2)) M=127\.0\.0\.1:[0-9]+$" \
    || fail "rank $r torch variables missing or wrong in: $out"
done
[[ $(echo "$out" | grep -o 'M=[0-9.:]*' | sort -u | wc -l) -eq 1 ]] || fail "ranks disagree on MASTER_PORT: $out"

# A failing rank makes baton-run fail and say which rank and how.
out=$("$baton_run" --nodes 2 --ranks-per-node 1 --grace 5 -- /bin/sh -c 'exit $((BATON_RANK * 3))' 2>&1)
rc=$?
[[ $rc -eq 1 ]] || fail "expected exit status 1 when a rank fails, got $rc: $out"
echo "$out" | grep -q "rank 1 exited with status 3" || fail "no report naming rank 1: $out"

# A program that does not exist is a clear error.
out=$("$baton_run" --nodes 1 -- /nonexistent/program 2>&1) && fail "missing program accepted"
echo "$out" | grep -q "cannot start /nonexistent/program" || fail "unclear error: $out"
# Simulated nodes own disjoint shares of the CPUs (daemon and ranks alike);
# with --no-bind, or on one node, every process may use every CPU.
all=$(taskset -cp $$ | sed 's/.*: //')
ncpu=$(nproc)
if (( ncpu >= 2 )); then
  out=$("$baton_run" --nodes 2 --ranks-per-node 2 -- /bin/sh -c \
    'd=$(pgrep -f "batond.*$BATON_SOCKET" | head -1)
     echo "node=$BATON_NODE_RANK cpus=$(taskset -cp $$ | sed "s/.*: //") daemon=$(taskset -cp $d | sed "s/.*: //")"' \
    2>&1) || fail "bound run failed: $out"
  n0=$(echo "$out" | grep -o 'node=0 cpus=.*' | sort -u)
  n1=$(echo "$out" | grep -o 'node=1 cpus=.*' | sort -u)
  [[ $(echo "$n0" | wc -l) -eq 1 && $(echo "$n1" | wc -l) -eq 1 ]] || fail "ranks of a node disagree: $out"
  c0=$(echo "$n0" | sed 's/.*cpus=\([^ ]*\) .*/\1/'); c1=$(echo "$n1" | sed 's/.*cpus=\([^ ]*\) .*/\1/')
  [[ "$c0" != "$all" && "$c0" != "$c1" ]] || fail "nodes not on separate CPUs: $out"
  [[ "$n0" == *"daemon=$c0" && "$n1" == *"daemon=$c1" ]] || fail "a daemon is not on its node's CPUs: $out"
  out=$("$baton_run" --nodes 2 --no-bind -- /bin/sh -c 'echo "cpus=$(taskset -cp $$ | sed "s/.*: //")"' 2>&1) \
    || fail "--no-bind run failed: $out"
  [[ $(echo "$out" | grep -c "cpus=$all\$") -eq 2 ]] || fail "--no-bind ranks were bound: $out"
fi
echo "baton-run contract: 5 passed, 0 failed"
