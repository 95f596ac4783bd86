"""The engine's tests: values against numpy, and the recorded stream race-free.

`vkverify mutate -- pytest examples/engine` drops or weakens each load-bearing
synchronization in turn; each must make one of these tests fail.
"""

import numpy as np
import pytest

from engine import Engine, expected

N = 1 << 18  # large enough that the device is still busy when a host read races it
FACTORS = (2.0, 0.5)


@pytest.fixture
def engine(vk_runtime, monkeypatch):
    monkeypatch.setenv("VKVERIFY_STAGED", "1")  # stage through host slots even where the device maps (Lavapipe)
    rng = np.random.default_rng(7)
    x, y = rng.standard_normal(N, np.float32), rng.standard_normal(N, np.float32)
    return Engine(vk_runtime, x, y), x, y


def test_frames_match_numpy(engine):
    eng, x, y = engine
    for factor in FACTORS:
        out, total = eng.frame(factor)
        want_out, want_total = expected(x, y, factor)
        assert np.array_equal(out, want_out) and total == want_total


def test_frames_are_race_free(engine, vk_runtime, assert_race_free):
    eng, _, _ = engine
    for factor in FACTORS:
        eng.frame(factor)
    assert_race_free(vk_runtime)
