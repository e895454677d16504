#!/usr/bin/env bash
# Installs the Debian packages comfuse builds with. Idempotent: installs only what is missing.
set -euo pipefail

packages=(cmake ninja-build g++ libeigen3-dev nlohmann-json3-dev libboost-dev libgtest-dev libssl-dev)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  sudo_cmd=()
  [[ $(id -u) -ne 0 ]] && sudo_cmd=(sudo)
  "${sudo_cmd[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

if [[ ! -f /usr/local/cuda/include/nvrtc.h ]]; then
  echo "setup: the CUDA Toolkit 13 is expected at /usr/local/cuda (NVRTC, CUPTI, driver API headers)" >&2
  exit 1
fi
