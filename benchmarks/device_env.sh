# Sourced by the device scripts: makes a machine without the Vulkan loader or the
# Python packages ready, from files carried with the tree (made here by benchmarks/device_pack.sh):
#   .gl/   Debian .debs: libvulkan1, vulkan-validationlayers, and the GL dispatch libraries
#          (libglvnd0 libgl1 libglx0 libegl1 libgles2 libopengl0) that NVIDIA's ICD,
#          libGLX_nvidia, needs to create an instance; unpacked with dpkg -x
#   .whl/  wheels for Python 3.12 (vulkan, cffi, pycparser, jsonschema and its needs,
#          fastjsonschema, orjson, z3-solver); numpy and networkx come with the machine's Python.
cd "$(dirname "${BASH_SOURCE[0]}")/.."
if ! ldconfig -p | grep -q 'libvulkan.so.1' || ! ldconfig -p | grep -q 'libGLdispatch.so.0'; then
    for f in .gl/*.deb; do dpkg -x "$f" /; done
    ldconfig
fi
# NVIDIA's ICD lives outside the loader's search path on those machines.
nvidia_icd=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
if [ -z "${VK_DRIVER_FILES:-}" ] && [ -f "$nvidia_icd" ]; then
    export VK_DRIVER_FILES="$nvidia_icd"
fi
if [ -d .whl ] && ! python3 -c 'import vulkan, jsonschema, fastjsonschema, orjson, z3' 2>/dev/null; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
    export PYTHONPATH=/tmp/site
fi
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
