"""Nothing but a measured PASS exits 0, and a failed check leaves no stale file behind.

Through the CLI on real git repositories: closed pipes, exceptions from the memory under test,
numbers no file can hold, JSON nested past reason, dates out of range, results from another
commit, and the mode of the files the gate writes.
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.cli import cli_env
from tests.support.gitrepos import bare_origin, commit, git, pr_clone
from tests.support.memrepo import FACTS, TAU_REASON, check, config_text, gate, memory_origin, memory_repo


@pytest.fixture(scope="module")
def origin(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return memory_origin(tmp_path_factory.mktemp("origin"))


def regressed(work: Path) -> None:
    commit(work, "raise tau", {"membench.toml": config_text(tau=0.2)})


# -- the exit code is the verdict, whatever happens to stdout and stderr -----------------------

def test_exit_code_survives_a_closed_stdout_and_stderr(work: Path) -> None:
    regressed(work)
    out = work.parent / "v.json"
    for closed in ("stdout", "stderr", "both"):
        read_out, write_out = os.pipe()
        read_err, write_err = os.pipe()
        if closed in ("stdout", "both"):
            os.close(read_out)
        if closed in ("stderr", "both"):
            os.close(read_err)
        try:
            done = subprocess.run(
                [sys.executable, "-m", "membench_gate", "check", "--json", str(out)], cwd=work,
                env=cli_env(), stdout=write_out, stderr=write_err, check=False, timeout=120)
        finally:
            os.close(write_out)
            os.close(write_err)
            for fd in (read_out, read_err):
                with contextlib.suppress(OSError):
                    os.close(fd)
        assert done.returncode == 1, closed  # never 0, never 120 from a failed flush
        assert json.loads(out.read_text())["verdict"] == "regression"


@pytest.mark.parametrize("redirect", ["2>&-", ">&-", ">&- 2>&-", "<&- >&- 2>&-"])
@pytest.mark.parametrize("regress", [False, True])
def test_exit_code_survives_closed_descriptors(work: Path, redirect: str, regress: bool) -> None:
    # Not a pipe whose reader left: the descriptor itself is closed, so Python starts with
    # sys.stderr (or sys.stdout) None. Progress lines are written while the suites run.
    if regress:
        regressed(work)
    out = work.parent / "v.json"
    done = subprocess.run(
        ["bash", "-c", f'"{sys.executable}" -m membench_gate check --json "{out}" {redirect}'],
        cwd=work, env=cli_env(), capture_output=True, check=False, timeout=120)
    expected = ("regression", 1) if regress else ("pass", 0)
    assert (json.loads(out.read_text())["verdict"], done.returncode) == expected, redirect


def test_exit_code_survives_head(work: Path) -> None:
    regressed(work)
    done = subprocess.run(
        ["bash", "-c", f'"{sys.executable}" -m membench_gate check | head -1; '
                       'echo "status=${PIPESTATUS[0]}"'],
        cwd=work, env=cli_env(), capture_output=True, text=True, check=False, timeout=120)
    assert done.stdout.strip().splitlines()[-1] == "status=1", done.stdout + done.stderr
    assert "Traceback" not in done.stderr and "BrokenPipe" not in done.stderr


# -- any failure is exit 4 with one line, and every output replaced ----------------------------

EXITING = '''\
import sys

from membench_gate.reference import ReferenceMemory


class Exiting(ReferenceMemory):
    def search(self, query):
        {action}
'''


@pytest.mark.parametrize(("action", "needle"), [
    ("sys.exit(0)", "search"),
    ("raise SystemExit(2)", "search"),
    ("raise type('Escape', (BaseException,), {})('out')", "search"),
    ("raise KeyboardInterrupt", ""),
])
def test_an_escaping_adapter_is_an_error_with_outputs_replaced(
        work: Path, action: str, needle: str) -> None:
    """Issue seen: sys.exit(0) inside search exited 0 with no verdict; a custom BaseException
    printed a traceback. Whatever boundary runs the adapter, the gate's answer is ERROR."""
    config = config_text().replace("[adapter.options]",
                                   '[adapter]\npython = "exiting:Exiting"\n[adapter.options]')
    commit(work, "an adapter that escapes", {"exiting.py": EXITING.format(action=action),
                                             "membench.toml": config})
    result = check(work)
    result.assert_error(needle)


