"""The `vkverify` command line.

Exit codes: 0 no findings (or, with --expect, findings as expected),
1 findings (or disagreement with `expect`), 2 bad input or usage.
Streams are files in the format of docs/format.md; a directory stands for every *.json and *.gfxr
below it. Options may come before or after the files; `[tool.vkverify]` in the nearest
pyproject.toml gives defaults (vkverify/config.py).
"""

from __future__ import annotations

import argparse
import math
import os
import signal
import sys
from collections.abc import Iterable
from pathlib import Path

from . import __version__
from .check import WITNESS_MODES
from .check.findings import KINDS
from .model import load, loads
from .model.errors import OutputError, StreamError, UsageError, VkverifyError
from .model.files import check_directory, check_output, write_atomic
from .report import FORMATTERS
from .results import CAPTURES, FileResult, bad_input, says_something

__all__ = ["cmd_capture", "cmd_check", "cmd_devices", "cmd_import", "cmd_replay", "expand", "main", "parse", "parser"]

CHECK_EPILOG = """\
examples:
  vkverify check stream.json                    # one entry per root cause: a repeated hazard is one group
  vkverify check --expand capture.gfxr          # every finding, each with its operations and fix
  vkverify check tests/corpus --format json     # a directory: every *.json and *.gfxr below it
  vkverify check --format sarif stream.json > vkverify.sarif
  vkverify check --format github streams/        # annotations in a GitHub Actions log
  vkverify check --expect tests/corpus/*.json   # a corpus with `expect` blocks is a test suite
  vkverify check --select raw,war --statistics streams/   # how many of these kinds, per kind
  vkverify import run.gfxr | vkverify check -   # `-`: the stream on stdin

A finding the stream's author accepts is listed in its "ignore" (docs/format.md, ignore), or
accepted by a `# vkverify: ignore[kind]` comment on the program line that recorded it:
reported as suppressed, not counted. --select/--ignore leave kinds out of the report.
Colour: --color auto (a terminal, unless NO_COLOR is set), always or never.
exit codes: 0 no findings (with --expect: all as expected; with --exit-zero: also with
findings), 1 findings (with --expect: a difference), 2 bad input (one line per error:
FILE: JSON.path: what)
"""


def cmd_check(args: argparse.Namespace) -> int:
    from .check import check
    from .check.expect import compare, suppress
    from .check.readings import DEFAULT
    from .check.walk import orders_unread

    results = []
    for file in args.files:
        loaded = _load_partial_or_report(file)
        if isinstance(loaded, list):
            results.append(bad_input(file, loaded))
            continue
        stream, partial = loaded
        partial = (*partial, *orders_unread(stream))
        found = suppress(stream, check(stream, args.readings or DEFAULT, args.witness, args.witnesses))
        # Left as they are where every kind is reported: the checker's findings are worded only when read.
        kept = found.kept if args.kinds == ALL_KINDS else [f for f in found.kept if f.kind in args.kinds]
        agreement = compare(stream, list(found.kept)) if args.expect else None
        results.append(FileResult(file, stream.name, kept, agreement, partial, found.suppressed,
                                  found.warnings, loaded=stream))
    shown = [r for r in results if says_something(r)] if args.quiet and args.format == "text" else results
    if args.statistics:
        text = statistics(results)
    elif args.format == "text":
        text = FORMATTERS["text"](shown, expand=args.expand, color=_colored(args.color, args.output))
    else:
        text = FORMATTERS[args.format](shown, expand=args.expand)
    emit(text + "\n" if text else "", args.output)
    if any(r.errors for r in results):
        return 2
    if args.expect:
        failed = not all(r.agreement.agrees for r in results)
    else:
        failed = any(r.findings for r in results)
    return int(failed and not args.exit_zero)


ALL_KINDS = frozenset(KINDS)


