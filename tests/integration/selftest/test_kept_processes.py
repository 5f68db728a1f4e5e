"""A selftest's runs go on in the adapter processes of their worker numbers: one process per
slot serves the unmutated run and every mutant's after it (each suite resets as always), with
the same report as a process per run; a run that fails leaves no process behind for the next,
and a terminated selftest leaves no process at all."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from functools import partial
from pathlib import Path

import pytest

from membench_gate.config import load_config
from membench_gate.defaults import DEFAULT_ALPHA
from membench_gate.run.runner import load_fixtures, run
from membench_gate.selftest import sensitivity
from tests.integration.adapter.test_timeout import gone
from tests.support.cli import cli_env, run_cli
from tests.support.configs import write_config

pytestmark = pytest.mark.slow

RECALL = '[suites.recall]\nfixtures = ["builtin"]\nk = 10\n'
MUTANTS = ("drop-best-hit", "reverse-ranking", "always-abstain", "never-abstain", "wrong-ids")


def _starts(folder: Path) -> list[dict[str, str]]:
    path = folder / "starts.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def _mutants() -> list[str]:
    return [arg for name in MUTANTS for arg in ("--mutant", name)]


@pytest.mark.parametrize("jobs", [1, 2])
def test_one_adapter_process_per_slot_serves_every_run_with_the_same_report(
        tmp_path: Path, jobs: int) -> None:
    kept, fresh = tmp_path / "kept", tmp_path / "fresh"
    write_config(kept, RECALL, "adapters_for_tests:StartLog", options=f'log = "{kept}"')
    done = run_cli("selftest", *_mutants(), "--jobs", str(jobs), "--json", "st.json", cwd=kept)
    assert done.returncode in (0, 1), done.stderr
    starts = _starts(kept)
    # Six runs (the unmutated one and five mutants'): a process per run would be six starts.
    assert len(starts) == jobs, starts
    assert sorted(s["worker"] for s in starts) == [str(n) for n in range(1, jobs + 1)]
    # The report is the one of a process per run: the same runs, each in a new process.
    write_config(fresh, RECALL, "adapters_for_tests:StartLog", options=f'log = "{fresh}"')
    config = load_config(fresh / "membench.toml")
    loaded = load_fixtures(config)
    chosen = [m for m in sensitivity.MUTANTS if m.name in MUTANTS]
    outcomes = [partial(lambda wrap: run(config, wrap=wrap, preloaded=loaded).to_baseline(), wrap)
                for wrap in (None, *chosen)]
    alone = sensitivity._judged(outcomes, chosen, DEFAULT_ALPHA).model_dump(mode="json")
    assert len(_starts(fresh)) == 1 + len(MUTANTS)
    together = json.loads((kept / "st.json").read_text())
    assert together["mutants"] == alone["mutants"]
    assert together["covered"] == alone["covered"] and together["blind"] == alone["blind"]


def test_a_run_that_fails_leaves_its_process_behind_and_the_next_starts_a_new_one(
        tmp_path: Path) -> None:
    write_config(tmp_path, RECALL, "adapters_for_tests:DiesInItsSecondRun",
                 options=f'log = "{tmp_path}"\nsearches = 0')
    config = load_config(tmp_path / "membench.toml")
    searches = len(load_fixtures(config)[1]["recall"].digests)  # one run's searches
    (tmp_path / "membench.toml").write_text((tmp_path / "membench.toml").read_text().replace(
        "searches = 0", f"searches = {searches}"))
    done = run_cli("selftest", *_mutants(), "--json", "st.json", cwd=tmp_path)
    report = json.loads((tmp_path / "st.json").read_text())["mutants"]
    # Process A: the unmutated run, then mutant 1 dies in it; B: mutant 2, then 3 dies; C: 4, 5.
    errors = [name for name in MUTANTS if report[name].get("error")]
    assert errors == ["drop-best-hit", "always-abstain", "wrong-ids"], (report, done.stderr)
    assert all("ended without answering (exit code 3)" in report[name]["error"]
               for name in errors), report
    assert len(_starts(tmp_path)) == 3
    assert all(gone(s["pid"]) for s in _starts(tmp_path))


def test_a_terminated_selftest_stops_every_kept_process(tmp_path: Path) -> None:
    write_config(tmp_path, RECALL, "adapters_for_tests:StartLog", options=f'log = "{tmp_path}"')
    gate = subprocess.Popen(
        [sys.executable, "-m", "membench_gate", "selftest", "--jobs", "2", "--json", "st.json"],
        cwd=tmp_path, env=cli_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        preexec_fn=lambda: signal.signal(signal.SIGTERM, signal.SIG_DFL))
    assert gate.stderr is not None
    for line in gate.stderr:  # the mutants are running, in both slots' kept processes
        if "mutant 2/" in line:
            break
    started = time.monotonic()
    gate.send_signal(signal.SIGTERM)
    _, stderr = gate.communicate(timeout=60)
    assert gate.returncode == 4, stderr
    assert "membench-gate: error: terminated (SIGTERM)" in stderr
    assert time.monotonic() - started < 10
    starts = _starts(tmp_path)
    assert len(starts) == 2
    assert all(gone(s["pid"]) for s in starts)