@pytest.mark.parametrize(("extra", "needles"), [
    ("lambdas = [1, 1e30]", ("lambdas",)),
    ("lambdas = [1, nan]", ("lambdas",)),
    ("lambdas = [1, inf]", ("lambdas",)),
    ("k = 0", ("suites.abstention.k",)),
    ("k = 100000000000", ("suites.abstention.k",)),
    ("shuffle_seed = -1", ("shuffle_seed",)),
    ('[floors]\n"abstention/default:net_at_1" = 1e30', ("floors", "net_at_1")),
    ('[floors]\n"abstention/default:net_at_1" = nan', ("floors", "net_at_1")),
    ('[floors]\n"abstention/default:net_at_1" = -inf', ("floors", "net_at_1")),
    ('[adapter]\ntimeout = nan', ("adapter.timeout",)),
    ('[adapter]\ntimeout = inf', ("adapter.timeout",)),
])
def test_config_numbers_are_finite_and_in_range(work: Path, extra: str,
                                                needles: tuple[str, ...]) -> None:
    text = config_text(extra=extra)
    if extra.startswith("[adapter]"):
        text = extra + "\n" + config_text()
    elif extra.startswith("k = "):
        text = config_text().replace("k = 1", extra)
    commit(work, "bad number", {"membench.toml": text})
    check(work).assert_error("membench.toml", *needles)


def test_adapter_options_that_cannot_be_recorded_are_named(work: Path) -> None:
    commit(work, "nan option", {"membench.toml": config_text().replace("tau = 0.3",
                                                                       "tau = 0.3\ndims = nan")})
    check(work).assert_error("membench.toml", "adapter.options.dims")


def _nested(depth: int) -> str:
    return "[" * depth + "]" * depth


def test_huge_metric_in_the_committed_baseline_is_named(work: Path) -> None:
    path = work / "baselines/main.json"
    data = json.loads(path.read_text())
    data["cells"]["abstention/default"]["metrics"]["net_at_1"] = 1e300
    commit(work, "huge", {"baselines/main.json": json.dumps(data)})
    check(work).assert_error("baselines/main.json",
                             "cells.abstention/default.metrics.net_at_1")


def test_huge_metric_in_the_base_baseline_is_named(tmp_path: Path) -> None:
    seed = memory_repo(tmp_path / "seed")
    data = json.loads((seed / "baselines/main.json").read_text())
    data["cells"]["abstention/default"]["metrics"]["net_at_2"] = -1e300
    commit(seed, "huge at base", {"baselines/main.json": json.dumps(data)})
    work = pr_clone(bare_origin(seed), tmp_path / "work")
    commit(work, "repair", {"baselines/main.json": json.dumps(
        {**data, "cells": {**data["cells"], "abstention/default": {
            **data["cells"]["abstention/default"],
            "metrics": {**data["cells"]["abstention/default"]["metrics"], "net_at_2": 0.5}}}})})
    check(work).assert_error("baselines/main.json at base", "net_at_2")


@pytest.mark.parametrize("where", ["fixture", "baseline", "results", "event"])
def test_deeply_nested_json_is_named(work: Path, tmp_path: Path, where: str) -> None:
    deep = _nested(100_000)
    args: list[str] = []
    env = None
    if where == "fixture":
        commit(work, "deep", {"fx/facts.json": deep})
        needle = "fx/facts.json"
    elif where == "baseline":
        commit(work, "deep", {"baselines/main.json": '{"schema_version": 1, "cells": '
                                                     + deep + "}"})
        needle = "baselines/main.json"
    elif where == "results":
        (tmp_path / "r.json").write_text('{"schema_version": 1, "items": ' + deep + "}")
        args = ["--results", str(tmp_path / "r.json")]
        needle = "r.json"
    else:
        (tmp_path / "event.json").write_text('{"pull_request": ' + deep + "}")
        env = {"GITHUB_EVENT_NAME": "pull_request", "GITHUB_EVENT_PATH": str(tmp_path /
                                                                             "event.json")}
        needle = "event.json"
    result = check(work, *args, env=env)
    result.assert_error(needle, "nested")


def test_a_date_before_year_one_in_utc_is_named(tmp_path: Path) -> None:
    """Issue seen: 0001-01-01T00:00:00+14:00 raised OverflowError with no file named."""
    repo = memory_repo(tmp_path / "repo")
    (repo / "fx/veto").mkdir()
    decisions = [{"id": "d1", "decision": "Use Postgres for billing", "rationale": "ACID",
                  "rejected": [{"option": "Mongo", "reason": "no transactions"}],
                  "files": ["billing/db.py"], "created_at": "0001-01-01T00:00:00+14:00"}]
    scenarios = {"as_of": "2026-01-01", "scenarios": [
        {"id": "s1", "task": "Move billing to Mongo", "files": ["billing/db.py"],
         "veto_decision_id": "d1", "trap": "direct", "rejected_option": "Mongo"}]}
    (repo / "fx/veto/decisions.json").write_text(json.dumps(decisions))
    (repo / "fx/veto/scenarios.json").write_text(json.dumps(scenarios))
    (repo / "membench.toml").write_text(config_text() + '[suites.veto]\nfixtures = ["fx/veto"]\n')
    check(repo).assert_error("fx/veto/decisions.json", "created_at", "out of the range")


