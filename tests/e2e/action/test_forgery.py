"""The action's own plumbing against a pull request's adapter written to forge it (the gate step
run as the runner runs it, see test_gate_step.py; unsealed: the adapter runs as the step's user).

- The runner's file commands: the adapter finds ``$GITHUB_OUTPUT`` and ``$GITHUB_STEP_SUMMARY``
  (in its ancestors' environment, or under ``$RUNNER_TEMP/_runner_file_commands``) and writes
  ``verdict=pass`` and a ✅ PASS summary, with an open heredoc to swallow the gate's own lines.
  The outputs GitHub reads, the summary and the comment are the gate's, and the forgery is an
  ERROR.
- The selftest's second run of the adapter rewrites verdict.json and report.md: the comment, the
  summary and the files the step leaves are the ones validated after the check.
- A silent adapter allowed a day per call is stopped by the check's time budget.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from membench_gate.ci.actions_env import format_outputs
from tests.e2e.action.test_gate_step import TOKEN, StepRun, pull_request, run_step
from tests.support.fakegithub import FakeGitHub
from tests.support.gaterepo import (
    FORGER,
    FORGERIES,
    PR_NUMBER,
    SILENT_ADAPTER,
    blessed_origin,
    config_text,
    runner_reads,
)

# Never answers a search: only a budget ends the wait, [adapter] timeout being a day.
HANGING = '''\
import time

from membench_gate.reference import ReferenceMemory


class Hanging(ReferenceMemory):
    def search(self, query):
        time.sleep(3600)
'''


@pytest.fixture
def fake(fake_github: Callable[..., FakeGitHub]) -> FakeGitHub:
    server = fake_github(token=TOKEN)
    server.add_pull(PR_NUMBER)
    return server


@pytest.fixture(scope="module")
def origin(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    return blessed_origin(tmp_path_factory.mktemp("origin"), {
        "silent.py": SILENT_ADAPTER, "forger.py": FORGER, "hanging.py": HANGING})


def assert_forgery_refused(run: StepRun, fake: FakeGitHub) -> None:
    outputs, error = runner_reads(run.output_file)
    assert error is None, error
    assert (outputs["verdict"], outputs["exit-code"]) == ("error", "4"), outputs
    assert run.returncode == 4, run.log
    assert run.summary.startswith("## membench-gate: ⛔ ERROR"), run.summary[:200]
    assert "✅" not in run.summary
    shown = run.summary.replace("\\_", "_").replace("\\$", "$")  # (Markdown's escapes)
    assert "$GITHUB_OUTPUT and $GITHUB_STEP_SUMMARY were written" in shown
    assert any("$GITHUB_OUTPUT" in a for a in run.annotations("error"))
    (comment,) = fake.comments_on(PR_NUMBER)
    assert "ERROR" in comment["body"] and "✅" not in comment["body"]
    assert run.verdict()["verdict"] == "error"


@pytest.mark.parametrize("adapter", ["Fixed", "Open"])
def test_an_adapter_writing_the_runners_files_cannot_set_the_outputs_or_the_summary(
        origin: tuple[Path, str], fake: FakeGitHub, tmp_path: Path, adapter: str) -> None:
    checkout = pull_request(origin, tmp_path,
                            {"membench.toml": config_text(adapter=f"forger:{adapter}")})
    run = run_step(checkout, fake, tmp_path)
    assert_forgery_refused(run, fake)


def test_the_same_memory_not_forging_is_a_regression(
        origin: tuple[Path, str], fake: FakeGitHub, tmp_path: Path) -> None:
    checkout = pull_request(origin, tmp_path, {"membench.toml": config_text(adapter="silent:Silent")})
    run = run_step(checkout, fake, tmp_path)
    outputs, error = runner_reads(run.output_file)
    assert error is None and (outputs["verdict"], outputs["exit-code"]) == ("regression", "1")
    assert run.returncode == 1 and run.summary.startswith("## membench-gate: ❌ REGRESSION")


@pytest.mark.parametrize("forged", sorted(FORGERIES))
def test_appending_after_the_forgery_is_not_enough(forged: str) -> None:
    # Why the step puts the file back before it writes: after the forged lines, the action's
    # old fixed delimiter is hijacked outright, and random ones still leave the forged
    # ``verdict=pass`` set when the open heredoc fails the step.
    honest = {"verdict": "regression", "exit-code": "1"}
    old = "".join(f"{k}<<MEMBENCH_GATE_EOF\n{v}\nMEMBENCH_GATE_EOF\n" for k, v in honest.items())
    hijacked, _ = runner_reads(FORGERIES[forged] + old)
    assert hijacked["verdict"] == "pass"
    left, error = runner_reads(FORGERIES[forged] + format_outputs(honest))
    assert left["verdict"] == "pass" and error is not None
    assert runner_reads(format_outputs(honest)) == (honest, None)


def test_a_selftest_rewriting_the_checks_files_changes_nothing_shown(
        origin: tuple[Path, str], fake: FakeGitHub, tmp_path: Path) -> None:
    checkout = pull_request(origin, tmp_path,
                            {"membench.toml": config_text(adapter="forger:Rewriter")})
    run = run_step(checkout, fake, tmp_path, selftest="true")
    assert (tmp_path / "runner-temp" / "forged-in-selftest").is_file()  # it did rewrite them
    assert run.returncode == 1, run.log
    assert run.outputs["verdict"] == "regression"
    assert run.summary.startswith("## membench-gate: ❌ REGRESSION")
    assert "**Gate sensitivity" in run.summary  # the selftest's own line closes it
    (comment,) = fake.comments_on(PR_NUMBER)
    assert "REGRESSION" in comment["body"] and "✅ PASS" not in comment["body"]
    assert "**Gate sensitivity" in comment["body"]
    # The files the step leaves (the fork-safe artifact, report-path) are the validated ones.
    verdict = json.loads((run.out_dir / "verdict.json").read_text(encoding="utf-8"))
    assert (verdict["verdict"], verdict["exit_code"]) == ("regression", 1)
    report = Path(run.outputs["report-path"]).read_text(encoding="utf-8")
    assert report.startswith("## membench-gate: ❌ REGRESSION") and run.summary.startswith(report)
    step = json.loads((run.out_dir / "step.json").read_text(encoding="utf-8"))
    assert step == {"advisory": False}


def test_a_silent_adapter_allowed_a_day_per_call_is_stopped_by_the_budget(
        origin: tuple[Path, str], fake: FakeGitHub, tmp_path: Path) -> None:
    config = config_text(adapter="hanging:Hanging").replace(
        '[adapter]\n', '[adapter]\ntimeout = 86400\n')
    checkout = pull_request(origin, tmp_path, {"membench.toml": config})
    started = time.monotonic()
    run = run_step(checkout, fake, tmp_path, budget_minutes="0.05")
    took = time.monotonic() - started
    assert run.returncode == 4, run.log
    assert (run.outputs["verdict"], run.outputs["exit-code"]) == ("error", "4")
    message = "the check's time budget of 0.05 minutes (3 s) ran out in suite "
    assert message in run.log and "--budget-minutes" in run.log
    assert message in run.summary
    # Every file the step leaves is the error verdict: no results of an unfinished run.
    for name in ("verdict.json", "results.json", "base.json"):
        data = json.loads((run.out_dir / name).read_text(encoding="utf-8"))
        assert (data["verdict"], data["exit_code"]) == ("error", 4), name
    assert run.outputs["results-path"] == ""
    assert took < 60  # three seconds of budget, and the start-up of two interpreters


def test_a_budget_not_reached_leaves_the_verdict_alone(
        origin: tuple[Path, str], fake: FakeGitHub, tmp_path: Path) -> None:
    run = run_step(pull_request(origin, tmp_path, {}), fake, tmp_path, budget_minutes="30")
    assert run.returncode == 0, run.log
    assert run.outputs["verdict"] == "pass"


def test_a_bad_budget_input_is_an_error_naming_it(
        origin: tuple[Path, str], fake: FakeGitHub, tmp_path: Path) -> None:
    run = run_step(pull_request(origin, tmp_path, {}), fake, tmp_path, budget_minutes="999")
    assert run.returncode == 4
    assert any("budget-minutes" in a and "at most 360" in a for a in run.annotations("error"))
