"""The plain-Python permutation is numpy's, bit for bit (results and baselines depend on it)."""

import numpy as np
import pytest

from membench_gate.suites.common.seeded import permutation

SEEDS = [0, 1, 2, 7, 42, 1234, 2**31 - 1, 2**32 - 1, 2**32, 2**64 + 5, 2**130 + 3]


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("n", [0, 1, 2, 3, 4, 5, 17, 64, 65, 1000, 5000])
def test_permutation_is_numpys(seed: int, n: int) -> None:
    assert permutation(n, seed) == np.random.default_rng(seed).permutation(n).tolist()


def test_many_seeds_small_sizes() -> None:
    for seed in range(300):
        n = seed % 23
        assert permutation(n, seed) == np.random.default_rng(seed).permutation(n).tolist(), seed


def test_different_seeds_differ_and_negative_seed_is_refused() -> None:
    assert permutation(50, 1) != permutation(50, 2)
    with pytest.raises(ValueError):
        permutation(5, -1)
