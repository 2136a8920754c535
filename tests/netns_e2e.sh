#!/usr/bin/env bash
# End to end across network namespaces (own addresses per node). Skips
# (exit 77) where namespaces cannot be created: not root, or no iproute2.
set -u
baton_run=$1; bench=$2
if [[ $(id -u) -ne 0 ]] || ! command -v ip >/dev/null; then
  echo "skipped: network namespaces need root and iproute2"; exit 77
fi
probe="baton-probe-$$"
if ! ip netns add "$probe" 2>/dev/null; then
  echo "skipped: this machine does not allow creating network namespaces"; exit 77
fi
ip netns delete "$probe"
exec "$baton_run" --netns --nodes 3 --ranks-per-node 2 -- "$bench" allreduce -b 8 -e 2M -f 16 -n 2 -w 1
