#!/usr/bin/env bash
# Replay every replayable corpus stream on this machine's Vulkan device and print
# its digests; run it here (Lavapipe) and on a GPU machine and compare the output.
# Installs what it needs from files carried with the tree: see device_env.sh.
# Lead's command on the H200: device run "bash benchmarks/device_replay.sh" with carry [".gl", ".whl"].
set -euo pipefail
cd "$(dirname "$0")/.."

source "$(dirname "$0")/device_env.sh"

python3 -m vkverify.cli devices
python3 benchmarks/device_replay.py
