#!/usr/bin/env bash
# Installs the Debian 12 packages cuboid needs, only those missing. Needs root (or sudo).
set -euo pipefail
# MPI (sweeps over mpirun) and Debian's jupyter, matplotlib and pandas (the notebooks) are part of
# the default set: their tests (labels mpi and notebooks) run in the normal test suite. clang and
# its runtime libraries build the checked build (sanitizers, libFuzzer) that scripts/test.sh runs.
# Chromium (headless) and PIL render and check the HTML report (test label browser).
packages=(build-essential cmake ninja-build libboost-graph-dev libboost-program-options-dev
          libfmt-dev libeigen3-dev catch2 libyaml-cpp-dev nlohmann-json3-dev
          libopenmpi-dev openmpi-bin
          clang libclang-rt-14-dev
          jupyter-nbconvert python3-nbformat python3-ipykernel python3-matplotlib python3-pandas
          chromium python3-pil)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then echo "all Debian packages present"; exit 0; fi
echo "installing: ${missing[*]}"
sudo_cmd=""; [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
$sudo_cmd apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq "${missing[@]}"
