#!/usr/bin/env bash
# README command 2: install dependencies, build, and run the whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh -DBATON_TORCH=ON  # the PyTorch backend's tests are part of the suite
cd "${BATON_BUILD_DIR:-build}"
ctest --output-on-failure -j 2 --timeout 900
