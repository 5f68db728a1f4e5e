"""A pull request's check without the live key or a cached answer: the live suite is skipped
with a note on the console and in the report, and the base's cells it leaves out are breaches."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.cli import cli_env, seed_repo
from tests.support.fakellm import FakeLLM
from tests.support.gitrepos import commit
from tests.support.paths import REPO

pytestmark = pytest.mark.slow

KEY = "MEMBENCH_TEST_LLM_KEY"


def gate(repo: Path, *args: str, key: str | None) -> subprocess.CompletedProcess[str]:
    env = cli_env({KEY: key} if key else {})
    if key is None:
        env.pop(KEY, None)
    return subprocess.run([sys.executable, "-m", "membench_gate", *args], cwd=repo, env=env,
                          capture_output=True, text=True, timeout=300, check=False)


def test_a_skipped_live_suite_is_said_and_its_missing_cells_fail_the_check(tmp_path: Path
                                                                           ) -> None:
    with FakeLLM.for_fixtures(REPO / "fixtures" / "behaviour") as fake:
        config = (f'[live]\nbase_url = "{fake.url}"\nmodel = "fake-1"\napi_key_env = "{KEY}"\n'
                  'cache = "live-cache.jsonl"\n[suites.veto]\n'
                  '[suites.behaviour]\nconditions = ["none", "memory"]\n')
        repo = seed_repo(tmp_path / "repo", {"membench.toml": config}, blessed=False)
        done = gate(repo, "bless", key="sk-test")
        assert done.returncode == 0, done.stdout + done.stderr
        commit(repo, "bless baseline", {"live-cache.jsonl": None})  # the cache not committed
        assert len(fake.requests) == 90
        baseline = json.loads((repo / "baselines" / "main.json").read_text())
        assert "behaviour/memory" in baseline["cells"]

        done = gate(repo, "check", "--json", "verdict.json", "--report", "report.md", key=None)
        assert len(fake.requests) == 90  # nothing was asked without the key
    assert done.returncode == 1, done.stdout + done.stderr
    assert f"behaviour: skipped, no key in ${KEY} and no recorded answer" in done.stderr
    verdict = json.loads((repo / "verdict.json").read_text())
    assert verdict["verdict"] == "regression"
    assert any(n.startswith("live suite behaviour skipped: no key in") for n in verdict["notes"])
    missing = {b["key"] for b in verdict["breaches"] if b["kind"] == "cell-missing"}
    assert missing == {"behaviour/none", "behaviour/memory"}
    assert "live suite behaviour skipped" in (repo / "report.md").read_text()
