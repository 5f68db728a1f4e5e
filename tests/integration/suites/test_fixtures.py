"""Fixture mistakes in a repository are errors, not conversions: through the CLI, exit 4 and the
error verdict."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.support.cli import assert_error_verdict, run_cli
from tests.support.configs import SMALL_FACTS, SMALL_PROBES

# Each test runs the CLI or real git in subprocesses: seconds per test.
pytestmark = pytest.mark.slow


@pytest.mark.parametrize(("mutate", "needle"), [
    (lambda f, p: f[0].update(holdout="yes"), "holdout"),
    (lambda f, p: p[0].update(id="f2"), "duplicate"),
    (lambda f, p: p[0].update(gold_fact_id=7), "gold_fact_id"),
])
def test_fixture_mistakes_are_errors_not_conversions(make_repo: Callable[..., Path], mutate,
                                                     needle: str) -> None:
    repo = make_repo()
    facts, probes = json.loads(json.dumps(SMALL_FACTS)), json.loads(json.dumps(SMALL_PROBES))
    mutate(facts, probes)
    (repo / "fx/facts.json").write_text(json.dumps(facts))
    (repo / "fx/probes.json").write_text(json.dumps(probes))
    done = run_cli("run", "--out", "r.json", cwd=repo)
    assert done.returncode == 4 and needle in done.stderr, done.stderr
    assert_error_verdict(repo / "r.json")
