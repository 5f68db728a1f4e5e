"""``membench-gate show CELL#ID`` on a real git repository: what was asked, the gold, what came
back, base vs head — from a results file or by running the item's suite."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from membench_gate.run.runner import ProgressReporter
from tests.support.cli import run_cli
from tests.support.gitrepos import commit, git, init
from tests.support.paths import REPO

PROJECT = REPO
CONFIG = """\
[adapter]
python = "membench_gate.reference:ReferenceMemory"
[adapter.options]
tau = 0.35
dims = {dims}
[suites.veto]
fixtures = ["builtin"]
[suites.abstention]
fixtures = ["builtin"]
"""


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A blessed base on main; the working tree weakens the memory (fewer dimensions)."""
    path = init(tmp_path_factory.mktemp("show") / "repo")
    commit(path, "config", {"membench.toml": CONFIG.format(dims=512)})
    assert run_cli("bless", cwd=path).returncode == 0
    commit(path, "baseline", {})
    (path / "membench.toml").write_text(CONFIG.format(dims=96), encoding="utf-8")
    done = run_cli("check", "--out", "results.json", cwd=path)
    assert done.returncode == 1, done.stdout + done.stderr
    return path


def test_show_a_newly_failing_item_by_running_its_suite(repo: Path) -> None:
    done = run_cli("show", "veto/files_known#scn-003", cwd=repo)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "veto/files_known#scn-003  (k = 5)"
    assert lines[1].startswith("asked:      Last week's bank file import created duplicate")
    assert "gold:       dec-002" in lines
    assert lines[lines.index("came back:") + 1].startswith("   1. dec-")
    assert lines[-2].startswith("head:       FAIL — gold dec-002: not in the top 5; came back "
                                "instead: ")
    sha = git(repo, "rev-parse", "HEAD")[:12]
    assert lines[-1] == f"base:       PASS (base {sha} (main))"
    # Only the item's suite ran: 29 scenarios in two conditions and 6 lifecycle ones.
    assert "veto: 64/64 adapter calls done" in done.stderr


def test_show_from_a_results_file_alone(repo: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "artifact"
    elsewhere.mkdir()
    (elsewhere / "r.json").write_bytes((repo / "results.json").read_bytes())
    done = run_cli("show", "abstention/default#probe-052", "--results", "r.json", cwd=elsewhere)
    assert done.returncode == 0 and done.stderr == ""
    assert "gold:       none (nothing stored answers it: abstaining is right)" in done.stdout
    assert done.stdout.rstrip().splitlines()[-1].startswith(
        "head:       FAIL — nothing stored answers it, yet the memory answered; came back: ")


def test_show_names_the_nearest_item_and_refuses_bad_targets(repo: Path) -> None:
    done = run_cli("show", "veto/files_known#scn-03", "--results", "results.json", cwd=repo)
    assert done.returncode == 4
    assert done.stderr.strip() == ("membench-gate: error: show: no item 'scn-03' in "
                                   "veto/files_known (did you mean 'scn-003'?)")
    done = run_cli("show", "scn-003", "--results", "results.json", cwd=repo)
    assert done.returncode == 4 and "SUITE/CONDITION#ID" in done.stderr
    done = run_cli("show", "push/know_to_ask#conv-01.t01", cwd=repo)
    assert done.returncode == 4 and "suite 'push' is not enabled" in done.stderr


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_a_holdout_item_is_named_as_such_and_shown_with_include_holdout(repo: Path) -> None:
    # probe-012 is held out of the built-in abstention fixtures: without the holdout it is in
    # neither the run nor the results, and the error says how to see it.
    done = run_cli("show", "abstention/default#probe-012", cwd=repo)
    assert done.returncode == 4
    assert done.stderr.strip().splitlines()[-1] == (
        "membench-gate: error: show: 'probe-012' is a holdout item of abstention (run it with "
        "--include-holdout)")
    done = run_cli("show", "abstention/default#probe-012", "--results", "results.json", cwd=repo)
    assert done.returncode == 4 and "these results were measured without it" in done.stderr
    done = run_cli("show", "abstention/default#probe-012", "--include-holdout", "--jobs", "2",
                   cwd=repo)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "abstention/default#probe-012  (k = 5)"
    assert lines[-2].startswith("head:       ")
    sha = git(repo, "rev-parse", "HEAD")[:12]
    assert lines[-1] == (f"base:       ABSENT (base {sha} (main): the item is not in its "
                         "measurement (blessed without the holdout items))")
    assert "worker 2: abstention" in done.stderr  # the run went to two adapter processes
    # An item that is in no fixture at all is still the plain error, with its suggestion.
    done = run_cli("show", "abstention/default#probe-999", cwd=repo)
    assert done.returncode == 4 and "no item 'probe-999'" in done.stderr


def test_progress_outside_a_terminal_is_a_line_per_suite_and_one_per_10s() -> None:
    out, clock = io.StringIO(), Clock()
    report = ProgressReporter(out, tty=False, clock=clock)
    for done in range(1, 471):
        clock.now += 0.1  # 47 s in all
        report("abstention", done, 470)
    report("veto", 58, 58)
    lines = out.getvalue().splitlines()
    assert lines[-2:] == ["abstention: 470/470 adapter calls done in 46.9s",
                          "veto: 58/58 adapter calls done in 0.0s"]
    periodic = lines[:-2]
    assert 3 <= len(periodic) <= 5
    assert periodic[0].startswith("abstention: ") and "adapter calls, about " in periodic[0]
    assert periodic[0].endswith("s left")


def test_progress_on_a_terminal_is_one_live_line() -> None:
    out = io.StringIO()
    report = ProgressReporter(out, tty=True, clock=Clock())
    for done in range(1, 4):
        report("push", done, 3)
    assert out.getvalue() == ("\r\x1b[Kpush: 1/3\r\x1b[Kpush: 2/3\r\x1b[Kpush: 3/3\n")
