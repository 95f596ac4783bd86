#!/usr/bin/env bash
# benchmarks/uploads.py on this machine's Vulkan device with a 246 MiB host-visible
# window emulated (VKVERIFY_HOST_VISIBLE_CAP_MB), so the placement rule chooses
# staging on a full-BAR card such as the H200; 1 GiB by default (issue 18's targets: staged
# >= 0.9 x the ceiling, from file >= 0.85 x the ceiling, in place >= 0.95 x raw). Arguments go
# to uploads.py.
# Installs what it needs from files carried with the tree: see device_env.sh.
# Lead's command on the H200: device run "bash benchmarks/device_uploads.sh" with carry [".gl", ".whl"].
set -euo pipefail
cd "$(dirname "$0")/.."

source "$(dirname "$0")/device_env.sh"
export VKVERIFY_HOST_VISIBLE_CAP_MB="${VKVERIFY_HOST_VISIBLE_CAP_MB:-246}"

python3 -m vkverify.cli devices | grep -E '^\[|queue family|upload rule'
python3 benchmarks/uploads.py --mib 1024 "$@"
