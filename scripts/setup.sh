#!/usr/bin/env bash
# One command from a fresh Debian 12 machine: install what is missing, build, run the default
# scenario (scenarios/default.yaml).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install_deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release
cmake --build build -j "$(nproc)"
./build/cuboid run scenarios/default.yaml
