"""The abstention suite on small corpora: controls that can still fail."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import run_cli

from membench_gate.suites.abstention.scoring import derangement


@pytest.mark.parametrize("n", range(2, 12))
def test_the_shuffled_control_moves_every_fact(n: int) -> None:
    ids = [f"f{i}" for i in range(n)]
    shuffled = derangement(ids, seed=7)
    assert sorted(shuffled) == sorted(ids)
    assert all(a != b for a, b in zip(ids, shuffled, strict=True))


def test_a_two_fact_corpus_still_has_failing_controls(make_repo: Callable[..., Path]) -> None:
    # With k = 1 a two-fact corpus can tell right from wrong (with k >= the corpus, it cannot,
    # and the controls rightly say so); a shuffle that left a fact in place would pass.
    repo = make_repo()
    done = run_cli("run", "--out", "r.json", cwd=repo)
    assert done.returncode == 0, done.stderr
    cells = json.loads((repo / "r.json").read_text())["cells"]
    assert cells["abstention/default"]["metrics"]["controls_passing"] == 0
    assert cells["abstention/control_shuffled"]["failed"] == []
