"""`vkverify mutate`: the command's body (vkverify/cli.py declares its arguments)."""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from ..check import check
from ..model import InvalidStream, ir, load
from ..model.errors import OutputError, UsageError
from ..model.files import check_output, write_atomic
from .formats import COMMAND, Report, github, junit, sarif, text, to_json
from .generate import Equivalent, Mutant, mutants, plain
from .load_bearing import Redundancy, analyze
from .processes import CLEAN_TIMEOUT_S, CannotStart, Interrupted, Processes
from .readers import READERS, CleanRunFailed, CmdReader
from .runner import Cache, Stats, run, shard

COMMAND_RUNS = "the command's runs"  # --report-redundant's heading with only a command
UNNEEDED = ("no test needed it: in no run did dropping or weakening it open a hazard in what the program did next "
            "(every pair it orders is ordered by something else there, or it orders none)")

__all__ = ["command_mode", "finish", "main", "selectors"]


def selectors(chosen: list[Mutant], target: str) -> dict[str, str]:
    """VKVERIFY_MUTATE for each mutant: `<target>:<k>`, k counting that target's mutants of its stream by id."""
    out, counts = {}, {}
    for m in sorted(chosen, key=lambda m: m.id):
        t = target if target != "all" else m.targets[0]
        k = counts.get((m.file, t), 0)
        counts[(m.file, t)] = k + 1
        out[m.id] = f"{t}:{k}"
    return out


def _prepare(stream: ir.Stream, file: str) -> tuple[list[Mutant], list[Equivalent], bool, list[Redundancy]]:
    analysis = analyze(stream)
    ms, eq = mutants(stream, file, analysis)
    return ms, eq, not check(stream), analysis.redundant


def command_mode(args: argparse.Namespace, argv: list[str]) -> int:
    """No streams: the command's own Runtimes mutate themselves (gate.py), once per mutant."""
    from .gate import NoMutants, run_command

    if args.readers is not None:
        print("vkverify mutate: --readers concerns stream mutants; with only a command after -- there are none (the "
              "command is the reader)", file=sys.stderr)
        return 2
    try:
        outcomes, stats, unneeded = run_command(argv, args.target, args.jobs, args.per_iteration, _cache(args),
                                                args.shard, args.quiet, _timeout(args), not args.no_fork)
        stopped = None
    except NoMutants as e:
        return stop(f"0 mutants: {e}", args)
    except (CleanRunFailed, CannotStart) as e:
        return stop(str(e), args)
    except Interrupted as e:
        if e.partial is None:
            return stop(e.why, args)
        (outcomes, stats), stopped, unneeded = e.partial, e.why, []
    tests: dict[str, int] = {}
    for o in outcomes:
        tests[o.mutant.file] = tests.get(o.mutant.file, 0) + 1
    summary = [{"file": test, "clean": True, "mutants": n} for test, n in tests.items()]
    # What no test needed: in no run did a mutation of any target at the line open a hazard (live.sync_sites).
    redundant = {COMMAND_RUNS: [Redundancy(f"{source} {kind}", None, (), UNNEEDED) for kind, source in unneeded]} \
        if args.report_redundant and unneeded else {}
    report = Report(outcomes, [COMMAND], {}, stats, summary, redundant=redundant, stopped=stopped,
                    require=args.require)
    return stop(stopped, args, report) if stopped else finish(report, args)


def _timeout(args: argparse.Namespace) -> float:
    return CLEAN_TIMEOUT_S if args.timeout is None else args.timeout


def _cache(args: argparse.Namespace) -> Cache | None:
    return None if args.no_cache else Cache(args.cache or Path.cwd() / ".vkverify-cache")


def _json(report: Report) -> str:
    return json.dumps(to_json(report), indent=1)


# The files a report is written to: (the option's dest, its name, how the report is written there).
OUTPUTS = (("junit", "--junit", junit), ("json", "--json", _json), ("sarif", "--sarif", sarif))
PRINTED = {"text": text, "json": _json, "github": github, "sarif": sarif}  # what --format prints on stdout


def check_outputs(args: argparse.Namespace) -> None:
    """UsageError unless every report file can be written, a probe written beside it (a full disk,
    a read-only one): at once, not after every mutant has run."""
    for dest, option, _ in OUTPUTS:
        path = getattr(args, dest)
        if path is None:
            continue
        check_output(path, option)
        try:
            with tempfile.TemporaryFile(dir=Path(path).parent) as probe:
                probe.write(bytes(PROBE_BYTES))
                probe.flush()
                os.fsync(probe.fileno())
        except OSError as e:
            raise UsageError(option, f"{path} cannot be written: {e.strerror or e}") from None


