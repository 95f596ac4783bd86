"""The `vkverify` command line.

Exit codes: 0 no findings (or, with --expect, findings as expected),
1 findings (or disagreement with `expect`), 2 bad input or usage.
"""

from __future__ import annotations

import argparse
import sys

from .model import InvalidStream, load
from .report import FORMATTERS, FileResult, sources

CHECK_EPILOG = """\
examples:
  vkverify check stream.json
  vkverify check --format json tests/corpus/*.json
  vkverify check --format sarif stream.json > vkverify.sarif
  vkverify check --expect tests/corpus/*.json   # a corpus with `expect` blocks is a test suite

exit codes: 0 no findings (with --expect: all as expected), 1 findings (with
--expect: a difference), 2 bad input (one line per error: FILE: JSON.path: what)
"""


def cmd_check(args: argparse.Namespace) -> int:
    from .check import check
    from .check.expect import compare
    from .check.readings import DEFAULT

    results, bad_input = [], False
    for file in args.files:
        loaded = _load_partial_or_report(file)
        if loaded is None:
            bad_input = True
            continue
        stream, partial = loaded
        findings = check(stream, args.readings or DEFAULT)
        agreement = compare(stream, findings) if args.expect else None
        results.append(FileResult(file, stream.name, findings, agreement, partial, sources(stream, findings)))
    if results:
        print(FORMATTERS[args.format](results))
    if bad_input:
        return 2
    if args.expect:
        return 0 if all(r.agreement.agrees for r in results) else 1
    return 1 if any(r.findings for r in results) else 0


class _ReadingAction(argparse.Action):
    """`--reading NAME=VALUE`, applied in turn to the readings so far (check/readings.py)."""

    def __call__(self, parser, namespace, value, option_string=None):
        from .check.readings import DEFAULT, parse_reading
        try:
            setattr(namespace, self.dest, parse_reading(getattr(namespace, self.dest) or DEFAULT, value))
        except ValueError as e:
            parser.error(f"{option_string} {e}")


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def _add_simulate(sub) -> None:
    """`vkverify simulate`: exit 0 no schedule changed a digest, 1 some schedule did, 2 bad input."""
    def run(args: argparse.Namespace) -> int:
        from .sim import FORMATS, simulate

        stream = _load_or_report(args.file)
        if stream is None:
            return 2
        report = simulate(stream, schedules=args.schedules, seed=args.seed)
        print(FORMATS[args.format]([report]))
        return 1 if report.changed else 0

    c = sub.add_parser("simulate", help="execute a stream in numpy: reference digests, then adversarial schedules",
                       description="Run a vkverify-stream/1 file's data effects in the checker's legal order, then "
                                   "under adversarial schedules that perturb each finding; say per finding which "
                                   "schedule changed a digest, or why its values coincide.",
                       epilog="exit codes: 0 no schedule changed a digest, 1 some schedule did, 2 bad input")
    c.add_argument("file", metavar="FILE", help="stream file (JSON)")
    c.add_argument("--schedules", type=_positive, default=200, help="adversarial schedules to run (default 200)")
    c.add_argument("--seed", type=int, default=0, help="seed of the schedules (default 0)")
    c.add_argument("--format", choices=["text", "json"], default="text")
    c.set_defaults(run=run)


def cmd_replay(args: argparse.Namespace) -> int:
    """Exit 0 replayed (digests equal to the reference where one exists), 1 a
    digest differs, 2 bad input or a stream the device cannot run, 3 a device fault."""
    import json

    from .runtime import DeviceFault, NoDevice, Unsupported, replay
    from .runtime.report import replay_json, replay_text

    stream = _load_or_report(args.file)
    if stream is None:
        return 2
    try:
        result = replay(stream, device=args.device, syncval=args.syncval)
    except (NoDevice, Unsupported) as e:
        print(f"{args.file}: {e}", file=sys.stderr)
        return 2
    except DeviceFault as e:
        print(f"{args.file}: {e}", file=sys.stderr)
        return 3
    print(json.dumps(replay_json(result), indent=1) if args.format == "json" else replay_text(result))
    return 1 if result.reference else 0


