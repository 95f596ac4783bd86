"""Generated streams replayed on the device, each compared digest for digest with the simulator.

    python benchmarks/replay_generated.py --images|--features|--markers [--examples 500] [--seed 0]
        [--out mismatches.jsonl]

--images: tests/differential.py's image_streams (storage image dispatches through the image kernels among
uploads, readbacks, copies, clears and image barriers); --features: its image_feature_streams (those with an image
P that is block-compressed, multi-planar or 3D, often 2d_array_compatible, and blits, sampled bindings, plane and
block copies, slice barriers), counting the replayed streams that use each of its `features`; --markers: its
marker_streams (query result copies, and buffer markers where the device offers VK_AMD_buffer_marker, among
accesses to the same words), with a host read before any wait left out (it races the device) and 12-byte query
results (refused). Prints how many streams were replayed, left out (each reason counted: the replay's refusal,
the device's, as a format it lacks, or the simulator's, as a linear blit) and mismatched; each mismatching stream
goes to --out as one JSON line.
The suite replays fewer (tests/test_replay_images.py, tests/test_replay_queries.py). A device that runs commands
concurrently may give racing streams other digests than the simulator's; Lavapipe runs one after another.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from pathlib import Path

from hypothesis import HealthCheck, given, seed, settings

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.differential import image_streams, marker_streams
from tests.test_replay_queries import offers_buffer_markers, without_markers
from vkverify.model import InvalidStream, from_dict
from vkverify.runtime import Unsupported, replay, replayable


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    kind = ap.add_mutually_exclusive_group(required=True)
    kind.add_argument("--images", action="store_true", help="image_streams")
    kind.add_argument("--features", action="store_true", help="image_feature_streams")
    kind.add_argument("--markers", action="store_true", help="marker_streams")
    ap.add_argument("--examples", type=int, default=500)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, default=Path("replay-mismatches.jsonl"))
    args = ap.parse_args()
    markers = args.markers and offers_buffer_markers()
    if args.features:
        from tests.differential import features, image_feature_streams
    name = "images" if args.images else "features" if args.features else "markers"
    generator = image_streams() if args.images else image_feature_streams() if args.features else marker_streams()
    counts: Counter[str] = Counter()
    used: Counter[str] = Counter()  # --features: replayed streams by feature
    found: list[dict] = []
    start = time.perf_counter()

    @seed(args.seed)
    @settings(max_examples=args.examples, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    @given(generator)
    def run(doc: dict) -> None:
        if args.markers and doc["threads"]["main"][-3]["op"] not in ("wait_fences", "device_wait_idle"):
            counts["left out: a host read before any wait"] += 1
            return
        doc = doc if not args.markers or markers else without_markers(doc)
        stream = from_dict(doc)
        reason = replayable(stream)
        if reason is not None:
            counts[f"left out: {reason.partition(': ')[2]}"] += 1
            return
        try:
            mismatches = replay(stream).reference
        except (Unsupported, InvalidStream) as e:  # the device's refusal, or the simulator's (a linear blit)
            counts[f"left out: {str(e).rpartition(': ')[2]}"] += 1
            return
        counts["replayed"] += 1
        if args.features:
            used.update(features(stream))
        if mismatches:
            counts["mismatched"] += 1
            found.append({"mismatches": {k: list(v) for k, v in mismatches.items()}, "stream": doc})

    run()
    print(f"{name}: {counts['replayed']} replayed, {counts['mismatched']} "
          f"mismatched ({time.perf_counter() - start:.0f} s, seed {args.seed}"
          f"{', markers left out: no VK_AMD_buffer_marker' if args.markers and not markers else ''})")
    for feature, n in sorted(used.items()):
        print(f"  replayed with {feature}: {n}")
    for reason, n in sorted(counts.items()):
        if reason.startswith("left out"):
            print(f"  {reason}: {n}")
    if found:
        with args.out.open("w") as out:
            for entry in found:
                out.write(json.dumps(entry) + "\n")
        print(f"all {len(found)} in {args.out}")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