PROBE_BYTES = 4096  # a page: a file system with no room left refuses it


def write_reports(report: Report, args: argparse.Namespace) -> bool:
    """Write the report files asked for; False (after a line saying why) where one cannot be."""
    for dest, option, render in OUTPUTS:
        path = getattr(args, dest)
        if path is not None:
            try:
                write_atomic(path, render(report))
            except OutputError as e:
                print(f"vkverify mutate: {option} {e}", file=sys.stderr)
                return False
    return True


def finish(report: Report, args: argparse.Namespace) -> int:
    """Print the report, write its files; exit 1 where the score --require names is below --fail-under, 2
    where a file cannot be written."""
    print(PRINTED[args.format](report))
    if not write_reports(report, args):
        return 2
    return 1 if report.gated < args.fail_under else 0


def stop(why: str, args: argparse.Namespace, report: Report | None = None) -> int:
    """Exit 2, no verdict: `why` on stderr, and in the report files (JUnit: an error testcase) so that
    CI shows it; the partial report, where some mutants were judged, on stdout too."""
    print(f"vkverify mutate: {why}", file=sys.stderr)
    report = report or Report([], [], {}, Stats(), [])
    report.stopped = why
    if report.outcomes:
        print(PRINTED[args.format](report))
    write_reports(report, args)
    return 2


def main(args: argparse.Namespace) -> int:
    files, argv = args.files, args.cmd  # FILES... [-- CMD ARGS...]
    own = [flag for flag, given in (("--per-iteration", args.per_iteration), ("--no-fork", args.no_fork),
                                    ("--require behavioural", args.require == "behavioural")) if given]
    if files and own or not files and not argv:
        print("vkverify mutate: " + (f"{' and '.join(own)} concern a command's runtime mutants (no FILES)" if files
                                      else "give stream files, or a command after --"), file=sys.stderr)
        return 2
    check_outputs(args)
    if not files:
        return command_mode(args, argv)
    try:
        streams = {file: plain(load(file)) for file in files}
    except InvalidStream as e:
        print("\n".join(e.lines()), file=sys.stderr)
        return 2
    # Generating mutants (the model's analysis and equivalence filter) costs more than checking them.
    if args.jobs > 1 and len(files) > 1:
        with ProcessPoolExecutor(max_workers=args.jobs) as pool:
            prepared = list(pool.map(_prepare, streams.values(), files))
    else:
        prepared = [_prepare(s, file) for file, s in streams.items()]
    found, summary, equivalent, redundant = [], [], [], {}
    for file, (ms, eq, clean, red) in zip(files, prepared):
        chosen = [m for m in ms if args.target == "all" or args.target in m.targets]
        found += chosen
        equivalent += eq
        summary.append({"file": file, "clean": clean, "mutants": len(chosen)})
        if args.report_redundant:
            redundant[file] = red
    if not found:
        return stop(f"0 mutants: nothing load-bearing for target {args.target} in the {len(files)} stream(s): no "
                    "synchronization whose removal the model sees as a new hazard", args)
    picked = found if args.shard is None else shard(found, *args.shard)
    readers = [READERS[name]() for name in (args.readers if args.readers is not None else ["checker"])]
    if argv:
        readers.append(CmdReader(argv, selectors(found, args.target), _timeout(args)))
    skipped = {}
    used = {m.file: streams[m.file] for m in picked}
    try:
        # A signal ends each run of the command (the reader's worker processes, forked within, inherit this).
        with Processes().stopped_by_signals():
            for reader in readers:
                why = reader.start(used)
                if why is not None:
                    skipped[reader.name] = why
            running = [r for r in readers if r.name not in skipped]
            if not running:
                return stop("no reader can run: " + ("; ".join(f"{k}: {v}" for k, v in skipped.items()) or
                                                     "none asked for (--readers, or a command after --)"), args)
            outcomes, stats = run(picked, running, streams, args.jobs, _cache(args))
    except (CleanRunFailed, CannotStart) as e:
        return stop(str(e), args)
    except Interrupted as e:
        return stop(f"{e.why}: no verdict kept", args)
    return finish(Report(outcomes, [r.name for r in readers], skipped, stats, summary, equivalent, redundant), args)