def _add_replay(sub) -> None:
    r = sub.add_parser("replay", help="run a stream on a Vulkan device and digest every buffer",
                       description="Replay a stream on a device (Lavapipe or a GPU), read back every buffer, "
                                   "compare digests with the simulator's reference.",
                       epilog="exit codes: 0 replayed, 1 a digest differs from the reference, 2 bad input or "
                              "a stream the device cannot run, 3 device fault (one line naming the operation)")
    r.add_argument("file", metavar="FILE", help="stream file (JSON)")
    r.add_argument("--device", help="device name part or index (default: VKVERIFY_DEVICE, else the first GPU)")
    r.add_argument("--syncval", action="store_true",
                   help="run under VK_LAYER_KHRONOS_validation's synchronization validation and compare")
    r.add_argument("--format", choices=("text", "json"), default="text")
    r.set_defaults(run=cmd_replay)


def cmd_devices(args: argparse.Namespace) -> int:
    from .runtime import NoDevice
    from .runtime.report import devices, devices_json, devices_text

    try:
        devs = devices()
    except NoDevice as e:
        print(f"vkverify devices: {e}", file=sys.stderr)
        return 3
    print(devices_json(devs) if args.format == "json" else devices_text(devs))
    return 0


def _add_devices(sub) -> None:
    d = sub.add_parser("devices", help="list Vulkan devices: queues, memory, the staged-upload decision")
    d.add_argument("--format", choices=("text", "json"), default="text")
    d.set_defaults(run=cmd_devices)


CAPTURES = (".gfxr", ".jsonl")


def _load_any(file: str):
    """A stream file, or a GFXReconstruct capture (.gfxr/.jsonl) through the importer; with why a verdict on
    it is partial (the dispatches the import could not resolve)."""
    if not file.endswith(CAPTURES):
        return load(file), ()
    from .importer import import_capture

    stream, summary = import_capture(file)
    return stream, tuple(summary.unresolved_lines())


def _load_or_report(file: str):
    """The stream in `file` (a capture through the importer); None after printing why it is bad input."""
    loaded = _load_partial_or_report(file)
    return None if loaded is None else loaded[0]


def _load_partial_or_report(file: str):
    """(stream, why a verdict on it is partial) from `file` (a capture through the importer); None after
    printing why it is bad input."""
    from .importer import CaptureError

    try:
        return _load_any(file)
    except InvalidStream as e:
        print("\n".join(e.lines()), file=sys.stderr)
    except CaptureError as e:
        print(e, file=sys.stderr)
    return None


def _import_and_report(capture: str, output: str | None, threads: bool, assume_reads: bool) -> int:
    from .importer import CaptureError, import_capture
    from .model import dumps

    try:
        stream, summary = import_capture(capture, threads=threads, assume_reads=assume_reads)
    except CaptureError as e:
        print(e, file=sys.stderr)
        return 2
    print("\n".join(summary.lines()), file=sys.stderr)
    text = dumps(stream)
    if output is None:
        print(text)
    else:
        with open(output, "w") as f:
            f.write(text + "\n")
    return 0


def cmd_import(args: argparse.Namespace) -> int:
    return _import_and_report(args.capture, args.output, args.threads, not args.no_assumed_reads)


def _add_import(sub) -> None:
    i = sub.add_parser("import", help="turn a GFXReconstruct capture (.gfxr or .jsonl) into a stream",
                       description="Import a GFXReconstruct capture as a vkverify-stream/1 stream; the summary "
                                   "(skipped calls, assumptions, warnings) goes to stderr.",
                       epilog="exit codes: 0 imported, 2 a capture that cannot be read (one line)")
    i.add_argument("capture", metavar="CAPTURE", help=".gfxr capture or gfxrecon-convert JSON lines")
    i.add_argument("-o", "--output", metavar="STREAM.json", help="write the stream here (default: stdout)")
    i.add_argument("--threads", action="store_true",
                   help="keep each captured thread as a stream thread (default: one thread, capture order)")
    i.add_argument("--no-assumed-reads", action="store_true",
                   help="leave out the host reads a capture does not record (default: the host reads each staging "
                        "buffer the device copied into, after the first host wait that covers the copy)")
    i.set_defaults(run=cmd_import)


def cmd_capture(args: argparse.Namespace) -> int:
    import os
    import subprocess
    import tempfile
    from pathlib import Path

    from .importer import capture_env

    command = args.cmd[1:] if args.cmd[:1] == ["--"] else args.cmd
    if not command:
        print("vkverify capture: give a command after --", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="vkverify-capture-") as tmp:
        capture = args.capture_file or os.path.join(tmp, "capture.gfxr")
        try:
            rc = subprocess.run(command, env=capture_env(Path(capture), os.environ)).returncode
        except OSError as e:
            print(f"vkverify capture: cannot run {command[0]}: {e.strerror}", file=sys.stderr)
            return 2
        if rc != 0:
            print(f"vkverify capture: {command[0]} exited with {rc}; importing what it captured", file=sys.stderr)
        return _import_and_report(capture, args.output, args.threads, not args.no_assumed_reads)


