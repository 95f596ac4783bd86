"""Findings recorded in columns and worded when read (check/findings.py Findings, issue 29)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from vkverify.check import check
from vkverify.check.findings import Findings
from vkverify.check.engine import Checker
from vkverify.check.schedule import Schedule
from vkverify.check.walk import several_orders, shared_timelines
from vkverify.model import load

from .conftest import CORPUS, EXAMPLES

CORPUS_01 = next(p for p in CORPUS if p.name.startswith("01-"))  # cb0: a copy then a dispatch of A, no barrier


def _run(stream, refs_repeat: bool | None = None) -> list:
    """The schedule's findings before exact.refine; `refs_repeat` True: every key kept all run long to find
    repeats, as before the keys of the operation being checked sufficed."""
    checker = Checker(stream)
    if refs_repeat is not None:
        checker.findings.refs_repeat = refs_repeat
    return list(Schedule(checker, shared_timelines(stream)).run())


@pytest.mark.parametrize("path", CORPUS + EXAMPLES, ids=lambda p: p.name)
def test_repeats_are_found_among_the_keys_of_the_operation_checked(path):
    stream = load(path)
    stream = stream.instances[0][1] if stream.params else stream
    assert _run(stream) == _run(stream, refs_repeat=True)


def test_a_command_buffer_run_twice_by_one_submit_merges_the_repeats_of_its_references():
    """The loader refuses it (`cb0[0]@main[1]` would name two runs); a stream made by hand is still checked as
    before: the second run's RAW is the first's, its bytes merged."""
    stream = load(CORPUS_01)
    main = stream.threads[0]
    submit = main.ops[1]
    twice = replace(submit, batches=(replace(submit.batches[0], command_buffers=("cb0", "cb0")),))
    stream = replace(stream, threads=(replace(main, ops=(main.ops[0], twice, *main.ops[2:])),))
    found = _run(stream)
    assert found == _run(stream, refs_repeat=True)
    assert [(f.first, f.second) for f in found if f.kind == "raw"] == [("cb0[0]@main[1]", "cb0[1]@main[1]")]


def test_findings_are_a_sequence_worded_when_read():
    found = check(load(CORPUS_01))
    assert isinstance(found, Findings)
    assert found == list(found) == found[:] and found[-1] == found[0] and len(found) == 1
    f = found[0]
    assert (f.kind, f.buffer, f.range, f.first, f.second) == ("raw", "A", (0, 4096), "cb0[0]", "cb0[1]")
    assert f.first_access == "copy/transfer_write" and f.labels == ("upload A", "consume A")
    assert f.message == "cb0[1] reads 'A' bytes [0, 4096) that cb0[0] wrote, without a memory dependency"
    with pytest.raises(IndexError):
        found[1]


def test_join_adds_what_another_run_found_and_merges_the_bytes_of_what_both_found():
    """schedule.check's runs in each submission order: Findings.join keys findings as record does, adds the
    other run's new ones worded, and widens the range of one both report."""
    stream = load(next(p for p in CORPUS if p.name.startswith("200-")))
    use_first = next(o for o in several_orders(stream) if o["q0"][0][0] == "use")
    theirs = Schedule(Checker(stream), shared_timelines(stream), order=use_first, every_order=True).run()
    assert [(f.kind, f.first, f.second, f.range) for f in theirs] == [("waw", "cb1[1]", "cb0[0]", (0, 4096))]
    fresh = Findings(None)
    fresh.join(theirs)
    assert list(fresh) == list(theirs)  # added, worded as the run words it
    mine = Findings(None)
    mine.record("waw", "D", 0, 8, "x[0]", "x[1]", -1, -1, 1, 0, ("worded", "fix"))
    mine.record("waw", "D", 4096, 4100, "cb1[1]", "cb0[0]", -1, -1, 2, 0, ("worded", "fix"))
    mine.record("raw", "D", 0, 8, "cb1[1]", "cb0[0]", -1, -1, 2, 0, ("worded", "fix"))
    mine.join(theirs)
    assert [(f.kind, f.first, f.range) for f in mine] == [("waw", "x[0]", (0, 8)), ("waw", "cb1[1]", (0, 4100)),
                                                          ("raw", "cb1[1]", (0, 8))]
    mine.join(Schedule(Checker(stream), shared_timelines(stream)).run())  # the walk's order: nothing
    assert len(mine) == 3