def statistics(results: list[FileResult]) -> str:
    """`--statistics`: the number of findings of each kind over every file, the most frequent first."""
    from collections import Counter

    counts = Counter(f.kind for r in results for f in r.findings)
    return "\n".join(f"{n:>8}  {KINDS[kind].rule_id}  {kind:<24} {KINDS[kind].title}"
                     for kind, n in sorted(counts.items(), key=lambda kn: (-kn[1], kn[0])))


def _colored(color: str, output: str | None) -> bool:
    """--color: always, never, or auto: on a terminal (not into -o) unless NO_COLOR is set (no-color.org)."""
    if color != "auto":
        return color == "always"
    return output is None and sys.stdout.isatty() and not os.environ.get("NO_COLOR")


def _kinds(text: str) -> frozenset[str]:
    """An argparse type: finding kinds, comma-separated (docs/format.md, Finding kinds)."""
    kinds = frozenset(k.strip() for k in text.split(",") if k.strip())
    unknown = sorted(kinds - set(KINDS))
    if unknown or not kinds:
        raise argparse.ArgumentTypeError(f"{', '.join(unknown) or 'nothing'}: expected finding kinds, "
                                         f"comma-separated, of {', '.join(KINDS)}")
    return kinds


class _ReadingAction(argparse.Action):
    """`--reading NAME=VALUE`, applied in turn to the readings so far (check/readings.py)."""

    def __call__(self, parser, namespace, value, option_string=None):
        from .check.readings import DEFAULT, parse_reading
        try:
            setattr(namespace, self.dest, parse_reading(getattr(namespace, self.dest) or DEFAULT, value))
        except ValueError as e:
            parser.error(f"{option_string} {e}")


def _at_least(least: int):
    """An argparse type: an integer of at least `least`."""
    def parse(text: str) -> int:
        value = int(text)
        if value < least:
            raise argparse.ArgumentTypeError(f"must be at least {least}, got {value}")
        return value
    parse.__name__ = "integer"  # argparse names the type so in its errors
    return parse


_positive, _natural = _at_least(1), _at_least(0)


def _add_simulate(sub) -> None:
    """`vkverify simulate`: exit 0 no schedule changed a digest, 1 some schedule did, 2 bad input."""
    def run(args: argparse.Namespace) -> int:
        from dataclasses import replace

        from .sim import FORMATS, simulate

        reports, bad = [], False
        for file in args.files:
            stream = _load_or_report(file)
            if stream is None:
                bad = True
                continue
            try:
                report = simulate(stream, schedules=args.schedules, seed=args.seed)
            except UsageError as e:  # an option past the simulator's bounds (MAX_SCHEDULES)
                print(f"vkverify simulate: --{e.argument}: {e.message}", file=sys.stderr)
                return 2
            except StreamError as e:  # a stream past the simulator's limits: say it of the file
                print("\n".join(StreamError(file, e.errors).lines()), file=sys.stderr)
                bad = True
                continue
            reports.append(replace(report, file=file))
        shown = [r for r in reports if r.changed] if args.quiet and args.format == "text" else reports
        text = FORMATS[args.format](shown, verbose=args.verbose)
        if text:
            emit(text + "\n")
        return 2 if bad else 1 if any(r.changed for r in reports) else 0

    c = sub.add_parser("simulate", help="execute a stream in numpy: reference digests, then adversarial schedules",
                       description="Run a vkverify-stream/1 file's data effects in the checker's legal order, then "
                                   "under adversarial schedules that perturb each finding; say per finding which "
                                   "schedule changed a digest, or why its values coincide.",
                       epilog="exit codes: 0 no schedule changed a digest, 1 some schedule did, 2 bad input")
    c.add_argument("files", nargs="+", metavar="FILE", help="stream files (JSON) or directories")
    c.add_argument("--schedules", type=_positive, default=200, help="adversarial schedules to run (default 200)")
    c.add_argument("--seed", type=_natural, default=0, help="seed of the schedules (default 0)")
    c.add_argument("--format", choices=["text", "json"], default="text",
                   help="text: one line per stream (-v: every schedule and finding); json: everything, a list")
    c.add_argument("-v", "--verbose", action="store_true", help="text: the reference digests, each schedule that "
                                                                 "changed one, each finding's verdict")
    _add_quiet(c, "text: only the streams where a schedule changed a digest")
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
    print("".join(f"vkverify replay: {note}\n" for note in result.notes), end="", file=sys.stderr)
    emit((json.dumps(replay_json(result), indent=1) if args.format == "json" else replay_text(result)) + "\n")
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
    emit((devices_json(devs) if args.format == "json" else devices_text(devs)) + "\n")
    return 0


