#!/usr/bin/env bash
# Soak test (minutes; not part of CI): two long-lived daemons on loopback,
# and for MINUTES, waves of client processes that join, run checked
# collectives, and leave. Each wave runs four jobs at once (so several
# communicators share the daemons):
#   allreduce 2 nodes x 2 ranks, allgather 2x1 (int32), alltoall 2x1, and
#   send/recv 1x2,
# each a baton-bench sweep that verifies every result (exit 1 on #wrong).
# After every wave, when no client is attached, it samples each daemon's RSS
# and open fds. Prints a summary and leaves the samples in soak.csv in
# the working folder (kept).
#   scripts/soak.sh [MINUTES]   (default 5; needs a build: scripts/build.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
minutes=${1:-5}
bin=${BATON_BUILD_DIR:-build}/bin
dir=$(mktemp -d /tmp/baton-soak.XXXXXX)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; }
trap cleanup EXIT

start_daemon() {  # node, extra args...
  local n=$1; shift
  "$bin/batond" --socket "$dir/n$n.sock" --listen 127.0.0.1:0 --grpc 127.0.0.1:0 --node-name "n$n" \
    --ready-file "$dir/n$n.ready" "$@" >"$dir/n$n.log" 2>&1 &
  pids+=($!)
  for _ in $(seq 100); do [[ -s $dir/n$n.ready ]] && return; sleep 0.1; done
  echo "batond n$n did not start; see $dir/n$n.log"; exit 1
}
start_daemon 0
rendezvous=$(sed -n 's/.*grpc=\([^ ]*\).*/\1/p' "$dir/n0.ready")
start_daemon 1 --rendezvous "$rendezvous"

# One job: NODES x PER_NODE ranks of baton-bench COLLECTIVE ARGS; ops counted per job.
run_job() {
  local job=$1 nodes=$2 per=$3; shift 3
  local world=$((nodes * per)) r=0 rank_pids=()
  for ((n = 0; n < nodes; n++)); do
    for ((l = 0; l < per; l++)); do
      BATON_SOCKET=$dir/n$n.sock BATON_RENDEZVOUS=$rendezvous BATON_JOB_ID=$job BATON_JOB_SECRET=soak-$job \
        BATON_WORLD_SIZE=$world BATON_RANK=$r "$bin/baton-bench" "$@" >"$dir/$job.r$r.out" 2>&1 &
      rank_pids+=($!)
      r=$((r + 1))
    done
  done
  local ok=0
  for p in "${rank_pids[@]}"; do wait "$p" || ok=1; done
  if ((ok == 0)); then rm -f "$dir/$job".r*.out; fi
  return $ok
}

sweep=(-b 8 -e 1M -f 8 -n 5 -w 1)  # 6 sizes x 6 iterations = 36 operations per job
ops_per_job=36
sample() {  # wave -> csv rows
  for n in 0 1; do
    local pid=${pids[$n]}
    local rss fds
    rss=$(awk '/^VmRSS/ {print $2}' "/proc/$pid/status")
    fds=$(ls "/proc/$pid/fd" | wc -l)
    echo "$1,n$n,$rss,$fds" >>"$dir/soak.csv"
  done
}
echo "wave,daemon,rss_kib,fds" >"$dir/soak.csv"
sample 0

end=$((SECONDS + minutes * 60))
wave=0 jobs=0 failures=0
while ((SECONDS < end)); do
  wave=$((wave + 1))
  job_pids=()
  run_job "w$wave-ar" 2 2 allreduce "${sweep[@]}" & job_pids+=($!)
  run_job "w$wave-ag" 2 1 allgather -d int32 "${sweep[@]}" & job_pids+=($!)
  run_job "w$wave-a2a" 2 1 alltoall "${sweep[@]}" & job_pids+=($!)
  run_job "w$wave-p2p" 1 2 sendrecv "${sweep[@]}" & job_pids+=($!)
  for p in "${job_pids[@]}"; do
    jobs=$((jobs + 1))
    wait "$p" || failures=$((failures + 1))
  done
  sample "$wave"
done

echo "soak: $minutes min, $wave waves, $jobs jobs, $((jobs * ops_per_job)) collective operations checked, $failures failed jobs"
for n in 0 1; do
  first=$(grep ",n$n," "$dir/soak.csv" | sed -n 2p)   # idle after wave 1
  last=$(grep ",n$n," "$dir/soak.csv" | tail -1)      # idle after the last wave
  peak=$(grep ",n$n," "$dir/soak.csv" | cut -d, -f3 | sort -n | tail -1)
  echo "daemon n$n: after wave 1 rss=$(cut -d, -f3 <<<"$first") KiB fds=$(cut -d, -f4 <<<"$first");" \
       "after wave $wave rss=$(cut -d, -f3 <<<"$last") KiB fds=$(cut -d, -f4 <<<"$last"); peak rss $peak KiB"
done
for n in 0 1; do kill -0 "${pids[$n]}" 2>/dev/null || { echo "daemon n$n died"; failures=$((failures + 1)); }; done
echo "samples and logs: $dir (failed jobs leave their rank output there)"
((failures == 0))
