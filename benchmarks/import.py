"""Calls per second through `import_capture` and through `check`, for a capture of >= 10^5 calls.

The capture is of `vkverify replay` running a decode-shaped stream (benchmarks/decode_stream.py)
under the GFXReconstruct layer on the default device (Lavapipe here). The stream's buffers are
1 KiB: a replay's time (the device's and the simulator reference's) grows with them, the calls
do not. gfxrecon-convert's time on the same capture is the baseline: import runs it, then
gfxrecon-extract, then translates the JSON lines.

    python benchmarks/import.py [COMMANDS]     # default 15000 stream commands: about 1.1 * 10^5 calls
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent), str(HERE)]


def main(argv: list[str]) -> int:
    from decode_stream import command_count, decode_stream

    from vkverify.check import check
    from vkverify.importer import capture_env, import_capture
    from vkverify.model.dump import dumps

    stream = decode_stream(int(float(argv[0])) if argv else 15_000, size=1024)
    with tempfile.TemporaryDirectory(prefix="vkverify-bench-") as tmp:
        source, capture = Path(tmp) / "decode.json", Path(tmp) / "decode.gfxr"
        source.write_text(dumps(stream))
        t0 = time.perf_counter()
        replayed = subprocess.run([sys.executable, "-m", "vkverify.cli", "replay", str(source)],
                                  env=capture_env(capture, os.environ), capture_output=True, text=True, check=False)
        if replayed.returncode != 0:
            print(f"replay failed ({replayed.returncode}): {replayed.stderr.strip()[-500:]}", file=sys.stderr)
            return 1
        t1 = time.perf_counter()
        subprocess.run(["gfxrecon-convert", "--output", str(Path(tmp) / "baseline.jsonl"), str(capture)],
                       check=True, capture_output=True)
        t2 = time.perf_counter()
        imported, summary = import_capture(capture)
        t3 = time.perf_counter()
        findings = check(imported)
        t4 = time.perf_counter()
        size = capture.stat().st_size
    calls = summary.calls
    print(f"stream: {stream.name}, {command_count(stream)} commands; replay under the capture layer: {t1 - t0:.1f} s")
    print(f"capture: {calls} calls, {size / 2**20:.1f} MiB; imported: {sum(summary.commands.values())} commands, "
          f"{sum(summary.host_ops.values())} host ops")
    print(f"gfxrecon-convert: {t2 - t1:.2f} s, {calls / (t2 - t1):,.0f} calls/s")
    print(f"import: {t3 - t2:.2f} s, {calls / (t3 - t2):,.0f} calls/s ({(t3 - t2) / (t2 - t1):.2f}x gfxrecon-convert)")
    print(f"check:  {t4 - t3:.2f} s, {calls / (t4 - t3):,.0f} calls/s ({len(findings)} findings)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
