"""The `vkverify` command line.

Exit codes: 0 no findings (or, with --expect, findings as expected),
1 findings (or disagreement with `expect`), 2 bad input or usage.
"""

from __future__ import annotations

import argparse
import sys

from .model import InvalidStream, load
from .report import FORMATTERS, FileResult

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

    results, bad_input = [], False
    for file in args.files:
        try:
            stream = load(file)
        except InvalidStream as e:
            print("\n".join(e.lines()), file=sys.stderr)
            bad_input = True
            continue
        findings = check(stream)
        agreement = compare(stream, findings) if args.expect else None
        results.append(FileResult(file, stream.name, findings, agreement))
    if results:
        print(FORMATTERS[args.format](results))
    if bad_input:
        return 2
    if args.expect:
        return 0 if all(r.agreement.agrees for r in results) else 1
    return 1 if any(r.findings for r in results) else 0


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
    c.set_defaults(run=cmd_check)
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        return args.run(args)
    except BrokenPipeError:  # `vkverify ... | head`
        return 0


if __name__ == "__main__":
    sys.exit(main())