def _add_devices(sub) -> None:
    d = sub.add_parser("devices", help="list Vulkan devices: queues, memory, the staged-upload decision")
    d.add_argument("--format", choices=("text", "json"), default="text")
    d.set_defaults(run=cmd_devices)


def emit(text: str | Iterable[str], output: str | None = None) -> None:
    """A command's result (or its pieces in turn): into `output` whole (model/files.py), or on stdout, flushed
    here so that a failed write is an OutputError (exit 2) while the command can still say so."""
    if output is not None:
        write_atomic(output, text)
        return
    try:
        sys.stdout.writelines([text] if isinstance(text, str) else text)
        sys.stdout.flush()
    except BrokenPipeError:
        raise
    except OSError as e:
        raise OutputError("stdout", e) from None


def _load_any(file: str):
    """A stream file, or a GFXReconstruct capture (.gfxr/.jsonl) through the importer; with why a verdict on
    it is partial (the dispatches the import could not resolve, events, a capture cut short)."""
    if file == "-":  # a stream piped in (`vkverify import run.gfxr | vkverify check -`)
        return loads(sys.stdin.buffer.read(), "<stdin>"), ()
    if not file.endswith(CAPTURES):
        return load(file), ()
    from .importer import import_capture

    stream, summary = import_capture(file)
    return stream, tuple(summary.partial_lines())


def _load_or_report(file: str):
    """The stream in `file` (a capture through the importer); None after printing why it is bad input."""
    loaded = _load_partial_or_report(file)
    return None if isinstance(loaded, list) else loaded[0]


def _load_partial_or_report(file: str):
    """(stream, why a verdict on it is partial) from `file` (a capture through the importer); else, after
    printing them, the lines that say why it is bad input (for the formats that carry them)."""
    try:
        return _load_any(file)
    except VkverifyError as e:
        lines = e.lines()
    print("\n".join(lines), file=sys.stderr)
    return lines


def _import_and_report(capture: str, args: argparse.Namespace) -> int:
    from contextlib import nullcontext
    from itertools import chain

    from .importer import PROGRESS_CALLS, import_document
    from .importer.gfxr import held_open
    from .model.dump import document_chunks
    from .model.gcpause import cyclic_gc_paused

    def say(line: str) -> None:
        print(f"import: {line}", file=sys.stderr, flush=True)
    # The document holds no cycle, and the bytes of the capture's fill records, read from it as they are written.
    # The collector stays paused from the import until the document is freed: its first collection after a pause
    # walks every object made in it, 0.8 s of a 10^6-call import.
    with cyclic_gc_paused():
        doc, summary = import_document(capture, threads=args.threads, assume_reads=not args.no_assumed_reads,
                                       progress=None if args.quiet else say)
        print("\n".join(summary.lines()), file=sys.stderr)
        if not args.quiet and summary.calls >= PROGRESS_CALLS:
            say(f"writing {args.output or 'the stream'}")
        with held_open(Path(capture)) if Path(capture).suffix == ".gfxr" else nullcontext():
            emit(chain(document_chunks(doc), ["\n"]), args.output)
        del doc
    return 0


def cmd_import(args: argparse.Namespace) -> int:
    return _import_and_report(args.capture, args)


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
    _add_quiet(i, "no progress lines on stderr (a capture of 100,000 calls or more has them)")
    i.set_defaults(run=cmd_import)


