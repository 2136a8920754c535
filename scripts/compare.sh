#!/usr/bin/env bash
# The side-by-side benchmark (docs/benchmarks.md): installs Gloo and Open MPI
# from Debian (and iperf3 for the TCP limit), builds bench/compare, and runs
# bench/compare/compare.py; arguments go to compare.py, e.g.
#   scripts/compare.sh --reps 3 --out bench-results
#   scripts/compare.sh --reps 1 --configs 1x2 -e 64K      (a quick look)
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
packages=(libgloo-dev openmpi-bin libopenmpi-dev iperf3)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  sudo_cmd=()
  [[ $(id -u) -ne 0 ]] && sudo_cmd=(sudo)
  "${sudo_cmd[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
scripts/build.sh -DBATON_COMPARE=ON
exec /usr/bin/python3 bench/compare/compare.py --build "${BATON_BUILD_DIR:-build}" "$@"
