"""Compile the library's GLSL into the committed SPIR-V, or check that it is.

    python -m vkverify.shaders build [--dir PATH]
    python -m vkverify.shaders --check [--dir PATH]   (or: check)

Exit codes: 0 done / all equal, 1 a mismatch or a failed compile (each file
named), 2 usage error or glslangValidator missing. The output is byte-exact
only for one glslang version (another may emit other code): rebuild with
the project's pinned glslang-tools.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from vkverify.errors import VkverifyError
from vkverify.shaders.library import SHADER_DIR

__all__ = ["GLSLANG_FLAGS", "build", "check", "main"]

GLSLANG_FLAGS = ("-V", "--target-env", "vulkan1.1")


class GlslangMissing(VkverifyError, RuntimeError):
    """glslangValidator is not on PATH; seen by whoever runs the generator."""


def _compile(directory: Path, out: Path) -> list[str]:
    """Compile every .comp in `directory` into `out`; the names that failed."""
    tool = shutil.which("glslangValidator")
    if tool is None:
        raise GlslangMissing("glslangValidator not found on PATH (Debian: apt-get install glslang-tools)")

    def run(source: Path) -> subprocess.CompletedProcess:
        # Relative names and cwd keep #include resolution and output independent of the path.
        return subprocess.run([tool, *GLSLANG_FLAGS, "-o", str(out / f"{source.stem}.spv"), source.name],
                              cwd=directory, capture_output=True, text=True, check=False)

    sources = sorted(directory.glob("*.comp"))
    failed = []
    with ThreadPoolExecutor() as pool:
        for source, done in zip(sources, pool.map(run, sources)):
            if done.returncode:
                print(f"{source.name}: compile failed\n{done.stdout}{done.stderr}", file=sys.stderr)
                failed.append(source.name)
    return failed


def build(directory: Path = SHADER_DIR) -> int:
    return 1 if _compile(directory, directory) else 0


def check(directory: Path = SHADER_DIR) -> int:
    with tempfile.TemporaryDirectory() as tmp:
        fresh = Path(tmp)
        bad = _compile(directory, fresh)
        names = sorted({p.name for p in directory.glob("*.spv")} | {p.name for p in fresh.glob("*.spv")})
        for name in names:
            committed, rebuilt = directory / name, fresh / name
            if not rebuilt.exists():
                bad.append(f"{name} (no source)")
            elif not committed.exists():
                bad.append(f"{name} (not committed)")
            elif committed.read_bytes() != rebuilt.read_bytes():
                bad.append(f"{name} (differs from its source)")
    for entry in bad:
        print(f"mismatch: {directory / entry}")
    return 1 if bad else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m vkverify.shaders", description=__doc__.splitlines()[0])
    parser.add_argument("command", nargs="?", choices=["build", "check"])
    parser.add_argument("--check", action="store_true", help="same as the check command")
    parser.add_argument("--dir", type=Path, default=SHADER_DIR, help="shader folder (default: the package's)")
    args = parser.parse_args(argv)
    if args.check and args.command == "build" or not (args.check or args.command):
        parser.print_usage(sys.stderr)
        print("give exactly one of: build, check (--check)", file=sys.stderr)
        return 2
    try:
        return (check if args.check or args.command == "check" else build)(args.dir)
    except GlslangMissing as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
