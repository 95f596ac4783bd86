#!/usr/bin/env bash
# The README's test command: installs what is missing, then runs the suite.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/install.sh
set +e
.venv/bin/python -m pytest -q "$@"
rc=$?
set -e
# pytest exit 5: the selection ran no test; that is not a failure of the code.
if [ "$rc" = 5 ]; then echo "pytest: no tests ran"; exit 0; fi
exit "$rc"
