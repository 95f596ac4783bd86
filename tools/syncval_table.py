"""Write the table of docs/syncval.md: every TEST_F of syncval's tests, ported or why not.

Usage: python tools/syncval_table.py VVL_REPO [--commit SHA]

VVL_REPO is a clone (or bare mirror) of KhronosGroup/Vulkan-ValidationLayers; the TEST_F
of its tests/unit/sync_val*.cpp at SHA (default HEAD) are read with `git show`. A test is
ported when tests/syncval holds `<Fixture>.<Test>.json` or `<Fixture>.<Test>-<n>.json`;
otherwise the reason is the first of: the explicit reasons below, the file's field
(render passes, ray tracing, video, presentation), then what its code uses that the
stream format cannot say. A test that is none of these is listed as expressible and not
ported, so a missing stream shows in the counts. The text between the markers of
docs/syncval.md is replaced; the prose around it is kept.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
STREAMS = ROOT / "tests" / "syncval"
DOC = ROOT / "docs" / "syncval.md"
BEGIN, END = "<!-- syncval_table.py: begin -->", "<!-- syncval_table.py: end -->"

FILES = [
    "sync_val.cpp", "sync_val_positive.cpp", "sync_val_reporting.cpp",
    "sync_val_semaphore.cpp", "sync_val_semaphore_positive.cpp",
    "sync_val_render_pass.cpp", "sync_val_render_pass_positive.cpp",
    "sync_val_ray_tracing.cpp", "sync_val_ray_tracing_positive.cpp",
    "sync_val_video.cpp", "sync_val_video_positive.cpp",
    "sync_val_wsi.cpp", "sync_val_wsi_positive.cpp",
]
GRAPHICS = "graphics (render passes, draws, attachments)"
FILE_FIELD = {
    "sync_val_render_pass": GRAPHICS,
    "sync_val_ray_tracing": "ray tracing",
    "sync_val_video": "video",
    "sync_val_wsi": "presentation (swapchains)",
}
# Tests whose code the patterns below do not tell apart: each reason read from the test.
EXPLICIT = {
    "NegativeSyncVal.BadDestroy": "no synchronization (a device destroyed with a command buffer allocated)",
    "PositiveSyncVal.QSBufferCopyHazardsDisabled":
        "a layer setting (submit-time validation off); its scenario is NegativeSyncVal.QSBufferCopyHazards-1",
}
# In order: a test is named by the first that its code matches.
USES = [
    (GRAPHICS, (r"RenderPass|CmdDraw|BeginRendering|Framebuffer|[Aa]ttachment|Subpass|CreateGraphicsPipeline"
               r"|VkPipelineObj|MeshTasks")),
    ("ray tracing", r"RayTracing|AccelerationStructure|TraceRays"),
    ("video", r"Video"),
    ("presentation (swapchains)", r"Swapchain|QueuePresent|AcquireNextImage"),
    ("needs images", (r"vkt::Image\b|VkImage\w*|CmdCopyImage|CmdCopyBufferToImage|CmdCopyImageToBuffer"
                     r"|CmdClearColorImage|CmdBlitImage|CmdResolveImage")),
]
NOT_YET = "expressible, not ported yet"


def tests_of(text: str):
    """(fixture, name, line, body) of each TEST_F, its body up to the closing brace at column 0."""
    lines = text.split("\n")
    starts = [i for i, line in enumerate(lines) if line.startswith("TEST_F(")]
    for k, i in enumerate(starts):
        fixture, name = re.match(r"TEST_F\((\w+),\s*(\w+)\)", lines[i]).groups()
        end = starts[k + 1] if k + 1 < len(starts) else len(lines)
        j = next((j for j in range(i, end) if lines[j] == "}"), end)
        yield fixture, name, i + 1, "\n".join(lines[i:j + 1])


def reason(file: str, full: str, body: str) -> str:
    if full in EXPLICIT:
        return EXPLICIT[full]
    for prefix, field in FILE_FIELD.items():
        if file.startswith(prefix):
            return field
    return next((why for why, pattern in USES if re.search(pattern, body)), NOT_YET)


def rows(repo: str, commit: str):
    streams = sorted(p.stem for p in STREAMS.glob("*.json"))
    for file in FILES:
        text = subprocess.run(["git", "-C", repo, "show", f"{commit}:tests/unit/{file}"],
                              check=True, capture_output=True, text=True).stdout
        for fixture, name, line, body in tests_of(text):
            full = f"{fixture}.{name}"
            ported = [s for s in streams if s == full or re.fullmatch(re.escape(full) + r"-\d+", s)]
            yield file, line, full, ported, (None if ported else reason(file, full, body))


def table(found, commit: str) -> str:
    per_file, per_reason = Counter(), Counter()
    for file, _, _, ported, why in found:
        per_file[file, bool(ported)] += 1
        per_reason["ported" if ported else why] += 1
    out = [(f"Read from KhronosGroup/Vulkan-ValidationLayers `tests/unit/sync_val*.cpp` at `{commit}`: "
           f"{len(found)} TEST_F, {per_reason['ported']} ported into "
           f"{sum(len(r[3]) for r in found)} streams."), "",
           "| file | TEST_F | ported | not ported |", "| --- | --- | --- | --- |"]
    for file in FILES:
        yes, no = per_file[file, True], per_file[file, False]
        out.append(f"| {file} | {yes + no} | {yes} | {no} |")
    out += ["", "| reason | TEST_F |", "| --- | --- |"]
    out += [f"| {why} | {n} |" for why, n in sorted(per_reason.items(), key=lambda kv: (-kv[1], kv[0]))]
    out += ["", "| test | source | ported to, or why not |", "| --- | --- | --- |"]
    for file, line, full, ported, why in found:
        what = "ported: " + ", ".join(f"`{s}`" for s in ported) if ported else why
        out.append(f"| {full} | {file}:{line} | {what} |")
    return "\n".join(out)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("repo", help="a clone or bare mirror of KhronosGroup/Vulkan-ValidationLayers")
    parser.add_argument("--commit", default="HEAD")
    args = parser.parse_args(argv)
    commit = subprocess.run(["git", "-C", args.repo, "rev-parse", args.commit],
                            check=True, capture_output=True, text=True).stdout.strip()
    found = list(rows(args.repo, commit))
    doc = DOC.read_text()
    head, rest = doc.split(BEGIN)
    _, tail = rest.split(END)
    DOC.write_text(f"{head}{BEGIN}\n{table(found, commit)}\n{END}{tail}")
    named = {s for r in found for s in r[3]}
    orphans = sorted(p.stem for p in STREAMS.glob("*.json") if p.stem not in named)
    for stem in orphans:
        print(f"tests/syncval/{stem}.json: names no TEST_F", file=sys.stderr)
    return 1 if orphans else 0


if __name__ == "__main__":
    sys.exit(main())
