"""`explain` and the mutation analysis against the slow reference and the fast checker (issue 14).

Every consumer of happens-before must give the same answer on every pair: tests/differential.py
(`consumer_disagreements`) states what each must agree on. A disagreement is a bug in one of them:
decide which from the spec text, fix it and keep the stream in tests/corpus.
VKVERIFY_CONSUMER_EXAMPLES sets how many streams are drawn.
"""

from __future__ import annotations

import os

from hypothesis import given, settings

from .differential import (SETTINGS, assert_agree, consumer_disagreements, explain_disagreements, pattern_streams,
                           streams)
from .test_semaphores import timeline_streams

EXAMPLES_RUN = int(os.environ.get("VKVERIFY_CONSUMER_EXAMPLES", "1000"))


@settings(max_examples=EXAMPLES_RUN, **SETTINGS)
@given(streams())
def test_explain_and_mutations_agree_with_the_reference_and_the_checker(doc):
    assert_agree(doc, consumer_disagreements)


@settings(max_examples=EXAMPLES_RUN // 4, **SETTINGS)
@given(pattern_streams())
def test_explain_and_mutations_agree_on_the_patterns_of_issue_25(doc):
    assert_agree(doc, consumer_disagreements)


@settings(max_examples=EXAMPLES_RUN, **SETTINGS)
@given(timeline_streams())
def test_explain_agrees_with_the_checker_on_several_host_threads(doc):
    """Streams of two host threads signalling shared timelines (the reference reads one thread only): explain's
    verdict on every pair the checker compares is the checker's."""
    assert_agree(doc, explain_disagreements)
