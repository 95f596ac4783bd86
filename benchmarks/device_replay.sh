#!/usr/bin/env bash
# Replay every replayable corpus stream on this machine's Vulkan device and print
# its digests; run it here (Lavapipe) and on a GPU machine and compare the output.
#
# From a clean tree on a machine without the Vulkan loader or the Python packages,
# it installs them from files carried with the tree (/work/.library/device/README.md):
#   .gl/   Debian .debs (libvulkan1 ...), unpacked with dpkg -x
#   .whl/  wheels for Python 3.12 (vulkan, cffi, pycparser, jsonschema and its needs, z3-solver)
# Lead's command on the H200: device run "bash benchmarks/device_replay.sh" with carry [".gl", ".whl"].
set -euo pipefail
cd "$(dirname "$0")/.."

if ! ldconfig -p | grep -q 'libvulkan.so.1'; then
    for f in .gl/*.deb; do dpkg -x "$f" /; done
    ldconfig
fi
# NVIDIA's ICD lives outside the loader's search path on those machines.
nvidia_icd=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
if [ -z "${VK_DRIVER_FILES:-}" ] && [ -f "$nvidia_icd" ]; then
    export VK_DRIVER_FILES="$nvidia_icd"
fi
if [ -d .whl ] && ! python3 -c 'import vulkan, jsonschema, z3' 2>/dev/null; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
    export PYTHONPATH=/tmp/site
fi
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"

python3 -m vkverify.cli devices
python3 - <<'PY'
import glob, time
from vkverify.model import load
from vkverify.runtime import RuntimeFault, replay, replayable

ran = failed = 0
start = time.monotonic()
for path in sorted(glob.glob("tests/corpus/*.json")):
    stream = load(path)
    if replayable(stream) is not None:
        continue
    try:
        result = replay(stream)
    except RuntimeFault as error:
        print(f"{stream.name}: not run: {error}")
        failed += 1
        continue
    ran += 1
    verdict = ("no reference" if result.reference is None
               else "reference equal" if not result.reference else "REFERENCE MISMATCH")
    print(f"{stream.name} [{'hazard-free' if not stream.expect else 'hazards'}] {verdict}")
    for buffer, digest in sorted(result.digests.items()):
        print(f"  buffer {buffer} {digest}")
    for ref, digest in sorted(result.reads.items()):
        print(f"  read {ref} {digest}")
print(f"replayed {ran} streams on {result.device if ran else '-'} in {time.monotonic() - start:.1f} s; "
      f"{failed} not runnable on this device")
PY
