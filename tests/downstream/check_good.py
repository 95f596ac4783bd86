"""The good test: values against numpy and the recorded stream race-free. Every mutant dies."""

import numpy as np

from engine import Engine

N = 4096


def test_frames(vk_runtime, assert_race_free):
    engine = Engine(vk_runtime, N)
    for seed in (1, 2):
        x = np.random.default_rng(seed).standard_normal(N).astype(np.float32)
        assert np.array_equal(engine.frame(x), 2 * (2 * x + 1) + 1)
    assert_race_free(vk_runtime)
