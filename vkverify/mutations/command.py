"""`vkverify mutate`: the command's body (vkverify/cli.py declares its arguments)."""

from __future__ import annotations

import argparse
import json
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from ..check import check
from ..model import InvalidStream, ir, load
from ..model.files import write_atomic
from .formats import Report, junit, text, to_json
from .generate import Equivalent, Mutant, mutants, plain
from .load_bearing import Redundancy, analyze
from .readers import READERS, CleanRunFailed, CmdReader
from .runner import Cache, run, shard

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

    refused = [flag for flag, given in (("--readers", args.readers is not None),
                                        ("--report-redundant", args.report_redundant)) if given]
    if refused:
        print(f"vkverify mutate: {' and '.join(refused)} concern stream mutants; with only a command after -- "
              "there are none (the command is the reader)", file=sys.stderr)
        return 2
    try:
        outcomes, stats = run_command(argv, args.target, args.jobs, args.per_iteration, _cache(args), args.shard,
                                      args.quiet)
    except NoMutants as e:
        print(f"vkverify mutate: 0 mutants: {e}", file=sys.stderr)
        return 2
    except CleanRunFailed as e:
        print(f"vkverify mutate: {e}", file=sys.stderr)
        return 2
    tests: dict[str, int] = {}
    for o in outcomes:
        tests[o.mutant.file] = tests.get(o.mutant.file, 0) + 1
    summary = [{"file": test, "clean": True, "mutants": n} for test, n in tests.items()]
    return finish(Report(outcomes, ["command"], {}, stats, summary), args)


def _cache(args: argparse.Namespace) -> Cache | None:
    return None if args.no_cache else Cache(args.cache or Path.cwd() / ".vkverify-cache")


def finish(report: Report, args: argparse.Namespace) -> int:
    """Print the report, write the JUnit file; exit 1 below --fail-under."""
    print(text(report) if args.format == "text" else json.dumps(to_json(report), indent=1))
    if args.junit:
        write_atomic(args.junit, junit(report))
    return 1 if report.score < args.fail_under else 0


def main(args: argparse.Namespace) -> int:
    files, argv = args.files, args.cmd  # FILES... [-- CMD ARGS...]
    if not files and argv:
        return command_mode(args, argv)
    if not files or args.per_iteration:
        print("vkverify mutate: " + ("--per-iteration concerns a command's runtime mutants (no FILES)" if files
                                      else "give stream files, or a command after --"), file=sys.stderr)
        return 2
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
    picked = found if args.shard is None else shard(found, *args.shard)
    readers = [READERS[name]() for name in (args.readers if args.readers is not None else ["checker"])]
    if argv:
        readers.append(CmdReader(argv, selectors(found, args.target)))
    skipped = {}
    used = {m.file: streams[m.file] for m in picked}
    try:
        for reader in readers:
            why = reader.start(used)
            if why is not None:
                skipped[reader.name] = why
    except CleanRunFailed as e:
        print(f"vkverify mutate: {e}", file=sys.stderr)
        return 2
    running = [r for r in readers if r.name not in skipped]
    if not running:
        why = "; ".join(f"{k}: {v}" for k, v in skipped.items()) or "none asked for (--readers, or a command after --)"
        print(f"vkverify mutate: no reader can run: {why}", file=sys.stderr)
        return 2
    outcomes, stats = run(picked, running, streams, args.jobs, _cache(args))
    return finish(Report(outcomes, [r.name for r in readers], skipped, stats, summary, equivalent, redundant), args)
