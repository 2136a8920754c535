#!/usr/bin/env bash
# This machine's physical limits beside Baton's bus bandwidth, measured in
# one run. Every Baton figure is then a fraction of its limit:
#   - within a node, the memory copy bandwidth (build/bin/baton-membw);
#   - across simulated nodes, TCP loopback throughput (iperf3, installed
#     from Debian if missing), one way and both ways at once, each node's
#     iperf3 processes on its own CPU as baton-run binds the nodes: a
#     two-node exchange makes every core send and receive, so "tcp-both"
#     (per direction) is its limit.
#   - for small messages, the costs a daemon adds (build/bin/baton-latency):
#     a context switch between two processes on one CPU, and a TCP loopback
#     exchange between two CPUs.
# Baton: AllReduce of 64 MiB float32 (baton-bench, results checked) on
# 1 node x 4 ranks, 2 nodes x 1 and 2 nodes x 2; AllReduce of 8 B on
# 2 nodes x 1 against the floor a daemon sharing each node's core allows.
#   scripts/limits.sh   (needs a build: scripts/build.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${BATON_BUILD_DIR:-build}/bin
if ! command -v iperf3 >/dev/null; then
  sudo_cmd=()
  [[ $(id -u) -ne 0 ]] && sudo_cmd=(sudo)
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends iperf3 >/dev/null 2>&1
fi

# The same measurement as the side-by-side benchmark (bench/compare/compare.py):
# iperf3 between two simulated nodes on their own CPUs, one way and both ways at once.
limits=$(PYTHONDONTWRITEBYTECODE=1 python3 -c "import json, sys; sys.path.insert(0, 'bench/compare'); import compare; \
print(json.dumps(compare.measure_limits('$bin')))")
field() { python3 -c "import json, sys; print(f'{json.loads(sys.argv[1])[sys.argv[2]]:.3f}')" "$limits" "$1"; }
membw=$(field memcpy_gbps)
tcp=$(field tcp_loopback_gbps)
tcp_both=$(python3 -c "print(f'{$(field tcp_loopback_bidir_total_gbps) / 2:.3f}')")

busbw() {  # nodes ranks-per-node -> busbw (GB/s) of the 64 MiB row, from rank 0
  "$bin/baton-run" --nodes "$1" --ranks-per-node "$2" -- \
    "$bin/baton-bench" allreduce -b 64M -e 64M -n 10 -w 2 2>&1 |
    awk '/^\[rank 0\] +67108864 / {print $10; exit}'  # field 10: busbw
}
echo "# limits: memcpy ${membw} GB/s, TCP loopback (iperf3, 1 stream each way, nodes on their own CPUs)" \
  "${tcp} GB/s one way, ${tcp_both} GB/s per direction both ways at once"
echo "# TCP congestion control: $(cat /proc/sys/net/ipv4/tcp_congestion_control) (BBR paces loopback: docs/benchmarks.md)"
printf "# %-28s %12s %20s %7s\n" "AllReduce 64 MiB float32" "busbw GB/s" "limit GB/s" "fraction"
row() {  # label busbw limit limit-name
  printf '  %-28s %12s %9s %-10s %7s\n' "$1" "$2" "$3" "($4)" "$(python3 -c "print(f'{$2 / $3:.2f}')")"
}
for cfg in "1 4" "2 1" "2 2"; do
  read -r nodes per <<<"$cfg"
  bw=$(busbw "$nodes" "$per")
  label="${nodes} node(s) x ${per} rank(s)"
  if [[ $nodes == 1 ]]; then
    row "$label" "$bw" "$membw" memcpy
  else
    row "$label" "$bw" "$tcp" tcp
    row "$label" "$bw" "$tcp_both" tcp-both
  fi
done

# Small messages: 8 B across two nodes against TCP exchange + 2 hand-offs,
# summed and measured as one chain.
read -r handoff exchange floor composed < <("$bin/baton-latency" --json | python3 -c \
  "import json, sys; d = json.load(sys.stdin); print(d['process_handoff_us'], d['tcp_exchange_us'], d['daemon_floor_us'], d['composed_floor_us'])")
us=$("$bin/baton-run" --nodes 2 --ranks-per-node 1 -- "$bin/baton-bench" allreduce -b 8 -e 8 -n 20000 -w 100 2>&1 |
  awk '/^\[rank 0\] +8 / {print $8; exit}')  # field 8: time (us)
echo "# AllReduce 8 B, 2 nodes x 1: ${us} us; floor ${floor} us (TCP exchange ${exchange} us + 2 x ${handoff} us" \
  "process hand-off on one CPU); $(python3 -c "print(f'{$us / $floor:.2f}')") x the floor;" \
  "that chain measured as one ${composed} us, $(python3 -c "print(f'{$us / $composed:.2f}')") x it"
