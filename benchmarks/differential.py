"""Long differential runs: the fast checker against the slow reference on many generated streams.

    python benchmarks/differential.py --examples 5000 [--seed 7] [--out disagreements.jsonl] [--resubmit]

Prints how many streams were compared, skipped (not completing, or outside what the reference reads) and
how many disagreed; each disagreeing stream goes to --out as one JSON line (with what differed), the
smallest first on the terminal. The suite runs the same comparison with fewer examples
(tests/test_reference.py). --resubmit: streams whose command buffers are submitted again (the checker's
replay, tests/differential.py resubmitting_streams).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from hypothesis import HealthCheck, given, seed, settings

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.differential import completes, disagreements, resubmitting_streams, streams
from vkverify.check import check
from vkverify.check.reference import Unsupported
from vkverify.model import from_dict


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--examples", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, default=Path("differential-disagreements.jsonl"))
    ap.add_argument("--resubmit", action="store_true", help="command buffers submitted again")
    args = ap.parse_args()
    counts = {"compared": 0, "skipped": 0, "disagreed": 0}
    found: list[tuple[list[str], dict]] = []
    start = time.perf_counter()

    @seed(args.seed)
    @settings(max_examples=args.examples, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    @given(resubmitting_streams() if args.resubmit else streams())
    def run(doc: dict) -> None:
        try:
            if not completes(check(from_dict(doc))):
                counts["skipped"] += 1
                return
            differ = disagreements(doc)
        except Unsupported:
            counts["skipped"] += 1
            return
        counts["compared"] += 1
        if differ:
            counts["disagreed"] += 1
            found.append((differ, doc))
        done = sum(counts.values()) - counts["disagreed"]
        if done % 500 == 0:
            print(f"  {done} streams, {counts['disagreed']} disagreed", file=sys.stderr)

    run()
    print(f"{counts['compared']} compared, {counts['skipped']} skipped, {counts['disagreed']} disagreed "
          f"({time.perf_counter() - start:.0f} s, seed {args.seed})")
    if found:
        found.sort(key=lambda f: len(json.dumps(f[1])))
        with args.out.open("w") as out:
            for differ, doc in found:
                out.write(json.dumps({"disagreements": differ, "stream": doc}) + "\n")
        print("\n".join(found[0][0]))
        print(f"all {len(found)} in {args.out}")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
