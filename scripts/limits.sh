#!/usr/bin/env bash
# This machine's physical limits beside Baton's bus bandwidth, measured in
# one run. Every Baton figure is then a fraction of its limit:
#   - within a node, the memory copy bandwidth (build/bin/baton-membw);
#   - across simulated nodes, TCP loopback throughput (iperf3, installed
#     from Debian if missing).
# Baton: AllReduce of 64 MiB float32 (baton-bench, results checked) on
# 1 node x 4 ranks, 2 nodes x 1 and 2 nodes x 2.
#   scripts/limits.sh   (needs a build: scripts/build.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${BATON_BUILD_DIR:-build}/bin
if ! command -v iperf3 >/dev/null; then
  sudo_cmd=()
  [[ $(id -u) -ne 0 ]] && sudo_cmd=(sudo)
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends iperf3 >/dev/null 2>&1
fi

membw=$("$bin/baton-membw" --json | sed -n 's/.*"copy_gbps": \([0-9.]*\).*/\1/p')
port=$((20000 + RANDOM % 20000))
iperf3 -s -1 -B 127.0.0.1 -p "$port" >/dev/null 2>&1 &
server=$!
sleep 0.5
tcp_bits=$(iperf3 -c 127.0.0.1 -p "$port" -t 5 -J | python3 -c \
  'import json,sys; print(json.load(sys.stdin)["end"]["sum_received"]["bits_per_second"])')
wait "$server" 2>/dev/null || true
tcp=$(python3 -c "print(f'{$tcp_bits / 8e9:.3f}')")

busbw() {  # nodes ranks-per-node -> busbw (GB/s) of the 64 MiB row, from rank 0
  "$bin/baton-run" --nodes "$1" --ranks-per-node "$2" -- \
    "$bin/baton-bench" allreduce -b 64M -e 64M -n 10 -w 2 2>&1 |
    awk '/^\[rank 0\] +67108864 / {print $9; exit}'
}
echo "# limits: memcpy ${membw} GB/s, TCP loopback (iperf3, 1 stream) ${tcp} GB/s"
echo "# TCP congestion control: $(cat /proc/sys/net/ipv4/tcp_congestion_control) (BBR paces loopback: docs/benchmarks.md)"
printf '# %-28s %12s %16s %10s\n' "AllReduce 64 MiB float32" "busbw GB/s" "limit GB/s" "fraction"
for cfg in "1 4 memcpy" "2 1 tcp" "2 2 tcp"; do
  read -r nodes per limit_name <<<"$cfg"
  bw=$(busbw "$nodes" "$per")
  limit=$([[ $limit_name == memcpy ]] && echo "$membw" || echo "$tcp")
  printf '  %-28s %12s %9s %-6s %10s\n' "${nodes} node(s) x ${per} rank(s)" "$bw" "$limit" "($limit_name)" \
    "$(python3 -c "print(f'{$bw / $limit:.2f}')")"
done
