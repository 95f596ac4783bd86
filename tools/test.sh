#!/usr/bin/env bash
# The README's test command: installs what is missing, then runs the suite.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/install.sh
# The third-party programs' tests need the thirdparty extra (wgpu, taichi, ncnn, vkdispatch, computeml: wheels
# with their native libraries inside); where a package cannot be installed, its test skips and -ra prints why.
.venv/bin/python -c "import wgpu, taichi, ncnn, vkdispatch, computeml" 2>/dev/null \
    || .venv/bin/python -m pip install -q -e '.[thirdparty]' \
    || echo "test.sh: the thirdparty extra (wgpu, taichi, ncnn, vkdispatch, computeml) did not install; the tests of" \
            "what is missing will skip"
set +e
.venv/bin/python -m pytest -q "$@"
rc=$?
set -e
# pytest exit 5: the selection ran no test; that is not a failure of the code.
if [ "$rc" = 5 ]; then echo "pytest: no tests ran"; exit 0; fi
exit "$rc"
