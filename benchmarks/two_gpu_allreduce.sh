#!/usr/bin/env bash
# The n = 2 ring all-reduce (tests/corpus/80-*) on two GPUs (issue 8): replayed with
# exported timeline semaphores and with VKVERIFY_PROXY=1, digests compared both ways and
# with the simulator's reference; then the mutant without the cross-round wait
# (tests/corpus/81-*), replayed several times, reporting whether the GPUs expose its
# race as a digest that differs from the reference. Exit 1 when the correct stream's
# digests disagree; the mutant's outcome is reported, not judged.
#
# Installs the loader and the Python packages from the files carried with the tree,
# as benchmarks/device_replay.sh does. Lead's command on the two-GPU kind:
#   device run "bash benchmarks/two_gpu_allreduce.sh" with carry [".gl", ".whl"], kind nvidia-h200-x2
set -euo pipefail
cd "$(dirname "$0")/.."

source "$(dirname "$0")/device_env.sh"
unset VKVERIFY_PROXY VKVERIFY_DEVICE VKVERIFY_SHARE

python3 -m vkverify.cli devices
python3 - "${MUTANT_RUNS:-20}" <<'PY'
import json, os, sys, time
from vkverify.check import check
from vkverify.model import from_dict
from vkverify.model.params import instantiate
from vkverify.runtime import replay

def ring(path):
    return from_dict(instantiate(json.load(open(path)), {"n": 2}), path)

def run(stream, proxy):
    if proxy:
        os.environ["VKVERIFY_PROXY"] = "1"
    else:
        os.environ.pop("VKVERIFY_PROXY", None)
    start = time.monotonic()
    result = replay(stream)  # the sharing choices go to stderr
    how = "proxy" if proxy else "exported"
    bridged = "proxy threads" if any(t.id.startswith("proxy_") for t in result.recorded.threads) else "no proxy thread"
    print(f"{stream.name} [{how}] on {result.device}: {time.monotonic() - start:.2f} s, {bridged}, "
          f"recorded stream findings: {len(check(result.recorded))}")
    return result

clean = ring("tests/corpus/80-ring-allreduce-params.json")
exported, proxied = run(clean, False), run(clean, True)
if any(t.id.startswith("proxy_") for t in exported.recorded.threads):
    print("  note: these devices cannot share timeline semaphores (see the sharing lines): both runs used proxies")
ok = True
for name, result in (("exported", exported), ("proxy", proxied)):
    verdict = "reference equal" if result.reference == {} else f"REFERENCE MISMATCH {result.reference}"
    print(f"  {name}: {verdict}")
    ok &= result.reference == {}
same = exported.digests == proxied.digests and exported.reads == proxied.reads
print(f"  exported vs proxy digests: {'equal' if same else 'DIFFERENT'}")
for buffer, digest in sorted(exported.digests.items()):
    print(f"    buffer {buffer} {digest}")

mutant = ring("tests/corpus/81-ring-allreduce-no-cross-round-wait.json")
runs = int(sys.argv[1])
for proxy in (False, True):
    differing = sum(bool(run(mutant, proxy).reference) for _ in range(runs))
    print(f"  mutant [{'proxy' if proxy else 'exported'}]: {differing} of {runs} runs differ from the reference "
          f"({'the GPUs expose the race' if differing else 'the race stays hidden on these GPUs'})")
sys.exit(0 if ok and same else 1)
PY
