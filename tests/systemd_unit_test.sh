#!/usr/bin/env bash
# deploy/batond.service passes `systemd-analyze verify` (skipped where systemd is absent).
set -u
src=$1; batond=$2
command -v systemd-analyze >/dev/null || { echo "skipped: no systemd-analyze"; exit 77; }
dir=$(mktemp -d); trap 'rm -rf "$dir"' EXIT
sed "s|/usr/bin/batond|$batond|" "$src/deploy/batond.service" > "$dir/batond.service"
out=$(systemd-analyze verify "$dir/batond.service" 2>&1); rc=$?
# Lines about other units on this machine are not ours; anything naming our unit is.
ours=$(echo "$out" | grep "batond.service" || true)
if [[ $rc -ne 0 || -n "$ours" ]]; then echo "FAIL: $out"; exit 1; fi
echo "batond.service verified"
