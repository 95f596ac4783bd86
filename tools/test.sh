#!/usr/bin/env bash
# The README's test command: installs what is missing, then runs the suite.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/install.sh
# The third-party program's test needs wgpu (a wheel with wgpu-native inside); where it cannot be installed,
# that test skips and -ra prints why.
.venv/bin/python -c "import wgpu" 2>/dev/null || .venv/bin/python -m pip install -q -e '.[thirdparty]' \
    || echo "test.sh: the thirdparty extra (wgpu) did not install; tests/test_import_wgpu.py will skip"
set +e
.venv/bin/python -m pytest -q "$@"
rc=$?
set -e
# pytest exit 5: the selection ran no test; that is not a failure of the code.
if [ "$rc" = 5 ]; then echo "pytest: no tests ran"; exit 0; fi
exit "$rc"
