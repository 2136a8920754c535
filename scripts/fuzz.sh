#!/usr/bin/env bash
# Builds the libFuzzer targets (clang, ASan + UBSan) into build-fuzz/ and
# runs each for SECONDS (default 10), starting from its seed corpus in
# fuzz/corpus/TARGET. New inputs that add coverage go to build-fuzz/corpus/;
# a crash leaves its input in build-fuzz/artifacts/ and fails the script.
#   scripts/fuzz.sh [SECONDS] [TARGET...]
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-10}
shift || true
targets=("$@")
((${#targets[@]})) || targets=(descriptor_fuzz session_fuzz wire_fuzz handshake_fuzz rendezvous_fuzz grpc_services_fuzz
                             text_fuzz)
build=${BATON_FUZZ_BUILD_DIR:-build-fuzz}

CC=clang CXX=clang++ cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DBATON_FUZZ=ON -DBATON_CUDA=OFF \
  -DBATON_BUILD_TESTS=OFF -DBATON_TORCH=OFF >/dev/null
cmake --build "$build" -j "$(nproc)" --target "${targets[@]}"

mkdir -p "$build/artifacts"
status=0
for t in "${targets[@]}"; do
  corpus=$build/corpus/$t
  mkdir -p "$corpus"
  echo "== $t: ${seconds}s"
  # Leaks are checked by ASan at exit of the whole run, not per input.
  if ! "$build/fuzz/$t" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=4096 -print_final_stats=1 \
       -artifact_prefix="$build/artifacts/$t-" "$corpus" "fuzz/corpus/$t" 2>"$build/$t.log"; then
    echo "FAILED: $t (log: $build/$t.log, input: $build/artifacts/)"
    tail -40 "$build/$t.log"
    status=1
  else
    grep -E '^stat::(number_of_executed_units|new_units_added)' "$build/$t.log" | tr '\n' ' '
    echo
  fi
done
exit $status
