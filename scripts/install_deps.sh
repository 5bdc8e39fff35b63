#!/usr/bin/env bash
# Installs the Debian 12 packages cuboid needs, only those missing. Needs root (or sudo).
set -euo pipefail
packages=(build-essential cmake ninja-build libboost-graph-dev libboost-program-options-dev
          libfmt-dev libeigen3-dev catch2 libyaml-cpp-dev nlohmann-json3-dev)
if [ "${CUBOID_WITH_MPI:-0}" = 1 ]; then packages+=(libopenmpi-dev openmpi-bin); fi
if [ "${CUBOID_WITH_NOTEBOOKS:-0}" = 1 ]; then packages+=(jupyter-nbconvert python3-nbformat python3-ipykernel python3-matplotlib python3-pandas); fi
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then echo "all Debian packages present"; exit 0; fi
echo "installing: ${missing[*]}"
sudo_cmd=""; [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
$sudo_cmd apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq "${missing[@]}"
