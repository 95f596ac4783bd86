"""Round trip (issue 9's acceptance): corpus streams replayed under the capture layer, imported and checked,
give the original's findings, and the imported stream replays with the original's digests.

Not written yet: it needs vkverify.runtime's replay (being written alongside) plus a mapping from the
imported names (buf<handle>, sh<module>) back to the corpus stream's; it skips until then."""

import pytest


def test_corpus_round_trip():
    pytest.skip("round trip needs vkverify.runtime.replay under the capture layer and an imported-name mapping; "
                "not implemented yet")