def _add_capture(sub) -> None:
    c = sub.add_parser("capture", help="run a program under the GFXReconstruct capture layer and import it",
                       description="Run CMD with VK_LAYER_LUNARG_gfxreconstruct enabled, then import the capture.",
                       epilog="example: vkverify capture -o s.json -- python examples/thirdparty/wgpu_passes.py")
    c.add_argument("-o", "--output", metavar="STREAM.json", help="write the stream here (default: stdout)")
    c.add_argument("--capture-file", metavar="FILE.gfxr", help="keep the capture here (default: a temporary file)")
    c.add_argument("--threads", action="store_true", help="as for import")
    c.add_argument("--no-assumed-reads", action="store_true", help="as for import")
    c.add_argument("cmd", nargs=argparse.REMAINDER, metavar="-- CMD ARGS...")
    c.set_defaults(run=cmd_capture)


def _add_mutate(sub) -> None:
    import os

    def shard(text: str) -> tuple[int, int]:
        k, _, n = text.partition("/")
        if not (k.isdigit() and n.isdigit() and 1 <= int(k) <= int(n)):
            raise argparse.ArgumentTypeError(f"{text!r} must be K/N with 1 <= K <= N")
        return int(k), int(n)

    def readers(text: str) -> list[str]:
        from .mutations import READERS
        names = [n for n in text.split(",") if n]
        unknown = [n for n in names if n not in READERS]
        if unknown:
            raise argparse.ArgumentTypeError(f"unknown reader {', '.join(unknown)}; choose from {', '.join(READERS)}")
        return names

    def run(args: argparse.Namespace) -> int:
        from .mutations.command import main
        return main(args)

    c = sub.add_parser(
        "mutate", help="drop or weaken one load-bearing synchronization at a time; demand every reader goes red",
        description="Mutation testing of synchronization: each mutant removes or weakens one load-bearing "
                    "operation of a stream; readers (the checker, the simulator, a device replay, your own "
                    "command after --) must kill it.",
        epilog="examples:\n  vkverify mutate --target all tests/corpus/*.json\n"
               "  vkverify mutate --readers checker,sim --junit mutants.xml s.json\n"
               "  vkverify mutate --target war s.json -- pytest tests/test_engine.py\n"
               "  vkverify mutate --target all -- pytest examples/engine   # the runtime mutates itself\n\n"
               "With streams, the command after -- runs once on each original stream (it must pass), then once per "
               "mutant with VKVERIFY_MUTATE=<target>:<k> and VKVERIFY_MUTANT_STREAM=<mutated stream JSON>; a "
               "non-zero exit or a timeout kills.\n"
               "With only a command, its own Runtimes mutate themselves (VKVERIFY_RUNTIME_MUTATE): it runs once "
               "listing the candidates (it must pass), then once per mutant, one per call site of the program "
               "(--per-iteration: per candidate); a line per mutant on stderr (-q: none).\n"
               "exit codes: 0 score >= --fail-under, 1 below it, 2 bad input, a failing clean run, no reader or 0 "
               "mutants (the reason is printed)",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    c.add_argument("--target", choices=["raw", "waw", "war", "semaphore", "fence", "keepalive", "host", "all"],
                   default="all", help="which synchronization to mutate (default all)")
    c.add_argument("--readers", type=readers, default=None,
                   help="comma-separated: checker, sim, replay, replay+syncval (default checker; '' with a command: only it)")
    c.add_argument("-j", "--jobs", type=_positive, default=os.cpu_count() or 1, help="parallel workers (default: CPUs)")
    c.add_argument("--shard", type=shard, help="run only shard K of N (by sorted mutant id)")
    c.add_argument("--fail-under", type=float, default=100.0, help="exit 1 when the kill score (%%) is below (default 100)")
    c.add_argument("--format", choices=["text", "json"], default="text")
    c.add_argument("--junit", metavar="FILE", help="also write JUnit XML: one testcase per mutant, survivors fail")
    c.add_argument("--report-redundant", action="store_true",
                   help="list the synchronization operations no pair depends on alone, and what else orders their pairs")
    c.add_argument("--cache", metavar="DIR", help="cache directory: verdicts, and with only a command its listing, kept while the code, the "
                        "command and the files it imports are unchanged (default .vkverify-cache in the cwd)")
    c.add_argument("--no-cache", action="store_true", help="neither read nor write the verdict cache")
    c.add_argument("--per-iteration", action="store_true",
                   help="with only a command: one mutant per candidate, not one per call site (file:line)")
    c.add_argument("-q", "--quiet", action="store_true", help="no progress lines on stderr")
    c.add_argument("files", nargs=argparse.REMAINDER, metavar="FILES... [-- CMD ARGS...]",
                   help="stream files; options go before them")
    c.set_defaults(run=run)


def _add_explain(sub) -> None:
    def run(args: argparse.Namespace) -> int:
        from .check.explain import ExplainError, explain, format_text

        stream = _load_or_report(args.file)
        if stream is None:
            return 2
        try:
            result = explain(stream, args.first, args.second)
        except ExplainError as e:
            print(f"{args.file}: {e}", file=sys.stderr)
            return 2
        print(format_text(result, stream))
        return 0 if result.ordered else 1

    c = sub.add_parser("explain", help="why two operations are ordered (the chain of synchronizations) or why not",
                       description="For every pair of accesses FIRST and SECOND make to common bytes: the chains of "
                                   "barriers, semaphore signal/wait pairs and host waits that order them, shortest "
                                   "first, with the scope each satisfies; or the scope that is missing.",
                       epilog="references: cb0[2], main[4], an op's id, cb0[2]@main[5] (one submission)\n"
                              "exit codes: 0 ordered, 1 not ordered, 2 bad input (one line naming it)",
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    c.add_argument("file", metavar="FILE", help="stream file (JSON)")
    c.add_argument("first", metavar="FIRST", help="the earlier operation")
    c.add_argument("second", metavar="SECOND", help="the later operation")
    c.set_defaults(run=run)


def _add_graph(sub) -> None:
    def run(args: argparse.Namespace) -> int:
        from .check import check
        from .check.graph import GraphvizError, build, to_dot, to_svg

        stream = _load_or_report(args.file)
        if stream is None:
            return 2
        text = to_dot(build(stream, check(stream)))
        if args.format == "svg":
            try:
                text = to_svg(text)
            except GraphvizError as e:
                print(f"vkverify graph: {e}", file=sys.stderr)
                return 2
        if args.output is None:
            sys.stdout.write(text)
        else:
            with open(args.output, "w") as f:
                f.write(text)
        return 0

    c = sub.add_parser("graph", help="draw the happens-before graph of submissions and synchronizations",
                       description="One node per host op, submitted batch, semaphore wait and signal, fence or idle "
                                   "release and barrier; every finding's two operations highlighted and the missing "
                                   "edge dashed red, labelled with the finding's kind.",
                       epilog="exit codes: 0 written, 2 bad input or Graphviz `dot` missing (svg)")
    c.add_argument("file", metavar="FILE", help="stream file (JSON)")
    c.add_argument("--format", choices=("dot", "svg"), default="dot", help="dot (text) or svg (through Graphviz)")
    c.add_argument("-o", "--output", metavar="OUT", help="write here (default: stdout)")
    c.set_defaults(run=run)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="vkverify", description=__doc__.splitlines()[0].strip('"'),
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    c = sub.add_parser("check", help="find every synchronization hazard in streams, or prove there is none",
                       description="Check vkverify-stream/1 files against the Vulkan synchronization rules.",
                       epilog=CHECK_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    c.add_argument("files", nargs="+", metavar="FILE", help="stream files (JSON)")
    c.add_argument("--format", choices=sorted(FORMATTERS), default="text",
                   help="text for people, json (STREAM_FORMAT.md findings), sarif (2.1.0, for code scanning)")
    c.add_argument("--expect", action="store_true",
                   help="compare the findings with each stream's `expect` block; exit 1 on any difference")
    c.add_argument("--reading", dest="readings", metavar="NAME=VALUE", action=_ReadingAction,
                   help="answer an open question of the spec the other way, e.g. all_commands_includes_host=true "
                        "(docs/format.md, Readings; repeatable)")
    c.set_defaults(run=cmd_check)
    _add_simulate(sub)
    _add_replay(sub)
    _add_devices(sub)
    _add_import(sub)
    _add_capture(sub)
    _add_mutate(sub)
    _add_explain(sub)
    _add_graph(sub)
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        return args.run(args)
    except BrokenPipeError:  # `vkverify ... | head`
        return 0


if __name__ == "__main__":
    sys.exit(main())
