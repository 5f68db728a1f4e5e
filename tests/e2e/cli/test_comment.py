"""``membench-gate comment`` through the real CLI against the loopback GitHub API: the normal PR mode
and the fork-safe ``--from-artifact`` (workflow_run) mode."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from membench_gate.gate.rules import decide
from membench_gate.model.results import Baseline, Justification, dumps_baseline, dumps_results
from tests.support.configs import veto_results
from tests.support.fakegithub import FakeGitHub

TOKEN = "ghs_comment_test_token_123"
REPO = "acme/memory"
HEAD_SHA = "c0ffee" + "0" * 34
SECRET_TEXT = "justification text that must never be posted from an artifact"


@pytest.fixture
def fake(fake_github: Callable[..., FakeGitHub]) -> FakeGitHub:
    server = fake_github(token=TOKEN, login="github-actions")
    server.add_pull(5, HEAD_SHA)
    return server


def write_artifact(folder: Path, failed: list[str]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    base = veto_results([]).to_baseline()
    head = veto_results(failed)
    committed = head.to_baseline(Justification(text=SECRET_TEXT, breaches=["x"]))
    verdict = decide(base, committed, head)
    (folder / "results.json").write_text(dumps_results(head))
    (folder / "verdict.json").write_text(json.dumps(verdict.model_dump(mode="json")))
    (folder / "base.json").write_text(dumps_baseline(Baseline.model_validate(
        json.loads(dumps_baseline(base)))))
    return folder


def run_comment(fake: FakeGitHub, tmp_path: Path, *args: str, event: dict | None = None,
                event_name: str = "pull_request", **extra_env: str) -> subprocess.CompletedProcess[str]:
    event_path = tmp_path / "event.json"
    event_path.write_text(json.dumps(event if event is not None else
                                     {"pull_request": {"number": 5}}))
    env = {k: v for k, v in os.environ.items() if not k.startswith("GITHUB_")}
    env.update({"GITHUB_TOKEN": TOKEN, "GITHUB_REPOSITORY": REPO, "GITHUB_API_URL": fake.api_url,
                "GITHUB_GRAPHQL_URL": fake.graphql_url, "GITHUB_EVENT_PATH": str(event_path),
                "GITHUB_EVENT_NAME": event_name, "NO_PROXY": "127.0.0.1,localhost", **extra_env})
    return subprocess.run([sys.executable, "-m", "membench_gate", "comment", *args], env=env,
                          capture_output=True, text=True, check=False)


def test_pr_mode_creates_then_updates_one_comment(fake: FakeGitHub, tmp_path: Path) -> None:
    art = write_artifact(tmp_path / "a", ["scn-1"])
    args = ("--verdict", str(art / "verdict.json"), "--results", str(art / "results.json"),
            "--base", str(art / "base.json"))
    first = run_comment(fake, tmp_path, *args)
    assert first.returncode == 0, first.stderr
    comments = fake.comments_on(5)
    assert len(comments) == 1 and "scn-1" in comments[0]["body"]
    assert "membench-gate:v1 key=default" in comments[0]["body"]
    art2 = write_artifact(tmp_path / "b", ["scn-1", "scn-2"])
    second = run_comment(fake, tmp_path, "--verdict", str(art2 / "verdict.json"), "--results",
                         str(art2 / "results.json"))
    assert second.returncode == 0, second.stderr
    after = fake.comments_on(5)
    assert [c["id"] for c in after] == [comments[0]["id"]] and "scn-2" in after[0]["body"]
    assert TOKEN not in first.stdout + first.stderr + second.stdout + second.stderr


def test_a_forbidden_token_is_a_warning_not_a_failure(fake: FakeGitHub, tmp_path: Path) -> None:
    fake.fail("POST", r".*/comments", 403, count=None,
              message="Resource not accessible by integration")
    art = write_artifact(tmp_path / "a", ["scn-1"])
    done = run_comment(fake, tmp_path, "--verdict", str(art / "verdict.json"), "--results",
                       str(art / "results.json"))
    assert done.returncode == 0
    assert "403" in done.stderr and "warning" in done.stderr
    assert fake.comments_on(5) == []


def test_from_artifact_finds_the_pr_by_head_sha_and_rerenders(fake: FakeGitHub,
                                                              tmp_path: Path) -> None:
    art = write_artifact(tmp_path / "art", ["scn-7"])
    event = {"workflow_run": {"conclusion": "failure", "head_sha": HEAD_SHA,
                              "event": "pull_request"}}
    done = run_comment(fake, tmp_path, "--from-artifact", str(art), event=event,
                       event_name="workflow_run")
    assert done.returncode == 0, done.stderr
    [posted] = fake.comments_on(5)
    assert "scn-7" in posted["body"] and "REGRESSION" in posted["body"]
    assert SECRET_TEXT not in posted["body"]  # free text from the artifact is never posted


def test_from_artifact_with_a_stale_head_posts_nothing(fake: FakeGitHub, tmp_path: Path) -> None:
    art = write_artifact(tmp_path / "art", ["scn-7"])
    event = {"workflow_run": {"conclusion": "failure", "head_sha": "d" * 40}}
    done = run_comment(fake, tmp_path, "--from-artifact", str(art), event=event,
                       event_name="workflow_run")
    assert done.returncode == 0 and "nothing posted" in done.stdout
    assert fake.comments_on(5) == []


def test_from_artifact_escapes_hostile_ids(fake: FakeGitHub, tmp_path: Path) -> None:
    art = write_artifact(tmp_path / "art", ["<img src=x onerror=alert(1)> @org/team #1"])
    event = {"workflow_run": {"conclusion": "failure", "head_sha": HEAD_SHA}}
    done = run_comment(fake, tmp_path, "--from-artifact", str(art), event=event,
                       event_name="workflow_run")
    assert done.returncode == 0, done.stderr
    [posted] = fake.comments_on(5)
    assert "&lt;img src=x onerror=alert(1)&gt;" in posted["body"]
    assert "<img" not in posted["body"] and "@org/team" not in posted["body"]


@pytest.mark.parametrize("tamper", ["control-char-id", "bad-json", "wrong-field"])
def test_from_artifact_rejects_a_tampered_artifact(fake: FakeGitHub, tmp_path: Path,
                                                   tamper: str) -> None:
    art = write_artifact(tmp_path / "art", ["scn-7"])
    if tamper == "control-char-id":
        data = json.loads((art / "results.json").read_text())
        data["cells"]["veto/files_known"]["failed"] = ["scn-1\n::error::x\x1b[2J"]
        (art / "results.json").write_text(json.dumps(data))
    elif tamper == "bad-json":
        (art / "verdict.json").write_text('{"verdict": ')
    else:
        data = json.loads((art / "verdict.json").read_text())
        data["verdict"] = "totally-fine"
        (art / "verdict.json").write_text(json.dumps(data))
    event = {"workflow_run": {"conclusion": "failure", "head_sha": HEAD_SHA}}
    done = run_comment(fake, tmp_path, "--from-artifact", str(art), event=event,
                       event_name="workflow_run")
    assert done.returncode == 4
    assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1
    assert fake.comments_on(5) == []
    assert not fake.requests("POST")


def test_off_mode_makes_no_request(fake: FakeGitHub, tmp_path: Path) -> None:
    art = write_artifact(tmp_path / "a", ["scn-1"])
    done = run_comment(fake, tmp_path, "--mode", "off", "--verdict", str(art / "verdict.json"),
                       "--results", str(art / "results.json"))
    assert done.returncode == 0 and fake.requests() == []


def test_mode_and_key_default_to_the_action_inputs_variables(fake: FakeGitHub, tmp_path: Path) -> None:
    art = write_artifact(tmp_path / "a", ["scn-1"])
    files = ("--verdict", str(art / "verdict.json"), "--results", str(art / "results.json"))
    off = run_comment(fake, tmp_path, *files, MEMBENCH_COMMENT="off")
    assert off.returncode == 0 and "comment: off" in off.stdout and fake.requests() == []
    keyed = run_comment(fake, tmp_path, *files, MEMBENCH_COMMENT_KEY="veto")
    assert keyed.returncode == 0, keyed.stderr
    [posted] = fake.comments_on(5)
    assert "membench-gate:v1 key=veto" in posted["body"]
    bad = run_comment(fake, tmp_path, *files, MEMBENCH_COMMENT="sometimes")
    assert bad.returncode == 4 and "input comment" in bad.stderr


def test_from_artifact_takes_the_pr_from_the_runs_head_repository(fake: FakeGitHub,
                                                                  tmp_path: Path) -> None:
    fork_sha = "f0f0" + "1" * 36
    fake.add_pull(6, fork_sha, head_repository="alice/memory")
    fake.add_pull(7, fork_sha, head_repository="mallory/memory")  # same commit, another fork
    art = write_artifact(tmp_path / "art", ["scn-7"])
    event = {"workflow_run": {"conclusion": "failure", "head_sha": fork_sha,
                              "pull_requests": [],
                              "head_repository": {"full_name": "alice/memory"}}}
    done = run_comment(fake, tmp_path, "--from-artifact", str(art), event=event,
                       event_name="workflow_run")
    assert done.returncode == 0, done.stderr
    assert len(fake.comments_on(6)) == 1 and fake.comments_on(7) == []


@pytest.mark.parametrize("field", ["how", "sha"])
def test_from_artifact_rejects_a_forged_base(fake: FakeGitHub, tmp_path: Path, field: str) -> None:
    art = write_artifact(tmp_path / "art", ["scn-7"])
    data = json.loads((art / "verdict.json").read_text())
    data["base"][field] = "x` @acme/security-team #1\n```\n<b>bold</b>"
    (art / "verdict.json").write_text(json.dumps(data))
    done = run_comment(fake, tmp_path, "--from-artifact", str(art),
                       event={"workflow_run": {"conclusion": "failure", "head_sha": HEAD_SHA}},
                       event_name="workflow_run")
    assert done.returncode == 4 and f"base.{field}" in done.stderr
    assert fake.comments_on(5) == []


def test_report_and_verdict_post_the_report(fake: FakeGitHub, tmp_path: Path) -> None:
    """The documented form, ``comment --report report.md --verdict verdict.json``."""
    art = write_artifact(tmp_path / "a", ["scn-1"])
    report = tmp_path / "report.md"
    report.write_text("## membench-gate: ❌ REGRESSION\n\nthe full scoreboard\n")
    done = run_comment(fake, tmp_path, "--report", str(report), "--verdict",
                       str(art / "verdict.json"))
    assert done.returncode == 0, done.stderr
    [posted] = fake.comments_on(5)
    assert "the full scoreboard" in posted["body"]


@pytest.mark.parametrize(("failed", "advisory", "conclusion", "posted"), [
    ([], None, "failure", False),  # a PASS rewritten over a run that failed
    ([], False, "cancelled", False),
    (["scn-7"], None, "success", False),  # a regression from a run that passed: not advisory
    (["scn-7"], True, "failure", False),  # advisory: a regression does not fail the run
    ([], None, "success", True),
    ([], True, "success", True),
    (["scn-7"], None, "failure", True),
    (["scn-7"], True, "success", True),
])
def test_from_artifact_posts_only_a_verdict_the_runs_conclusion_agrees_with(
        fake: FakeGitHub, tmp_path: Path, failed: list[str], advisory: bool | None,
        conclusion: str, posted: bool) -> None:
    art = write_artifact(tmp_path / "art", failed)
    if advisory is not None:  # a gate step writes step.json; an artifact without it: not advisory
        (art / "step.json").write_text(json.dumps({"advisory": advisory}))
    event = {"workflow_run": {"conclusion": conclusion, "head_sha": HEAD_SHA}}
    done = run_comment(fake, tmp_path, "--from-artifact", str(art), event=event,
                       event_name="workflow_run")
    if posted:
        assert done.returncode == 0, done.stderr
        [comment] = fake.comments_on(5)
        assert ("✅ PASS" if not failed else "REGRESSION") in comment["body"]
        return
    assert done.returncode == 4
    [line] = done.stderr.strip().splitlines()
    assert f"concluded {conclusion}" in line and "nothing posted" in line, line
    assert not fake.requests("POST") and not fake.requests("PATCH")


@pytest.mark.parametrize("step", ['{"advisory": "yes"}', '{"advisory": true, "verdict": "pass"}',
                                  "[]"])
def test_from_artifact_rejects_a_malformed_step_record(fake: FakeGitHub, tmp_path: Path,
                                                       step: str) -> None:
    art = write_artifact(tmp_path / "art", [])
    (art / "step.json").write_text(step)
    done = run_comment(fake, tmp_path, "--from-artifact", str(art),
                       event={"workflow_run": {"conclusion": "success", "head_sha": HEAD_SHA}},
                       event_name="workflow_run")
    assert done.returncode == 4 and "step.json" in done.stderr
    assert not fake.requests("POST")


def test_from_artifact_needs_the_runs_conclusion(fake: FakeGitHub, tmp_path: Path) -> None:
    art = write_artifact(tmp_path / "art", [])
    done = run_comment(fake, tmp_path, "--from-artifact", str(art),
                       event={"workflow_run": {"head_sha": HEAD_SHA}}, event_name="workflow_run")
    assert done.returncode == 4 and "conclusion" in done.stderr
    assert not fake.requests("POST")
