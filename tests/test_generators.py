"""The differential tests' generators draw every feature issue 25 added to the model (tests/differential.py,
FEATURES): a draw that vanished (a weight gone to zero, a branch no longer reached) would leave the feature out of
every differential test while each of them still passed."""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import given, settings

from vkverify.model import from_dict

from .differential import (FEATURES, SETTINGS, event_streams, features, image_feature_streams, image_streams,
                           marker_streams, pattern_streams, shared_timeline_streams, streams, thread_streams)
from .secondary_streams import secondary_streams

# generator -> the features its streams must include, each in at least SHARE of them
DRAWN = {
    streams: {"counter_read", "none_binding"},
    thread_streams: {"counter_read", "none_binding"},
    shared_timeline_streams: {"counter_read", "none_binding"},
    secondary_streams: {"counter_read", "none_binding"},
    pattern_streams: {"none_binding"},
    event_streams: {"none_binding"},
    marker_streams: {"none_binding"},
    image_streams: {"none_binding"},
    image_feature_streams: set(FEATURES) - {"counter_read"},
}
SHARE = 0.05
EXAMPLES = 120


@pytest.mark.parametrize("generator", list(DRAWN), ids=lambda g: g.__name__)
def test_each_generator_draws_its_features_in_a_share_of_its_streams(generator):
    seen: Counter[str] = Counter()

    @settings(max_examples=EXAMPLES, **SETTINGS)
    @given(generator())
    def count(doc):
        seen["streams"] += 1
        seen.update(features(from_dict(doc)))

    count()
    shares = {f: round(seen[f] / seen["streams"], 2) for f in sorted(DRAWN[generator])}
    assert all(share >= SHARE for share in shares.values()), shares
