#!/usr/bin/env bash
# baton-latency's report: every figure measured (positive), the floor the
# sum of the exchange and two process hand-offs, the chain measured as one
# too, and on one CPU no exchange.
set -u
latency=$1
fail() { echo "FAIL: $*"; exit 1; }

out=$("$latency" --iters 2000 --reps 3 --json) || fail "baton-latency exited non-zero: $out"
python3 - "$out" <<'PY' || exit 1
import json, sys
import os
d = json.loads(sys.argv[1])
for key in ("syscall_us", "yield_us", "thread_handoff_us", "process_handoff_us"):
    if not d[key] > 0:
        sys.exit(f"FAIL: {key} is {d[key]}, not a measured time: {d}")
if d["reps"] != 3:
    sys.exit(f"FAIL: reps wrong: {d}")
if len(os.sched_getaffinity(0)) < 2:  # no second CPU: no exchange, no floor
    if d["tcp_exchange_us"] != -1 or d["daemon_floor_us"] != -1 or d["composed_floor_us"] != -1 or d["cpus"][1] != -1:
        sys.exit(f"FAIL: an exchange reported on one CPU: {d}")
    sys.exit(0)
want = d["tcp_exchange_us"] + 2 * d["process_handoff_us"]
if not d["tcp_exchange_us"] > 0 or abs(d["daemon_floor_us"] - want) > 0.005:
    sys.exit(f"FAIL: daemon_floor_us {d['daemon_floor_us']} is not the exchange plus two hand-offs ({want:.3f}): {d}")
if not d["composed_floor_us"] > 0:
    sys.exit(f"FAIL: composed_floor_us {d['composed_floor_us']} is not a measured time: {d}")
if d["cpus"][0] == d["cpus"][1]:
    sys.exit(f"FAIL: the exchange ran on one CPU: {d}")
PY

# Confined to one CPU there is no second CPU for the exchange: said, not measured.
out=$(taskset -c "$(taskset -pc $$ | awk -F': ' '{print $2}' | cut -d, -f1 | cut -d- -f1)" \
  "$latency" --iters 2000 --reps 1) || fail "baton-latency on one CPU exited non-zero: $out"
echo "$out" | grep -q "TCP loopback exchange: needs two CPUs" || fail "no one-CPU notice in: $out"

# A bad argument is a usage error.
"$latency" --frobnicate >/dev/null 2>&1
[[ $? -eq 2 ]] || fail "an unknown option did not exit 2"
echo "baton-latency: ok"
