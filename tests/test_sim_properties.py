"""Issue 4's property over random streams (the checker's strategy, tests/test_properties.py, and the
differential streams, tests/differential.py): hazard-free => no schedule changes a digest; with findings =>
each finding is confirmed by a schedule that changes a digest its operations touch, or explicitly
value-coinciding with a reason. VKVERIFY_SIM_EXAMPLES sets how many differential streams are drawn."""

from __future__ import annotations

import os

from hypothesis import HealthCheck, given, settings

from vkverify.check import check
from vkverify.model import from_dict
from vkverify.sim import simulate

from .differential import SETTINGS as DIFFERENTIAL, resubmitting_streams, shared_timeline_streams, streams
from .test_properties import build, plans

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
EXAMPLES_RUN = int(os.environ.get("VKVERIFY_SIM_EXAMPLES", "300"))


def sim_disagreements(stream, schedules: int = 12, seed: int = 1) -> list[str]:
    """How the simulator's schedules disagree with the checker's findings on `stream` (empty: they agree)."""
    findings = check(stream)
    report = simulate(stream, schedules=schedules, seed=seed, findings=findings)
    out = []
    if not findings:  # every schedule is a legal order of an ordered stream: the same results
        out += [f"schedule {s.index} changes {s.changed_buffers + s.changed_reads} with no finding"
                for s in report.schedules if s.changed]
    if [v.finding for v in report.verdicts] != findings:
        out.append("the verdicts are not of the checker's findings, in its order")
    for v in report.verdicts:
        if not v.reason:
            out.append(f"{v.finding.kind} {v.finding.first} -> {v.finding.second}: {v.verdict} with no reason")
        if v.verdict == "confirmed" and not (v.finding in report.schedules[v.schedule].perturbed and v.digests):
            out.append(f"{v.finding.kind} {v.finding.first} -> {v.finding.second}: confirmed by a schedule that "
                       f"did not perturb it or changed nothing")
        elif v.verdict not in ("confirmed", "value_coinciding"):
            out.append(f"{v.finding.kind} {v.finding.first} -> {v.finding.second}: verdict {v.verdict}")
    return out


def sim_doc_disagreements(doc: dict) -> list[str]:
    """sim_disagreements of a differential stream (benchmarks/differential.py --mode sim)."""
    return sim_disagreements(from_dict(doc))


@SETTINGS
@given(plans())
def test_simulator_agrees_with_checker(plan):
    found = sim_disagreements(build(plan))
    assert not found, found


@settings(max_examples=EXAMPLES_RUN, **DIFFERENTIAL)
@given(streams() | resubmitting_streams())
def test_simulator_agrees_with_checker_on_differential_streams(doc):
    """Several queues, semaphores, fences, host accesses of coherent and cached memory, an alias, a destroy."""
    found = sim_doc_disagreements(doc)
    assert not found, found


@SETTINGS
@given(plans())
def test_fully_synchronized_streams_keep_their_digests(plan):
    stream = build(plan, synchronized=True)
    if not check(stream):
        assert not simulate(stream, schedules=12, seed=2).changed


@settings(max_examples=EXAMPLES_RUN // 4, **DIFFERENTIAL)
@given(shared_timeline_streams())
def test_simulator_agrees_with_checker_on_threads_signalling_shared_timelines(doc):
    """Two or three host threads signalling the same timelines in turn, sharing queues, idle waits among them: the
    schedules interleave the threads' calls as the checker reads them (only interleavings that complete)."""
    found = sim_doc_disagreements(doc)
    assert not found, found
