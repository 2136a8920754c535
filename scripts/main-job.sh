#!/usr/bin/env bash
# README command 1: install dependencies, build, and run the main job: a
# one-machine cluster of 2 simulated nodes x 2 ranks running baton-bench's
# AllReduce sweep.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
exec build/bin/baton-run --nodes 2 --ranks-per-node 2 -- build/bin/baton-bench allreduce -b 8 -e 64M -f 2 "$@"