SCALED = '''\
from membench_gate import Answer, Hit
from membench_gate.reference import ReferenceMemory


class Scaled(ReferenceMemory):
    def search(self, query):
        answer = super().search(query)
        return Answer(hits=[Hit(h.id, h.score * 1e30) for h in answer.hits],
                      abstain=answer.abstain)
'''


def test_scores_no_file_can_hold_are_named(work: Path) -> None:
    config = config_text().replace("[adapter.options]",
                                   '[adapter]\npython = "scaled:Scaled"\n[adapter.options]')
    commit(work, "scores x 1e30", {"scaled.py": SCALED, "membench.toml": config})
    check(work).assert_error("score")


def test_a_bad_results_number_is_named(work: Path, tmp_path: Path) -> None:
    assert gate(work, "run", "--out", str(tmp_path / "r.json")).returncode == 0
    data = json.loads((tmp_path / "r.json").read_text())
    data["items"]["abstention/default"]["p1"]["score"] = 1e300
    (tmp_path / "r.json").write_text(json.dumps(data))
    check(work, "--results", str(tmp_path / "r.json")).assert_error(
        "r.json", "items.abstention/default.p1.score")


def test_nan_in_a_results_file_is_named(work: Path, tmp_path: Path) -> None:
    assert gate(work, "run", "--out", str(tmp_path / "r.json")).returncode == 0
    text = (tmp_path / "r.json").read_text().replace('"net_at_1": 0.5', '"net_at_1": NaN')
    (tmp_path / "r.json").write_text(text)
    check(work, "--results", str(tmp_path / "r.json")).assert_error("r.json", "NaN")


# -- results from another commit are not this commit's measurement -----------------------------

def test_results_in_ci_must_come_from_the_checked_out_commit(work: Path, tmp_path: Path) -> None:
    """Issue seen: --results was accepted from another commit when the hash matched."""
    results = tmp_path / "r.json"
    assert gate(work, "run", "--out", str(results)).returncode == 0
    same = check(work, "--results", str(results), ci=True)
    assert same.code == 0, same.stderr
    commit(work, "a later commit", {"README.md": "changed\n"})
    later = check(work, "--results", str(results), ci=True)
    assert later.code == 3 and later.verdict["verdict"] == "inconclusive"
    assert "receipt.git_sha" in later.verdict["notes"][0]
    assert git(work, "rev-parse", "HEAD")[:12] in later.verdict["notes"][0]
    assert check(work, "--results", str(results)).code == 0  # locally it is the developer's call
    data = json.loads(results.read_text())
    del data["receipt"]["git_sha"]
    results.write_text(json.dumps(data))
    none = check(work, "--results", str(results), ci=True)
    assert none.code == 3 and "no receipt.git_sha" in none.verdict["notes"][0]


# -- files keep the usual mode -------------------------------------------------------------------

def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_bless_keeps_the_mode_and_new_files_follow_the_umask(work: Path) -> None:
    """Issue seen: bless turned baselines/main.json from 0644 to 0600 (mkstemp's mode)."""
    baseline = work / "baselines/main.json"
    baseline.chmod(0o644)
    commit(work, "raise tau", {"membench.toml": config_text(tau=0.2)})

    def run(*args: str, umask: int) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "membench_gate", *args], cwd=work,
                              env=cli_env(), capture_output=True, text=True, check=False,
                              preexec_fn=lambda: os.umask(umask), timeout=120)

    done = run("bless", "--justification", TAU_REASON, umask=0o022)
    assert done.returncode == 0, done.stderr
    assert _mode(baseline) == 0o644
    assert "p2" in json.loads(baseline.read_text())["justification"]["text"]
    run("check", "--json", "v.json", "--report", "r.md", umask=0o022)
    assert _mode(work / "v.json") == _mode(work / "r.md") == 0o644
    run("check", "--json", "v2.json", umask=0o027)
    assert _mode(work / "v2.json") == 0o640
    assert not list(work.glob(".*.tmp")) and not list(work.glob("baselines/.*.tmp"))


def test_corpus_digests_cover_distractors(work: Path) -> None:
    data = json.loads((work / "baselines/main.json").read_text())
    assert sorted(data["corpus"]["abstention"]) == [f["id"] for f in FACTS]