def cmd_capture(args: argparse.Namespace) -> int:
    import os
    import subprocess
    import tempfile
    from pathlib import Path

    from .importer import capture_env

    command = args.cmd
    if not command:
        print("vkverify capture: give a command after --", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="vkverify-capture-") as tmp:
        capture = args.capture_file or os.path.join(tmp, "capture.gfxr")
        try:
            rc = subprocess.run(command, env=capture_env(Path(capture), os.environ), check=False).returncode
        except OSError as e:
            print(f"vkverify capture: cannot run {command[0]}: {e.strerror}", file=sys.stderr)
            return 2
        if rc != 0:
            print(f"vkverify capture: {command[0]} exited with {rc}; importing what it captured", file=sys.stderr)
        return _import_and_report(capture, args)


def _add_capture(sub) -> None:
    c = sub.add_parser("capture", help="run a program under the GFXReconstruct capture layer and import it",
                       description="Run CMD with VK_LAYER_LUNARG_gfxreconstruct enabled, then import the capture.",
                       epilog="example: vkverify capture -o s.json -- python examples/thirdparty/wgpu_passes.py")
    c.add_argument("-o", "--output", metavar="STREAM.json", help="write the stream here (default: stdout)")
    c.add_argument("--capture-file", metavar="FILE.gfxr", help="keep the capture here (default: a temporary file)")
    c.add_argument("--threads", action="store_true", help="as for import")
    c.add_argument("--no-assumed-reads", action="store_true", help="as for import")
    _add_quiet(c, "as for import")
    c.add_argument("cmd", nargs="*", metavar="-- CMD ARGS...", help="the program to run, after --")
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

    def percent(text: str) -> float:
        value = float(text)
        if not 0 <= value <= 100:  # nan too, which no comparison would ever fail the gate under
            raise argparse.ArgumentTypeError(f"must be a number from 0 to 100, got {text}")
        return value
    percent.__name__ = "number"  # argparse names the type so in its errors

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
               "(--per-iteration: per candidate); a line per mutant on stderr (-q: none). Where that run loaded "
               "the pytest plugin, one pytest process of the command collects once and forks each mutant's run "
               "(--no-fork: a fresh process each).\n"
               "Each run of the command is a session of its own: a timeout, Ctrl-C or SIGTERM kills all it started. "
               "With only a command, the verdicts before Ctrl-C or SIGTERM are kept in the cache, printed and "
               "written, marked stopped.\n"
               "exit codes: 0 score >= --fail-under, 1 below it, 2 no verdict: bad input, a command that cannot "
               "start, fails or times out unmutated, no reader, 0 mutants, an interrupt, a report that cannot be "
               "written (the reason is printed, and written to --junit/--json as an error)",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    c.add_argument("--target", choices=["raw", "waw", "war", "semaphore", "fence", "keepalive", "host", "all"],
                   default="all", help="which synchronization to mutate (default all)")
    c.add_argument("--readers", type=readers, default=None,
                   help="comma-separated: checker, sim, replay, replay+syncval "
                        "(default checker; '' with a command: only it)")
    c.add_argument("-j", "--jobs", type=_positive, default=os.cpu_count() or 1, help="parallel workers (default: CPUs)")
    c.add_argument("--shard", type=shard, help="run only shard K of N (by sorted mutant id)")
    c.add_argument("--fail-under", type=percent, default=100.0,
                   help="exit 1 when the kill score (%%, 0 to 100) is below (default 100)")
    c.add_argument("--require", choices=["structural", "behavioural"], default="structural",
                   help="the score --fail-under applies to, with only a command: structural (killed by anything: "
                        "the online check, the command's assertions, a crash or a hang; default) or behavioural "
                        "(killed by the command's own assertions)")
    # The default is mutations.processes.CLEAN_TIMEOUT_S, not imported: every command builds this parser.
    c.add_argument("--timeout", type=_seconds_up_to(math.inf), default=None, metavar="SECONDS",
                   help="the command's unmutated run is stopped after this, exit 2 (default 3600; a mutant's run "
                        "after 10 times the unmutated run's time)")
    c.add_argument("--format", choices=["text", "json", "github", "sarif"], default="text",
                   help="text (the kill matrix), json (docs/format.md), github (an annotation per mutant the gate "
                        "counts against, at its call site) or sarif (2.1.0, a result per such mutant)")
    c.add_argument("--junit", metavar="FILE", help="also write JUnit XML: one testcase per mutant, survivors fail")
    c.add_argument("--json", metavar="FILE", help="also write the JSON report (as --format json prints it)")
    c.add_argument("--sarif", metavar="FILE", help="also write SARIF 2.1.0 (as --format sarif prints it)")
    c.add_argument("--report-redundant", action="store_true",
                   help="list the synchronization operations no pair depends on alone, and what else orders their "
                        "pairs; with a command: the call sites (file:line) whose mutation opened a hazard in no run "
                        "of any test")
    c.add_argument("--cache", metavar="DIR",
                   help="cache directory: verdicts, and with only a command its listing, kept while the code, the "
                        "command and the files it imports are unchanged (default .vkverify-cache in the cwd, made "
                        "with a .gitignore of its own)")
    c.add_argument("--no-cache", action="store_true", help="neither read nor write the verdict cache")
    c.add_argument("--per-iteration", action="store_true",
                   help="with only a command: one mutant per candidate, not one per call site (file:line)")
    c.add_argument("--no-fork", action="store_true",
                   help="with only a command that is a pytest run: each mutant in a fresh process of the command, not "
                        "forked from one that collected the tests once")
    _add_quiet(c, "with only a command: no progress lines on stderr")
    c.add_argument("files", nargs="*", metavar="FILES... [-- CMD ARGS...]",
                   help="stream files or directories; a command after --")
    c.set_defaults(run=run, cmd=[])


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
        emit(format_text(result, stream) + "\n")
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


