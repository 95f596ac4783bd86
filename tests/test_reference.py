"""The fast checker against the slow reference (vkverify/check/reference.py), the spec read literally.

A disagreement is a bug in one of them: find which from the spec text, fix it, and keep the stream in
tests/corpus (both sides of the rule). The differential run draws its streams from tests/differential.py;
VKVERIFY_DIFFERENTIAL_EXAMPLES sets how many (benchmarks/differential.py runs many more).
"""

from __future__ import annotations

import json
import os
from functools import partial

import pytest
from hypothesis import given, settings

from vkverify.check import check
from vkverify.check.readings import Readings
from vkverify.check.reference import Reference, OutsideReference
from vkverify.model import load

from .conftest import CORPUS, EXAMPLES
from .differential import SETTINGS, assert_agree, batched_streams, completes, disagreements, fix_disagreements, streams

EXAMPLES_RUN = int(os.environ.get("VKVERIFY_DIFFERENTIAL_EXAMPLES", "400"))


@settings(max_examples=EXAMPLES_RUN, **SETTINGS)
@given(streams())
def test_fast_checker_agrees_with_the_reference(doc):
    assert_agree(doc, disagreements)


@settings(max_examples=EXAMPLES_RUN // 2, **SETTINGS)
@given(batched_streams())
def test_fast_checker_agrees_with_the_reference_on_submits_of_several_batches(doc):
    assert_agree(doc, disagreements)


@pytest.mark.parametrize("readings", [Readings(all_commands_includes_host=False),
                                      Readings(buffer_barrier_covers_aliases=True)], ids=["no-host-in-all", "aliases"])
@settings(max_examples=EXAMPLES_RUN // 4, **SETTINGS)
@given(doc=streams() | batched_streams())
def test_fast_checker_agrees_with_the_reference_under_other_readings(readings, doc):
    assert_agree(doc, partial(disagreements, readings=readings))


@settings(max_examples=EXAMPLES_RUN // 4, **SETTINGS)
@given(streams() | batched_streams())
def test_the_barrier_a_finding_gives_as_its_fix_orders_its_pair(doc):
    assert_agree(doc, fix_disagreements)


def _readable(path):
    stream = load(path)
    try:
        Reference(stream)
    except OutsideReference:
        return False
    return completes(check(stream))


@pytest.mark.parametrize("path", [p for p in CORPUS + EXAMPLES if _readable(p)], ids=lambda p: p.name)
def test_corpus_agrees_with_the_reference(path):
    doc = json.loads(path.read_text())
    assert not disagreements(doc)
    assert not fix_disagreements(doc)


def test_reference_follows_the_spec_on_a_chain_through_top_of_pipe():
    """A source stage top_of_pipe is NONE (spec 7.6.1): the reference itself reports the RAW of corpus 101 and
    none in its twin 102, so the differential test compares against the spec's answer, not the checker's."""
    [broken] = [p for p in CORPUS if p.name.startswith("101-")]
    [fixed] = [p for p in CORPUS if p.name.startswith("102-")]
    assert {(h.kind, h.first, h.second) for h in Reference(load(broken)).verdict().hazards} == \
        {("raw", "cb0[0]", "cb0[3]")}
    assert not Reference(load(fixed)).verdict().hazards
