"""The weak test: it checks only the shape of each frame's output. Synchronization mutants survive."""

import numpy as np

from engine import Engine

N = 4096


def test_frames(vk_runtime):
    engine = Engine(vk_runtime, N)
    for seed in (1, 2):
        assert engine.frame(np.random.default_rng(seed).standard_normal(N)).shape == (N,)
