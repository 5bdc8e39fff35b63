#!/usr/bin/env bash
# The libFuzzer harnesses of tests/fuzz (docs/testing.md, "Fuzzing").
#
#   scripts/fuzz.sh [SECONDS_PER_HARNESS]   fuzz every harness that long (default 60)
#   scripts/fuzz.sh --replay                run the kept inputs once (corpus + regressions), no fuzzing
#   scripts/fuzz.sh --build-only            configure the checked build and build the harnesses
#
# Builds the checked build (clang, AddressSanitizer + UndefinedBehaviorSanitizer, libFuzzer) in
# its own folder, $CUBOID_FUZZ_BUILD (default build-fuzz). Harnesses run $CUBOID_FUZZ_PARALLEL at a
# time (default: the number of cores, at most 2), one libFuzzer process each. What fuzzing finds
# worth keeping goes to BUILD/fuzz-corpus/HARNESS (the repository's corpus stays as it is); a
# crash, hang (over 10 s for one input), leak or sanitizer report is saved under
# BUILD/fuzz-findings/HARNESS/ and makes the script exit 1. Each harness's log is
# BUILD/fuzz-logs/HARNESS.log.
set -euo pipefail
cd "$(dirname "$0")/.."

build=${CUBOID_FUZZ_BUILD:-build-fuzz}
harnesses=(fuzz_scenario_loader fuzz_run_scenario fuzz_search_scenario fuzz_hf_config fuzz_profile_loader fuzz_nccl_tests_import fuzz_measured_figures)
mode=fuzz
seconds=60
case "${1:-}" in
  --replay) mode=replay ;;
  --build-only) mode=build ;;
  -h|--help) sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
  '') ;;
  *[!0-9]*) echo "fuzz.sh: SECONDS_PER_HARNESS must be a whole number of seconds, or --replay" >&2; exit 2 ;;
  *) seconds=$1 ;;
esac
parallel=${CUBOID_FUZZ_PARALLEL:-$(( $(nproc) < 2 ? $(nproc) : 2 ))}

mkdir -p "$build"
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_COMPILER=clang++ \
  -DCUBOID_SANITIZE=ON -DCUBOID_FUZZ=ON -DCUBOID_PCH=ON -DCUBOID_BENCH=OFF -DCUBOID_CUDA=OFF -DCUBOID_MPI=OFF \
  > "$build/configure.log" || { cat "$build/configure.log"; exit 1; }
cmake --build "$build" -j "$(nproc)" --target "${harnesses[@]}"
[[ $mode == build ]] && exit 0

kept_inputs() {  # the repository's inputs of one harness: seeds, and what once failed
  echo "tests/fuzz/corpus/$1" "tests/fuzz/regressions/$1"
}

if [[ $mode == replay ]]; then
  status=0
  for h in "${harnesses[@]}"; do
    # shellcheck disable=SC2046
    if "$build/fuzz/$h" -runs=0 -timeout=10 -rss_limit_mb=2048 $(kept_inputs "$h") > "$build/$h.replay.log" 2>&1; then
      echo "$h: $(grep -c . <(find $(kept_inputs "$h") -type f)) kept inputs, no finding"
    else
      echo "$h: FAILED on a kept input:"; tail -40 "$build/$h.replay.log"; status=1
    fi
  done
  exit $status
fi

mkdir -p "$build/fuzz-logs"
fuzz_one() {
  local h=$1
  local corpus=$build/fuzz-corpus/$h findings=$build/fuzz-findings/$h
  mkdir -p "$corpus" "$findings"
  # shellcheck disable=SC2046
  "$build/fuzz/$h" "$corpus" $(kept_inputs "$h") -max_total_time="$seconds" -timeout=10 \
    -rss_limit_mb=2048 -malloc_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$findings/" \
    > "$build/fuzz-logs/$h.log" 2>&1
}

declare -A pid_of
status=0
report() {
  local h=$1 rc=$2
  local log=$build/fuzz-logs/$h.log runs execs corp
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  execs=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
  corp=$(grep -o 'corp: [0-9]*/[0-9]*[a-zA-Z]*' "$log" | tail -1 | sed 's/corp: //')
  echo "$h: ${runs:-?} executions, ${execs:-?} exec/s, corpus ${corp:-?} (inputs/size)"
  if [[ $rc != 0 ]]; then
    echo "$h: FINDING (exit $rc), saved in $build/fuzz-findings/$h/:"
    ls "$build/fuzz-findings/$h/"
    grep -m1 -B2 -A20 -E 'ERROR: |runtime error|internal error|deadly signal|timeout' "$log" || tail -30 "$log"
    status=1
  fi
}
running=()
for h in "${harnesses[@]}"; do
  fuzz_one "$h" & pid_of[$h]=$!
  running+=("$h")
  if (( ${#running[@]} >= parallel )); then
    for r in "${running[@]}"; do rc=0; wait "${pid_of[$r]}" || rc=$?; report "$r" "$rc"; done
    running=()
  fi
done
for r in "${running[@]}"; do rc=0; wait "${pid_of[$r]}" || rc=$?; report "$r" "$rc"; done
exit $status
