#!/usr/bin/env bash
# README command 2: install dependencies, build, and run the whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
cd "${BATON_BUILD_DIR:-build}"
ctest --output-on-failure -j 2 --timeout 900
