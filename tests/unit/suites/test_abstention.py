"""The abstention suite on small corpora: controls that can still fail."""

from __future__ import annotations

import pytest

from membench_gate.suites.abstention.scoring import derangement


@pytest.mark.parametrize("n", range(2, 12))
def test_the_shuffled_control_moves_every_fact(n: int) -> None:
    ids = [f"f{i}" for i in range(n)]
    shuffled = derangement(ids, seed=7)
    assert sorted(shuffled) == sorted(ids)
    assert all(a != b for a, b in zip(ids, shuffled, strict=True))
