#!/usr/bin/env bash
# Installs Baton's build and test dependencies from Debian 12's archive.
# Idempotent: installs only what is missing.
set -euo pipefail

packages=(
  cmake ninja-build g++ pkg-config
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler
  libboost-dev libspdlog-dev libfmt-dev libssl-dev
  libgtest-dev libgmock-dev
  iproute2
  # The PyTorch backend (python/) and its tests.
  python3-dev python3-torch libtorch-dev pybind11-dev python3-setuptools
  # Fuzzing (scripts/fuzz.sh): clang with the libFuzzer runtime.
  clang libclang-rt-14-dev
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "installing: ${missing[*]}"
  sudo_cmd=()
  [[ $(id -u) -ne 0 ]] && sudo_cmd=(sudo)
  "${sudo_cmd[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
