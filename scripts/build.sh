#!/usr/bin/env bash
# Configures and builds Baton into build/ (binaries in build/bin/).
# Extra arguments go to cmake, e.g. scripts/build.sh -DBATON_SANITIZE=address
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${BATON_BUILD_DIR:-build}
cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=${BATON_BUILD_TYPE:-RelWithDebInfo} "$@"
cmake --build "$build_dir" -j "$(nproc)"
