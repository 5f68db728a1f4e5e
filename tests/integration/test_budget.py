"""The time budget of a command: a hanging adapter allowed a day per call ends as an ERROR naming
the budget, within it; the budget is never part of the measurement."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

import pytest

from membench_gate import budget
from membench_gate.config import load_config, parse_config
from membench_gate.errors import GateError
from membench_gate.run.measure import measurement_hash
from tests.support.cli import assert_error_verdict, run_cli, seed_repo
from tests.support.paths import REPO

# Each test runs the CLI until its time budget runs out.
pytestmark = pytest.mark.slow

# Answers initialize and every call but search, which it never answers.
HANGING = '''\
import time

from membench_gate.reference import ReferenceMemory


class Hanging(ReferenceMemory):
    def search(self, query):
        time.sleep(3600)
'''

# The reference memory for the selftest's first (unmutated) run; from its second run on (the
# mutants', in the same process or another), it never answers a search. The veto suite resets
# once per run.
HANGS_LATER = '''\
import time
from pathlib import Path

from membench_gate.reference import ReferenceMemory

RESETS = Path(__file__).with_name("resets")


class HangsLater(ReferenceMemory):
    def __init__(self, **options):
        super().__init__(**options)
        self.built = True  # (a reset while it is built is not a run's)

    def reset(self):
        if getattr(self, "built", False):
            with RESETS.open("a") as handle:
                handle.write("x")
        super().reset()

    def search(self, query):
        if len(RESETS.read_text()) > 1:
            time.sleep(3600)
        return super().search(query)
'''


def hanging_repo(path: Path, gate: str = "", timeout: int = 86400,
                 adapter: str = "hanging:Hanging") -> Path:
    return seed_repo(path, {
        "hanging.py": HANGING, "hangs_later.py": HANGS_LATER,
        "membench.toml": f'[adapter]\npython = "{adapter}"\ntimeout = {timeout}\n'
                         f'[suites.veto]\nfixtures = ["builtin"]\n[gate]\n{gate}',
    }, blessed=False)


def test_check_stops_a_hanging_adapter_at_the_configs_budget(tmp_path: Path) -> None:
    repo = hanging_repo(tmp_path / "repo", "budget_minutes = 0.05\n")
    outputs = {name: tmp_path / name for name in ("verdict.json", "results.json", "report.md")}
    for path in outputs.values():
        path.write_text("an earlier run's file\n")
    started = time.monotonic()
    done = run_cli("check", "--json", outputs["verdict.json"], "--out", outputs["results.json"],
                   "--report", outputs["report.md"], cwd=repo, timeout=120)
    took = time.monotonic() - started
    assert done.returncode == 4, done.stderr
    [line, *_] = done.stderr.splitlines()
    assert line.startswith("membench-gate: error: the check's time budget of 0.05 minutes (3 s) ran "
                           "out in suite veto, item "), line
    assert line.endswith("waiting for adapter search() ([gate] budget_minutes)"), line
    assert "Traceback" not in done.stderr
    assert_error_verdict(outputs["verdict.json"])
    assert_error_verdict(outputs["results.json"])
    # The base was resolved before the adapter ran: the error verdict still says what it is.
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=repo, capture_output=True, text=True,
                          check=True).stdout.strip()
    assert json.loads(outputs["verdict.json"].read_text())["base"]["sha"] == head
    assert "time budget" in outputs["report.md"].read_text()
    assert took < 30  # the budget is 3 s; the adapter would sleep an hour, a call may take a day


def test_the_flag_stands_over_the_config(tmp_path: Path) -> None:
    repo = hanging_repo(tmp_path / "repo", "budget_minutes = 300\n")
    done = run_cli("run", "--budget-minutes", "0.02", cwd=repo, timeout=120)
    assert done.returncode == 4
    assert "the run's time budget of 0.02 minutes (1.2 s) ran out" in done.stderr
    assert "(--budget-minutes / the action's budget-minutes input)" in done.stderr


def test_within_the_budget_nothing_changes(tmp_path: Path) -> None:
    # The control: the same call's own timeout still applies, and a budget not reached is silent.
    repo = hanging_repo(tmp_path / "repo", "budget_minutes = 30\n", timeout=1)
    done = run_cli("run", cwd=repo, timeout=120)
    assert done.returncode == 4 and "no answer within 1s ([adapter] timeout)" in done.stderr
    ok = hanging_repo(tmp_path / "ok", "budget_minutes = 30\n",
                      adapter="membench_gate.reference:ReferenceMemory")
    assert run_cli("run", "--budget-minutes", "30", cwd=ok, timeout=120).returncode == 0


@pytest.mark.parametrize(("timeout", "minutes", "code", "says"), [
    (86400, "0.1", 4, "the selftest's time budget of 0.1 minutes (6 s) ran out"),
    # Control: a call's own timeout is the mutant's failure, recorded in the report.
    (1, "5", 1, "no answer within 1s"),
])
def test_a_selftest_out_of_time_is_an_error_not_a_blind_metric(
        tmp_path: Path, timeout: int, minutes: str, code: int, says: str) -> None:
    repo = hanging_repo(tmp_path / "repo", timeout=timeout, adapter="hangs_later:HangsLater")
    report = tmp_path / "selftest.json"
    done = run_cli("selftest", "--budget-minutes", minutes, "--json", report, cwd=repo,
                   timeout=300)
    assert done.returncode == code, done.stdout + done.stderr
    if code == 4:
        assert says in done.stderr and not report.exists()
    else:
        errors = [m["error"] for m in json.loads(report.read_text())["mutants"].values()]
        assert errors and all(says in (e or "") for e in errors), errors


def test_doctor_out_of_time_is_an_error(tmp_path: Path) -> None:
    repo = hanging_repo(tmp_path / "repo")
    done = run_cli("doctor", "--budget-minutes", "0.03", cwd=repo, timeout=120)
    assert done.returncode == 4
    assert "the doctor's time budget of 0.03 minutes (1.8 s) ran out in doctor's checks, " in done.stderr
    assert "FAIL" not in done.stdout  # no check is blamed on the adapter for the lack of time


def test_the_budget_in_force(monkeypatch: pytest.MonkeyPatch) -> None:
    try:
        budget.start("check", None, {})
        assert budget.current() is None  # locally, none unless one is set
        budget.adopt(5)
        assert (budget.current().minutes, budget.current().source) == (5, "[gate] budget_minutes")
        for env in ({"CI": "true"}, {"GITHUB_ACTIONS": "1"}):
            budget.start("check", None, env)
            assert budget.current().minutes == budget.CI_DEFAULT_MINUTES == 60
        budget.start("check", None, {"CI": "false", "GITHUB_ACTIONS": ""})
        assert budget.current() is None
        budget.start("check", 2.5, {"CI": "true"})
        budget.adopt(5)  # the flag stands
        assert budget.current().minutes == 2.5
        left = budget.current().left()
        assert 2.5 * 60 - 5 < left <= 2.5 * 60
    finally:
        budget.stop()
    assert budget.current() is None


@pytest.mark.parametrize("text", ["0", "-1", "360.5", "nan", "inf", "soon", ""])
def test_a_budget_out_of_range_is_refused(tmp_path: Path, text: str) -> None:
    with pytest.raises(ValueError, match="more than 0 and at most 360"):
        budget.parse_minutes(text)
    value = f'"{text}"' if text in ("soon", "") else text
    with pytest.raises(GateError, match=r"gate\.budget_minutes must be a number of minutes"):
        parse_config(f"[gate]\nbudget_minutes = {value}\n[suites.veto]\n", tmp_path / "m.toml")
    done = run_cli("run", "--budget-minutes", text or "''", cwd=tmp_path)
    assert done.returncode == 4 and "--budget-minutes" in done.stderr


def test_the_budget_is_not_part_of_the_measurement(tmp_path: Path) -> None:
    # The dogfood gate with a budget added: the same record, the same fixtures_hash, so the
    # committed baseline (byte for byte) still stands for it.
    text = (REPO / "membench.toml").read_text(encoding="utf-8")
    assert "[gate]\n" in text
    with_budget = tmp_path / "membench.toml"
    with_budget.write_text(text.replace("[gate]\n", "[gate]\nbudget_minutes = 0.5\n"))
    plain, budgeted = load_config(REPO / "membench.toml"), load_config(with_budget)
    assert budgeted.budget_minutes == 0.5 and plain.budget_minutes is None
    assert budgeted.record() == plain.record()
    baseline = json.loads((REPO / "baselines/main.json").read_text(encoding="utf-8"))
    assert measurement_hash(budgeted) == measurement_hash(plain) == baseline["fixtures_hash"]
    assert baseline["config"] == budgeted.record()
