#!/usr/bin/env bash
# Makes, here, what the device scripts carry to a bare GPU machine (device_env.sh installs them there):
#   .gl/   Debian packages: the Vulkan loader, the validation layers, and the GL dispatch libraries that
#          NVIDIA's ICD needs to create an instance (amd64, whatever this machine is);
#   .whl/  wheels for that machine's CPython 3.12 (x86-64): vkverify's dependencies but numpy and networkx,
#          which come with its Python, each at the version installed in .venv where there is one.
# Both are git-ignored. Run once per checkout, then name them in every device call's carry:
#   bash benchmarks/device_pack.sh
#   device run "bash benchmarks/device_uploads.sh --mib 256 --runs 7" with carry [".gl", ".whl"]
# Every file made here is checked: a .deb that dpkg cannot read, or a wheel that is not for CPython 3.12
# on x86-64 Linux, stops the script with the file's name. Nothing is left half made: each folder is built
# beside its place and moved there whole.
set -euo pipefail
cd "$(dirname "$0")/.."

DEBS=(libvulkan1 vulkan-validationlayers libglvnd0 libgl1 libglx0 libegl1 libgles2 libopengl0)
# jsonschema's needs are named one by one: the wheels are fetched without their dependencies, so that a
# platform tag pip cannot match fails here, not on the device machine.
WHEELS=(vulkan cffi pycparser jsonschema jsonschema-specifications referencing rpds-py attrs typing_extensions
        fastjsonschema orjson z3-solver)
PLATFORMS=(manylinux_2_39_x86_64 manylinux_2_35_x86_64 manylinux_2_34_x86_64 manylinux_2_31_x86_64
           manylinux_2_28_x86_64 manylinux_2_27_x86_64 manylinux_2_24_x86_64 manylinux_2_17_x86_64
           manylinux2014_x86_64 manylinux1_x86_64)

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

echo "device_pack: .gl (${DEBS[*]})" >&2
apt=(-oAPT::Architecture=amd64 -oAPT::Architectures=amd64 -oAPT::Sandbox::User=root -oDebug::NoLocking=1 -qq
     "-oDir::State::Lists=$work/lists" "-oDir::Cache=$work/cache")
mkdir -p "$work/lists/partial" "$work/cache/archives/partial" "$work/gl"
apt-get "${apt[@]}" update
(cd "$work/gl" && apt-get "${apt[@]}" download "${DEBS[@]}")
for deb in "$work"/gl/*.deb; do
    dpkg-deb --info "$deb" >/dev/null || { echo "device_pack: $(basename "$deb"): not a Debian package" >&2; exit 1; }
done

# The version .venv runs, so that the device measures the code the suite tested; the index's newest elsewhere.
pinned() {
    local version=""
    if [ -x .venv/bin/python ]; then
        version=$(.venv/bin/python -c "import importlib.metadata as m, sys
try: print(m.version(sys.argv[1]))
except m.PackageNotFoundError: pass" "$1")
    fi
    echo "$1${version:+==$version}"
}
specs=()
for name in "${WHEELS[@]}"; do specs+=("$(pinned "$name")"); done
echo "device_pack: .whl (${specs[*]})" >&2
platforms=()
for p in "${PLATFORMS[@]}"; do platforms+=(--platform "$p"); done
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    "${platforms[@]}" -d "$work/whl" "${specs[@]}"
for wheel in "$work"/whl/*.whl; do
    tags=$(basename "$wheel" .whl | cut -d- -f3-)
    case "$tags" in
        py3-none-any|py2.py3-none-any|cp312-*|cp3*-abi3-*|py3-none-manylinux*) ;;
        *) echo "device_pack: $(basename "$wheel"): not for CPython 3.12 ($tags)" >&2; exit 1 ;;
    esac
    case "$tags" in *-any|*x86_64*) ;; *) echo "device_pack: $(basename "$wheel"): not x86-64 ($tags)" >&2; exit 1 ;; esac
done

rm -rf .gl .whl
mv "$work/gl" .gl
mv "$work/whl" .whl
echo "device_pack: .gl $(du -sh .gl | cut -f1), .whl $(du -sh .whl | cut -f1): carry [\".gl\", \".whl\"]" >&2
