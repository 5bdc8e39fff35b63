#!/bin/bash
# Builds cuboid (Release) and runs the simulator benchmarks, printing one table to stdout.
#   bench/run.sh [extra cuboid-bench-sim arguments]      e.g. bench/run.sh --repeat 5
#   bench/run.sh sweep [cuboid-bench-sweep arguments]    points per second of a sweep, 1 and 2
#                                                        threads, not pinned (it uses both cores)
#   bench/run.sh scaling [cuboid-bench-scaling arguments] GPT-3 175B from 64 to 131,072 GPUs, folded
#                                                        and not: wall, CPU, peak memory, events
#                                                        (--max-gpus 16384 skips the largest points)
# Redirect to keep the results: bench/run.sh > results.txt
# CORE picks the one core the benchmark is pinned to (default 0); the build uses every core.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${BUILD_DIR:-$root/build-bench}"
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCUBOID_BENCH=ON >/dev/null
cmake --build "$build" -j"$(nproc)" --target cuboid-bench-sim cuboid-bench-sweep cuboid-bench-scaling >/dev/null
cd "$root"
if [ "${1:-}" = sweep ]; then
  shift
  echo "# $(date -u +%Y-%m-%dT%H:%MZ) $(hostname) $(uname -m), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) cores, commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
  echo "# load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
  exec "$build/bench/cuboid-bench-sweep" "$@"
fi
if [ "${1:-}" = scaling ]; then
  shift
  echo "# $(date -u +%Y-%m-%dT%H:%MZ) $(hostname) $(uname -m), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) cores, commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
  echo "# pinned to core ${CORE:-0} (taskset); load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
  exec taskset -c "${CORE:-0}" "$build/bench/cuboid-bench-scaling" "$@"
fi
echo "# $(date -u +%Y-%m-%dT%H:%MZ) $(hostname) $(uname -m), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
echo "# pinned to core ${CORE:-0} (taskset); load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
taskset -c "${CORE:-0}" "$build/bench/cuboid-bench-sim" "$@"
