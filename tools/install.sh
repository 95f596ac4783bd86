#!/usr/bin/env bash
# Installs what vkverify needs on Debian 12 (run as root, or with sudo available):
# the Vulkan/SPIR-V tools from Debian, a virtualenv in .venv, and the package with its test extra.
set -euo pipefail
cd "$(dirname "$0")/.."
APT_PACKAGES="mesa-vulkan-drivers libvulkan1 vulkan-tools glslang-tools spirv-tools vulkan-validationlayers graphviz gfxreconstruct"
missing=""
for p in $APT_PACKAGES; do dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"; done
if [ -n "$missing" ]; then
    echo "install.sh: installing Debian packages:$missing"
    SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq $missing >/dev/null
fi
PY="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
    "$PY" -m venv .venv || { echo "install.sh: '$PY -m venv' failed (apt-get install python3-venv)" >&2; exit 1; }
fi
.venv/bin/python -m pip install -q --upgrade pip >/dev/null
.venv/bin/python -m pip install -q -e '.[test]'