def _add_optimize(sub) -> None:
    def run(args: argparse.Namespace) -> int:
        import json
        from itertools import chain

        from .check.optimize import optimize
        from .model.dump import dump_chunks

        stream = _load_or_report(args.file)
        if stream is None:
            return 2
        result = optimize(stream, budget_s=args.z3_budget, buffer_barriers=args.buffer_barriers,
                          progress=None if args.quiet else lambda line: print(f"optimize: {line}", file=sys.stderr))
        if args.output is not None:
            emit(chain(dump_chunks(result.stream), ["\n"]), args.output)
        if args.format == "json":
            emit(json.dumps({"file": args.file, **result.to_json()}, indent=1) + "\n")
        elif args.format == "sarif":
            from .sarif import format_optimization

            emit(format_optimization(args.file, result) + "\n")
        else:
            emit(result.text(args.file, args.all) + "\n")
        return 0

    c = sub.add_parser("optimize", help="the fewest and narrowest barriers that order what the stream's order, "
                                        "proved by checking",
                       description="Find the global pipeline barriers a stream (or capture) can do without, and the "
                                   "narrowest stages and accesses of those it keeps, such that every conflicting "
                                   "pair its barriers order stays ordered; then the semaphore wait stages to "
                                   "narrow and the fence and idle waits that order nothing. The optimized stream is "
                                   "checked and must give exactly the original's findings (docs/optimize.md).",
                       epilog="examples:\n"
                              "  vkverify optimize run.json                  # what to remove and narrow, each barrier "
                              "by reference and file:line\n"
                              "  vkverify optimize run.gfxr -o fewer.json    # write the optimized stream\n"
                              "  vkverify optimize run.json --format json    # for tools\n"
                              "  vkverify optimize run.json --buffer-barriers   # kept barriers on their pairs' bytes\n"
                              "  vkverify optimize run.json --format sarif > optimize.sarif   # code-scanning notes\n"
                              "exit codes: 0 done (the optimized stream gives the original's findings: checked), "
                              "2 bad input",
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    c.add_argument("file", metavar="FILE", help="stream file (JSON), or a capture (.gfxr, .jsonl)")
    c.add_argument("-o", "--output", metavar="OUT", help="write the optimized stream here")
    c.add_argument("--format", choices=("text", "json", "sarif"), default="text",
                   help="text (default), json, or sarif (a note per barrier or wait to remove or narrow, at its "
                        "program line)")
    c.add_argument("--all", action="store_true", help="text: list every barrier kept as written too")
    c.add_argument("--buffer-barriers", action="store_true",
                   help="a barrier kept whose pairs lie on a few buffers becomes buffer barriers over their bytes, "
                        "where the check proves it (docs/optimize.md; default: global barriers stay global)")
    c.add_argument("--z3-budget", type=_seconds_up_to(MAX_TIMEOUT), default=10.0, metavar="SECONDS",
                   help="time z3 may take to find a minimum before the greedy choice is used (default 10)")
    _add_quiet(c, "no progress lines on stderr")
    c.set_defaults(run=run)


# dot's layout time grows about as the cube of the nodes: 800 take seconds, 1600 a minute, 8000 hours.
MAX_SVG_NODES = 1000


def _add_graph(sub) -> None:
    def run(args: argparse.Namespace) -> int:
        from .check import check
        from .check.graph import GraphvizError, build, to_dot, to_svg

        stream = _load_or_report(args.file)
        if stream is None:
            return 2
        drawn = build(stream, check(stream))
        if args.format == "svg" and drawn.graph.number_of_nodes() > args.max_nodes:
            print(f"{args.file}: {drawn.graph.number_of_nodes()} nodes, past --max-nodes {args.max_nodes} for an SVG "
                  "(dot would take minutes to hours): use --format dot, or a larger --max-nodes", file=sys.stderr)
            return 2
        text = to_dot(drawn)
        if args.format == "svg":
            try:
                text = to_svg(text)
            except GraphvizError as e:
                print(f"vkverify graph: {e}", file=sys.stderr)
                return 2
        emit(text, args.output)
        return 0

    c = sub.add_parser("graph", help="draw the happens-before graph of submissions and synchronizations",
                       description="One node per host op, submitted batch, semaphore wait and signal, fence or idle "
                                   "release, barrier and command that accesses memory, with its label and the program "
                                   "line that recorded it; every finding's two operations highlighted and the missing "
                                   "edge dashed red, labelled with the finding's kind.",
                       epilog="exit codes: 0 written, 2 bad input, Graphviz `dot` missing or past its time limit "
                              "(svg)")
    c.add_argument("file", metavar="FILE", help="stream file (JSON)")
    c.add_argument("--format", choices=("dot", "svg"), default="dot", help="dot (text) or svg (through Graphviz)")
    c.add_argument("-o", "--output", metavar="OUT", help="write here (default: stdout)")
    c.add_argument("--max-nodes", type=_positive, default=MAX_SVG_NODES, metavar="N",
                   help=f"svg: refuse a graph of more nodes (default {MAX_SVG_NODES}: dot's layout grows about as "
                        "their cube)")
    c.set_defaults(run=run)


def _add_quiet(c: argparse.ArgumentParser, what: str) -> None:
    c.add_argument("-q", "--quiet", action="store_true", help=what)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="vkverify", description=__doc__.splitlines()[0].strip('"'),
                                epilog="The stream format: docs/format.md. Defaults: [tool.vkverify] in "
                                       "pyproject.toml.",
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--version", action="version", version=f"vkverify {__version__}")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    c = sub.add_parser("check", help="find every synchronization hazard in streams, or prove there is none",
                       description="Check vkverify-stream/1 files (docs/format.md) against the Vulkan "
                                   "synchronization rules.",
                       epilog=CHECK_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    c.add_argument("files", nargs="+", metavar="FILE",
                   help="stream files (JSON), captures (.gfxr, .jsonl) or directories")
    c.add_argument("--format", choices=sorted(FORMATTERS), default="text",
                   help="text for people, json (one list; docs/format.md, Findings), sarif (2.1.0, for code "
                        "scanning), github (workflow annotations), junit (XML, a testcase per group of findings)")
    _add_quiet(c, "text: only the files with findings, warnings or errors")
    c.add_argument("--expand", action="store_true",
                   help="report every finding, not one per group (a missing dependency repeated over submits, "
                        "frames and tokens: docs/format.md, Groups); json always has both")
    c.add_argument("--expect", action="store_true",
                   help="compare the findings with each stream's `expect` block; exit 1 on any difference")
    c.add_argument("--reading", dest="readings", metavar="NAME=VALUE", action=_ReadingAction,
                   help="answer an open question of the spec the other way, e.g. all_commands_includes_host=true "
                        "(docs/format.md, Readings; repeatable)")
    c.add_argument("--witness", choices=WITNESS_MODES, default="slice",
                   help="a hazard between queues or threads is shown by the slice of a schedule that makes it happen "
                        "(default), or by the full schedule")
    c.add_argument("-o", "--output", metavar="FILE", help="write the report here, whole or not at all (default: "
                                                           "stdout)")
    c.add_argument("--witnesses", type=_natural, default=None, metavar="N",
                   help="compute at most N witnesses per stream, one per buffer and pair of queues or threads; "
                        "the findings beyond name the one that stands for them (default 5)")
    c.add_argument("--select", type=_kinds, metavar="KINDS",
                   help="report only findings of these kinds (comma-separated, e.g. raw,war)")
    c.add_argument("--ignore", type=_kinds, metavar="KINDS", default=frozenset(),
                   help="leave findings of these kinds out of the report and the exit code")
    c.add_argument("--exit-zero", action="store_true", help="exit 0 even where findings are reported (bad input "
                                                             "still exits 2)")
    c.add_argument("--statistics", action="store_true",
                   help="print the number of findings of each kind over all files instead of the findings")
    c.add_argument("--color", choices=("auto", "always", "never"), default="auto",
                   help="colour the text report: auto (a terminal, unless NO_COLOR is set), always, never")
    c.set_defaults(run=cmd_check)
    _add_simulate(sub)
    _add_replay(sub)
    _add_devices(sub)
    _add_import(sub)
    _add_capture(sub)
    _add_mutate(sub)
    _add_explain(sub)
    _add_graph(sub)
    _add_optimize(sub)
    for name, command in sub.choices.items():
        if name != "mutate":  # whose --timeout limits each run of the command it tests
            command.add_argument("--timeout", dest="budget", type=_seconds_up_to(MAX_TIMEOUT), metavar="SECONDS",
                                 help="stop after SECONDS: exit 2 with a line saying so (default: no limit)")
    return p


MAX_TIMEOUT = 10 ** 7  # seconds (four months): setitimer refuses a time past the platform's range


def _seconds_up_to(most: float):
    """An argparse type: a finite number of seconds above 0, at most `most` (inf: no bound but that)."""
    def number(text: str) -> float:  # argparse names the type so in its errors
        value = float(text)
        if not 0 < value <= most or value == math.inf:  # nan fails every comparison
            bound = "" if most == math.inf else f" and at most {most}"
            raise argparse.ArgumentTypeError(f"must be a number of seconds above 0{bound}, got {text}")
        return value
    return number


STREAMS = ("*.json", "*.gfxr")  # what a directory argument stands for


class _Usage(VkverifyError, ValueError):
    """A command line (or [tool.vkverify] table) vkverify cannot run. Seen by the CLI's user: one line, exit 2."""


def expand(paths: list[str]) -> list[str]:
    """Each directory replaced by the stream files below it, sorted; files as given."""
    out = []
    for path in paths:
        if Path(path).is_dir():
            found = sorted({str(p) for pattern in STREAMS for p in Path(path).rglob(pattern) if p.is_file()})
            if not found:
                raise _Usage(f"{path}: no {' or '.join(STREAMS)} file below this directory")
            out += found
        else:
            out.append(path)
    return out


def parse(argv: list[str]) -> argparse.Namespace:
    """Options anywhere among the arguments (argparse's intermixed parsing, per command); a command to run
    (mutate, capture) after `--`; `[tool.vkverify]` defaults before the command line's own arguments."""
    from .config import ConfigError, arguments, find, table

    p = parser()
    commands = next(a for a in p._actions if isinstance(a, argparse._SubParsersAction)).choices
    at = next((i for i, a in enumerate(argv) if not a.startswith("-")), None)
    if at is None or argv[at] not in commands:
        return p.parse_args(argv)  # --version, --help, or argparse's own error
    if {"-h", "--help", "--version"} & set(argv[:at]):
        p.parse_args(argv[:at])  # exits there
    # Flags before the command are the command's (`vkverify -q check ...`).
    command, rest, cmd = argv[at], argv[:at] + argv[at + 1:], []
    if "--" in rest and command in ("mutate", "capture"):
        rest, cmd = rest[:rest.index("--")], rest[rest.index("--") + 1:]
    source = find(Path.cwd())
    try:
        defaults = arguments(table(source), command, commands, source) if source else []
    except ConfigError as e:
        raise _Usage(str(e)) from None
    args = commands[command].parse_intermixed_args(defaults + rest)
    args.command = command
    if cmd:
        args.cmd = cmd
    if hasattr(args, "files"):
        args.files = expand(args.files)
    if command == "check":
        args.kinds = (args.select or ALL_KINDS) - args.ignore
        if args.statistics and args.format != "text":
            raise _Usage("check: --statistics prints text; leave out --format")
    return args


# Options naming files the command writes: checked before any work (model/files.py).
OUTPUTS = (("output", "-o/--output"), ("junit", "--junit"), ("capture_file", "--capture-file"))


def main(argv: list[str] | None = None) -> int:
    code = None
    try:
        args = parse(sys.argv[1:] if argv is None else list(argv))
    except _Usage as e:
        print(f"vkverify: {e}", file=sys.stderr)
        return 2
    try:
        for dest, option in OUTPUTS:
            if getattr(args, dest, None) is not None:
                check_output(getattr(args, dest), option)
        if getattr(args, "cache", None) is not None:
            check_directory(args.cache, "--cache")
        code = _within(getattr(args, "budget", None), lambda: args.run(args))
        sys.stdout.flush()  # what a command printed without emit() (mutate's report) is written here
    except _OutOfTime:
        print(f"vkverify {args.command}: --timeout {args.budget:g} s reached: stopped before it finished",
              file=sys.stderr)
        return 2
    except VkverifyError as e:  # bad input anywhere, on any verb: one line each, exit 2
        print("\n".join(e.lines()), file=sys.stderr)
        if isinstance(e, OutputError) and e.file == "stdout":
            _drop_stdout()
        return 2
    except BrokenPipeError:  # `vkverify ... | head`
        _drop_stdout()
        return 0
    except OSError as e:
        if code is None:  # not the flush above: no output failure, not ours to say
            raise
        print(OutputError("stdout", e), file=sys.stderr)
        _drop_stdout()
        return 2
    return code


class _OutOfTime(BaseException):
    """--timeout reached. Not an Exception: no handler of the work it stops may take it for its own error.
    Seen by main(), which prints the limit and exits 2."""


def _within(seconds: float | None, run):
    """run(), interrupted by _OutOfTime after `seconds` (None: no limit); a subprocess it waits for (dot) is
    killed by subprocess.run on the way out."""
    if seconds is None:
        return run()

    def out_of_time(signum, frame):
        raise _OutOfTime
    old = signal.signal(signal.SIGALRM, out_of_time)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        return run()
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def _drop_stdout() -> None:
    """The rest of stdout's buffer goes to /dev/null: the interpreter's own flush at exit would fail again
    (a message, exit 120)."""
    os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


if __name__ == "__main__":
    sys.exit(main())
