"""The abstention suite on a two-fact corpus, through the CLI: its controls can still fail."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.support.cli import run_cli

# Each test runs the CLI or real git in subprocesses: seconds per test.
pytestmark = pytest.mark.slow


def test_a_two_fact_corpus_still_has_failing_controls(make_repo: Callable[..., Path]) -> None:
    # With k = 1 a two-fact corpus can tell right from wrong (with k >= the corpus, it cannot,
    # and the controls rightly say so); a shuffle that left a fact in place would pass.
    repo = make_repo()
    done = run_cli("run", "--out", "r.json", cwd=repo)
    assert done.returncode == 0, done.stderr
    cells = json.loads((repo / "r.json").read_text())["cells"]
    assert cells["abstention/default"]["metrics"]["controls_passing"] == 0
    assert cells["abstention/control_shuffled"]["failed"] == []
