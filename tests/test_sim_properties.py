"""Issue 4's property over random streams (the checker's strategy, tests/test_properties.py):
hazard-free => no schedule changes a digest; with findings => each finding is confirmed by a
schedule that changes a digest its operations touch, or explicitly value-coinciding with a reason."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings

from vkverify.check import check
from vkverify.sim import simulate

from .test_properties import build, plans

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(plans())
def test_simulator_agrees_with_checker(plan):
    stream = build(plan)
    findings = check(stream)
    report = simulate(stream, schedules=12, seed=1, findings=findings)
    if not findings:
        assert not report.changed, [s for s in report.schedules if s.changed][:2]
    assert [v.finding for v in report.verdicts] == findings
    for v in report.verdicts:
        assert v.reason
        if v.verdict == "confirmed":
            assert v.finding in report.schedules[v.schedule].perturbed and v.digests
        else:
            assert v.verdict == "value_coinciding"


@SETTINGS
@given(plans())
def test_fully_synchronized_streams_keep_their_digests(plan):
    stream = build(plan, synchronized=True)
    if not check(stream):
        assert not simulate(stream, schedules=12, seed=2).changed
