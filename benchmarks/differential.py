"""Long differential runs: two readings of happens-before compared on many generated streams.

    python benchmarks/differential.py --examples 5000 [--seed 7] [--out disagreements.jsonl]
        [--resubmit | --timelines | --batched | --threads | --shared-timelines | --patterns | --images
         | --image-features | --syncval-images | --events | --markers | --imported]
        [--mode reference|consumers|explain|fixes|incremental|replay|quick|witness|sim]
        [--reading NAME=VALUE ...]

Prints how many streams were compared, skipped (not completing, or outside what the reference reads: each
reason counted) and how many disagreed, and of those compared how many use each feature of tests/differential.py's
FEATURES (counter reads, unaccessed and sampled bindings, blits, compressed images, plane copies, slice barriers);
each disagreeing stream goes to --out as one JSON line (with what
differed), the smallest first on the terminal. In --mode reference a stream of several threads is compared with
the reference's verdict over every submission order its threads allow, which the checker reads too (docs/format.md,
"Several host threads"). The suite runs each comparison with fewer examples (the test named below).

Modes (what is compared with what):
- reference: the fast checker against the slow reference (tests/test_reference.py), both under the readings
  --reading sets (check/readings.py; default: the defaults);
- consumers: explain and the mutation analysis against both (tests/test_consumers_agree.py);
- explain: explain against the checker alone;
- fixes: the barrier a finding between two commands of one command buffer gives as its fix, recorded, orders
  the pair by the reference (tests/test_reference.py);
- incremental: the checker fed op by op against a check of each prefix, and a fork without each op against
  a check of the stream without it (tests/test_incremental.py); one-thread streams only;
- replay: resubmitted command buffers replayed from a plan against running every command (tests/test_replay.py);
- quick: the checker's quick lane against the general comparison of every access (tests/test_quick.py);
- witness: each witness schedule replayed by the walk shows its finding, and needs every step
  (tests/test_witness.py);
- sim: the simulator's adversarial schedules against the checker's findings (tests/test_sim_properties.py).
Streams (tests/differential.py): `streams` by default; --resubmit: their command buffers submitted again
(resubmitting_streams); --batched: adjacent submits to one queue merged into one submit of several batches
or command buffers (batched_streams); --timelines: several host threads signalling shared timelines
(tests/test_semaphores.py timeline_streams); --threads: a producer and a consumer thread, on their own queues
or sharing one (thread_streams); --shared-timelines: two or three threads signalling the same timelines in turn,
from the host and their submits, sharing queues, every stream completing (shared_timeline_streams); none of the
last three for incremental; --patterns: the patterns issue 25 found
the checker wrong on, with drawn stages and masks (pattern_streams); --images: image uploads, readbacks, copies,
clears, storage image dispatches and image barriers with layout transitions (image_streams); --image-features: those
with blits, sampled and unaccessed bindings, and a block-compressed, multi-planar or 3D (2d_array_compatible) image's
copies, uploads, clears, dispatches and barriers inserted (image_feature_streams); --syncval-images: the image
features the syncval port added (queue family ownership transfers of images, depth/stencil images and their clears,
aliased images, multisampled images and resolves: syncval_image_streams); --events: sets and
waits of events as users write them (event_streams); --imported: thread_streams with waits and signals through a
semaphore importing a timeline's payload, compared with the stream naming the timeline and with the reference
(imported_semaphore_streams); --markers: buffer marker writes and query result copies among
accesses to the same words (marker_streams). consumers and fixes read a stream of several threads where its
submission order is the only one (Reference), and skip it otherwise.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from collections import Counter
from functools import partial
from pathlib import Path

from hypothesis import HealthCheck, given, seed, settings

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.differential import (FEATURES, batched_streams, completes, consumer_disagreements, disagreements,
                                event_streams, explain_disagreements, features, fix_disagreements,
                                image_feature_streams, image_streams, imported_semaphore_disagreements,
                                imported_semaphore_streams, marker_streams, pattern_streams, resubmitting_streams,
                                shared_timeline_streams, streams, syncval_image_streams, thread_streams,
                                variant_disagreements)
from tests.test_incremental import incremental_disagreements
from tests.test_semaphores import timeline_streams
from tests.test_sim_properties import sim_doc_disagreements
from tests.test_witness import witness_disagreements
from vkverify.check import check
from vkverify.check.readings import DEFAULT, parse_reading
from vkverify.check.reference import OutsideReference
from vkverify.model import from_dict
from vkverify.model.errors import StreamError

# mode -> (its comparison, whether it reads only streams that complete: the reference's liveness limit)
MODES = {"reference": (disagreements, True), "consumers": (consumer_disagreements, True),
         "explain": (explain_disagreements, True),
         "fixes": (fix_disagreements, True),
         "incremental": (incremental_disagreements, False),
         "replay": (partial(variant_disagreements, replay=False), False),
         "quick": (partial(variant_disagreements, quick=False), False),
         "witness": (witness_disagreements, False), "sim": (sim_doc_disagreements, False)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--examples", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, default=Path("differential-disagreements.jsonl"))
    ap.add_argument("--mode", choices=sorted(MODES), default="reference")
    generator = ap.add_mutually_exclusive_group()
    generator.add_argument("--resubmit", action="store_true", help="command buffers submitted again")
    generator.add_argument("--timelines", action="store_true", help="host threads signalling shared timelines")
    generator.add_argument("--batched", action="store_true", help="submits of several batches and command buffers")
    generator.add_argument("--threads", action="store_true", help="a producer and a consumer thread")
    generator.add_argument("--shared-timelines", action="store_true",
                           help="two or three threads signalling the same timelines in turn (shared_timeline_streams)")
    generator.add_argument("--patterns", action="store_true", help="the patterns of issue 25 (pattern_streams)")
    generator.add_argument("--images", action="store_true", help="image commands and barriers (image_streams)")
    generator.add_argument("--image-features", action="store_true",
                           help="blits, sampled bindings, compressed, planar and 3D images (image_feature_streams)")
    generator.add_argument("--syncval-images", action="store_true",
                           help="the image features of the syncval port (syncval_image_streams)")
    generator.add_argument("--events", action="store_true", help="sets and waits of events (event_streams)")
    generator.add_argument("--markers", action="store_true",
                           help="buffer markers and query result copies (marker_streams)")
    generator.add_argument("--imported", action="store_true",
                           help="thread_streams with a semaphore importing a timeline's payload "
                                "(imported_semaphore_streams; --mode reference only)")
    ap.add_argument("--reading", action="append", default=[], metavar="NAME=VALUE",
                    help="a reading of what the spec leaves open (--mode reference)")
    args = ap.parse_args()
    readings = DEFAULT
    for text in args.reading:
        try:
            readings = parse_reading(readings, text)
        except ValueError as e:
            ap.error(f"--reading: {e}")
    if args.reading and args.mode != "reference":
        ap.error("--reading applies to --mode reference")
    if (args.timelines or args.threads or args.shared_timelines) and args.mode == "incremental":
        ap.error("--timelines, --threads and --shared-timelines draw streams of several threads, which --mode "
                 "incremental does not read")
    if args.imported and (args.mode != "reference" or args.reading):
        ap.error("--imported compares with the reference, under the default readings")
    compare, complete_only = MODES[args.mode]
    if args.imported:
        compare = imported_semaphore_disagreements
    elif args.mode == "reference":
        compare = partial(disagreements, readings=readings)
    counts = {"compared": 0, "skipped": 0, "disagreed": 0}
    reasons: Counter[str] = Counter()
    using: Counter[str] = Counter()  # compared streams per feature
    found: list[tuple[list[str], dict]] = []
    start = time.perf_counter()

    @seed(args.seed)
    @settings(max_examples=args.examples, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    @given(timeline_streams() if args.timelines else thread_streams() if args.threads
           else shared_timeline_streams() if args.shared_timelines
           else resubmitting_streams() if args.resubmit else batched_streams() if args.batched
           else pattern_streams() if args.patterns else image_streams() if args.images
           else image_feature_streams() if args.image_features
           else syncval_image_streams() if args.syncval_images
           else event_streams() if args.events else marker_streams() if args.markers
           else imported_semaphore_streams() if args.imported else streams())
    def run(doc: dict) -> None:
        try:
            if complete_only and not completes(check(from_dict(doc), readings)):
                counts["skipped"] += 1
                reasons["does not complete (deadlock, wait never satisfied, timeline or binary misuse)"] += 1
                return
            differ = compare(doc)
        except (OutsideReference, StreamError) as e:
            if isinstance(e, StreamError) and args.mode != "sim":
                raise  # only the simulator refuses a valid stream (a linear blit: machine.blit_refusal)
            counts["skipped"] += 1
            reasons[re.sub(r"'[^']*'|\S*\[\d+\]|\d+", "_", str(e))] += 1
            return
        counts["compared"] += 1
        using.update(features(from_dict(doc)))
        if differ:
            counts["disagreed"] += 1
            found.append((differ, doc))
        done = sum(counts.values()) - counts["disagreed"]
        if done % 500 == 0:
            print(f"  {done} streams, {counts['disagreed']} disagreed", file=sys.stderr)

    run()
    print(f"{args.mode}: {counts['compared']} compared, {counts['skipped']} skipped, {counts['disagreed']} "
          f"disagreed ({time.perf_counter() - start:.0f} s, seed {args.seed})")
    for reason, n in reasons.most_common():
        print(f"  skipped {n}: {reason}")
    print("  compared streams using: " + ", ".join(f"{name} {using[name]}" for name in FEATURES))
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
