#!/usr/bin/env bash
# README command 2: install dependencies, build, and run the whole test suite:
#   1. every ctest test (unit, integration, faults, control plane, security,
#      PyTorch backend, end to end);
#   2. the same suite built with ASan + UBSan (without the PyTorch backend,
#      which Python cannot load instrumented, and the 2^20-element matrix);
#   3. every fuzz target for a few seconds (scripts/fuzz.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh

scripts/build.sh -DBATON_TORCH=ON  # the PyTorch backend's tests are part of the suite
(cd "${BATON_BUILD_DIR:-build}" && ctest --output-on-failure -j 2 --timeout 900)

# Under ASan, all but the every-type-and-reduction matrix at 2^20 elements
# (ScheduleLargeMatrix): 4 of the suite's 11 minutes there, for code that the
# small matrices and ScheduleLarge's 2^20-element runs already take through
# under ASan; and but the daemons' matrix striped over 3 sockets per peer
# (2nodes_x2_3sockets, 135 s there), whose striping tcp_mesh_test takes
# through under ASan and whose daemons 2nodes_x2 does. The main tree above
# runs both.
BATON_BUILD_DIR=build-asan scripts/build.sh -DBATON_SANITIZE=address,undefined -DBATON_TORCH=OFF -DBATON_CUDA=OFF
(cd build-asan && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
   LSAN_OPTIONS="suppressions=$PWD/../tests/lsan.supp:print_suppressions=0" \
   ctest --output-on-failure -j 2 --timeout 900 -E 'ScheduleLargeMatrix|2nodes_x2_3sockets')

scripts/fuzz.sh "${BATON_FUZZ_SECONDS:-5}"
