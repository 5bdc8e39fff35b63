#!/usr/bin/env bash
# One command on a machine with an NVIDIA GPU: build the CUDA programs, calibrate the GPU, run the
# single-GPU programs of scenarios/validation/ on it and compare each with the prediction from
# that calibration (docs/validation.md). Writes RESULTS/profile.yaml, RESULTS/measured/NAME.json
# (what the GPU measured) and RESULTS/NAME.json (the comparison), and prints one line per program.
#
# usage: scripts/validate_on_gpu.sh [RESULTS_DIR]   (default validate/results/local)
#        BUILD_DIR=... to use another build directory (default build-gpu)
set -euo pipefail
cd "$(dirname "$0")/.."
results=${1:-validate/results/local}
build=${BUILD_DIR:-build-gpu}
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCUBOID_CUDA=ON > /dev/null
cmake --build "$build" --target cuboid-gpu-info cuboid-calibrate cuboid-validate
"$build/cuboid-gpu-info"
mkdir -p "$results/measured"
"$build/cuboid-calibrate" --out "$results/profile.yaml"
failed=0
for f in scenarios/validation/*.yaml; do
    n=$(basename "$f" .yaml)
    # A program that cannot run here (a GPU too small for it) is reported and the others still run.
    if ! "$build/cuboid-validate" "$f" --write-measured "$results/measured/$n.json" > /dev/null; then
        echo "$n: not measured (see the message above)"; failed=1; continue
    fi
    "$build/cuboid-validate" "$f" --measured "$results/measured/$n.json" --profile "$results/profile.yaml" \
        --json "$results/$n.json" | grep -E "^(iteration time|verdict)" | sed "s/^/$n: /"
done
exit $failed
