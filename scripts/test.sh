#!/usr/bin/env bash
# One command: install what is missing, build, run every test; then the checked build
# (docs/testing.md): the unit, golden and fuzz-corpus tests under AddressSanitizer +
# UndefinedBehaviorSanitizer, and each libFuzzer harness for a bounded time.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install_deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release
cmake --build build -j "$(nproc)"
ctest --test-dir build --output-on-failure -j "$(nproc)"

# The checked build, in its own folder. Only what its tests run is built: no benchmarks, and the
# notebooks and mpirun tests (labels notebooks, mpi) stay with the Release build above.
fuzz_seconds=${CUBOID_CI_FUZZ_SECONDS:-30}
export CUBOID_FUZZ_BUILD=build-asan
scripts/fuzz.sh --build-only
cmake --build build-asan -j "$(nproc)"
ctest --test-dir build-asan --output-on-failure -j "$(nproc)" -L 'unit|golden|fuzz'
scripts/fuzz.sh "$fuzz_seconds"
