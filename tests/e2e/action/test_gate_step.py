"""The action's gate step, ``python -m membench_gate.action``, run the way GitHub's runner runs it.

The step gets the environment a composite action's step gets on a ``pull_request`` run (the
``MEMBENCH_*`` variables evaluated from action.yml's own ``env:`` and input defaults, fresh
``$GITHUB_OUTPUT`` / ``$GITHUB_STEP_SUMMARY`` files, ``RUNNER_TEMP``, the event payload) in a
depth-1 checkout of GitHub's merge commit ``refs/pull/5/merge``, and talks to the fake GitHub API
over real HTTP. Its log is read the way the runner reads it: workflow commands, stop-commands
blocks and all.
"""

from __future__ import annotations

import itertools
import json
import os
import re
import subprocess
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

import pytest

from membench_gate.model.canonical import canonical_dumps
from membench_gate.report.render import escape_md
from tests.support.cli import seed_repo
from tests.support.fakegithub import FakeGitHub
from tests.support.gaterepo import (
    EXITING_ADAPTER,
    NOISY_ADAPTER,
    PR_NUMBER,
    PROJECT,
    REPOSITORY,
    SILENT_ADAPTER,
    UNTERMINATED_ADAPTER,
    Checkout,
    action_spec,
    action_step,
    blessed_origin,
    config_text,
    parse_file_command,
    push_pr,
    resolved_inputs,
    step_env,
    workflow_commands,
)
from tests.support.gitrepos import bare_origin, clean_env, commit, git, pr_clone

TOKEN = "ghs_0123456789abcdefFAKEtokenFORtheGATEtests"
COMMENTS = rf"/repos/{REPOSITORY}/issues/{PR_NUMBER}/comments"
OUTPUTS = set(action_spec()["outputs"])


@dataclass
class StepRun:
    returncode: int
    stdout: str
    stderr: str
    outputs: dict[str, str]
    summary: str
    out_dir: Path
    output_file: str = ""  # $GITHUB_OUTPUT as the runner reads it after the step

    @property
    def log(self) -> str:
        return self.stdout + self.stderr

    def commands(self) -> list[str]:
        parsed = workflow_commands(self.stdout)
        assert not parsed.stopped, "workflow commands were still stopped when the step ended"
        return parsed.active

    def annotations(self, level: str) -> list[str]:
        return [c for c in self.commands() if re.match(rf"::{level}( |::)", c)]

    def verdict(self) -> dict:
        return json.loads((self.out_dir / "verdict.json").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def origin(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """A bare origin whose main is blessed (reference memory, tau 0.45) and ships the adapters
    the pull requests below switch to."""
    return blessed_origin(tmp_path_factory.mktemp("origin"), {
        "silent.py": SILENT_ADAPTER, "noisy.py": NOISY_ADAPTER, "exiting.py": EXITING_ADAPTER,
        "unterminated.py": UNTERMINATED_ADAPTER,
    })


_pushes = itertools.count(1)


def pull_request(origin: tuple[Path, str], tmp_path: Path, files: Mapping[str, str],
                 dev: Path | None = None) -> Checkout:
    """A push to PR 5 with ``files``, checked out as GitHub's merge commit (see push_pr)."""
    if dev is None:
        dev = pr_clone(origin[0], tmp_path / "dev", branch="feature")
    return push_pr(origin, dev, tmp_path, str(next(_pushes)), files)


@pytest.fixture
def fake(fake_github: Callable[..., FakeGitHub]) -> FakeGitHub:
    server = fake_github(token=TOKEN)
    server.add_pull(PR_NUMBER)
    return server


_steps = itertools.count(1)


def run_step(checkout: Checkout, fake: FakeGitHub, tmp_path: Path, merge_stderr: bool = False,
             python: str = sys.executable, **given: str) -> StepRun:
    """Run the gate step with action inputs ``given`` (underscores for dashes); ``python`` is
    the interpreter the step's ``python`` names."""
    inputs = resolved_inputs({k.replace("_", "-"): v for k, v in given.items()},
                             {"github.token": TOKEN})
    step = tmp_path / f"step-{next(_steps)}"
    runner_temp = tmp_path / "runner-temp"  # one per job, shared by the job's steps
    files = {name: step / f"{name.lower()}.txt" for name in
             ("GITHUB_OUTPUT", "GITHUB_STEP_SUMMARY", "GITHUB_ENV", "GITHUB_PATH", "GITHUB_STATE")}
    step.mkdir(parents=True)
    runner_temp.mkdir(exist_ok=True)
    for path in files.values():
        path.touch()
    env = clean_env({
        "CI": "true",
        "GITHUB_ACTIONS": "true",
        "RUNNER_OS": "Linux",
        "RUNNER_TEMP": str(runner_temp),
        "GITHUB_EVENT_NAME": "pull_request",
        "GITHUB_EVENT_PATH": str(checkout.event),
        "GITHUB_REF": f"refs/pull/{PR_NUMBER}/merge",
        "GITHUB_SHA": checkout.merge_sha,
        "GITHUB_HEAD_REF": "feature",
        "GITHUB_BASE_REF": "main",
        "GITHUB_REPOSITORY": REPOSITORY,
        "GITHUB_REPOSITORY_OWNER": REPOSITORY.split("/")[0],
        "GITHUB_WORKSPACE": str(checkout.path),
        "GITHUB_ACTION_PATH": str(PROJECT),
        "GITHUB_SERVER_URL": "https://github.com",
        "GITHUB_API_URL": fake.api_url,
        "GITHUB_GRAPHQL_URL": fake.graphql_url,
        "GITHUB_RUN_ID": "1",
        **{name: str(path) for name, path in files.items()},
        **step_env("gate", inputs, {"github.token": TOKEN}),
    })
    # The step's own `run:` line, run as the runner runs it, with `python` this interpreter.
    shim = tmp_path / "shim"
    shim.mkdir(exist_ok=True)
    (shim / "python").write_text(f'#!/bin/sh\nexec "{python}" "$@"\n')
    (shim / "python").chmod(0o755)
    env["PATH"] = os.pathsep.join([str(shim), env.get("PATH", os.defpath)])
    done = subprocess.run(
        ["bash", "--noprofile", "--norc", "-e", "-o", "pipefail", "-c", action_step("gate")["run"]],
        cwd=checkout.path, env=env, text=True,
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT if merge_stderr else subprocess.PIPE,
        check=False,
    )
    output_file = files["GITHUB_OUTPUT"].read_text(encoding="utf-8")
    result = StepRun(done.returncode, done.stdout, done.stderr or "",
                     parse_file_command(output_file),
                     files["GITHUB_STEP_SUMMARY"].read_text(encoding="utf-8"),
                     runner_temp / "membench-gate", output_file)
    assert_token_masked(result)
    return result


def assert_token_masked(run: StepRun) -> None:
    """The token is registered as a secret before anything else and never printed otherwise."""
    lines = run.log.splitlines()
    assert lines and lines[0] == f"::add-mask::{TOKEN}", lines[:2]
    leaks = [line for line in lines[1:] if TOKEN in line]
    assert not leaks, leaks
    assert TOKEN not in json.dumps(run.outputs) and TOKEN not in run.summary


def test_outputs_summary_and_one_sticky_comment_updated_in_place(
        origin: tuple[Path, str], fake: FakeGitHub, tmp_path: Path) -> None:
    first = pull_request(origin, tmp_path, {})
    run = run_step(first, fake, tmp_path)
    assert run.returncode == 0, run.log

    # Every output action.yml declares, each forwarded from the step of the same name.
    assert set(run.outputs) == OUTPUTS
    for name, item in action_spec()["outputs"].items():
        assert item["value"] == f"${{{{ steps.gate.outputs.{name} }}}}"
    assert run.outputs["verdict"] == "pass" and run.outputs["exit-code"] == "0"
    assert run.outputs["mode"] == "same-hash"
    assert run.outputs["base-sha"] == first.base_sha  # the merge commit's first parent
    report = Path(run.outputs["report-path"])
    assert report.is_file() and report.read_text().startswith("## membench-gate: ✅ PASS")
    results = json.loads(Path(run.outputs["results-path"]).read_text())
    assert results["cells"]
    assert run.summary == report.read_text()  # the full report is the job summary

    (comment,) = fake.comments_on(PR_NUMBER)
    assert run.outputs["comment-url"] == comment["html_url"]
    assert comment["user"]["login"] == "github-actions[bot]"
    assert "<!-- membench-gate:v1 key=default -->" in comment["body"]
    assert len(fake.requests("POST", COMMENTS)) == 1

    # A new push to the PR: the same comment is edited, no second one appears.
    second = pull_request(origin, tmp_path, {}, dev=tmp_path / "dev")
    assert second.merge_sha != first.merge_sha
    again = run_step(second, fake, tmp_path)
    assert again.returncode == 0, again.log
    (edited,) = fake.comments_on(PR_NUMBER)
    assert edited["id"] == comment["id"]
    assert edited["body"] != comment["body"]  # the head sha it reports moved on
    assert again.outputs["comment-url"] == run.outputs["comment-url"]
    assert len(fake.requests("POST", COMMENTS)) == 1
    assert [r.status for r in fake.requests("PATCH", r"/repos/.*/issues/comments/\d+")] == [200]

    # Re-running the same commit sends nothing: the identical body is not re-sent.
    third = run_step(second, fake, tmp_path)
    assert third.returncode == 0 and third.outputs["comment-url"] == run.outputs["comment-url"]
    assert len(fake.requests("PATCH", r"/repos/.*/issues/comments/\d+")) == 1
    assert len(fake.requests("POST", COMMENTS)) == 1
    assert fake.comments_on(PR_NUMBER)[0]["body"] == edited["body"]


def test_regression_fails_with_at_most_ten_error_annotations(
        origin: tuple[Path, str], fake: FakeGitHub, tmp_path: Path) -> None:
    checkout = pull_request(origin, tmp_path, {"membench.toml": config_text(adapter="silent:Silent")})
    run = run_step(checkout, fake, tmp_path)
    assert run.returncode == 1, run.log
    assert run.outputs["verdict"] == "regression" and run.outputs["exit-code"] == "1"
    assert len(run.verdict()["breaches"]) > 10  # so the cap is what keeps the count at ten
    errors = run.annotations("error")
    assert len(errors) == 10, errors
    assert all(e.startswith("::error title=membench-gate ") for e in errors)
    assert run.summary.startswith("## membench-gate: ❌ REGRESSION")
    (comment,) = fake.comments_on(PR_NUMBER)
    assert run.outputs["comment-url"] == comment["html_url"] and "REGRESSION" in comment["body"]


def test_fail_on_regression_false_is_advisory(
        origin: tuple[Path, str], fake: FakeGitHub, tmp_path: Path) -> None:
    checkout = pull_request(origin, tmp_path, {"membench.toml": config_text(tau=0.4)})
    run = run_step(checkout, fake, tmp_path, fail_on_regression="false")
    assert run.returncode == 0, run.log
    assert run.outputs["verdict"] == "regression" and run.outputs["exit-code"] == "1"
    assert run.annotations("error")  # still reported, only the job does not fail
    assert "advisory" in run.stdout


@pytest.mark.parametrize(("files", "verdict", "code", "status"), [
    ({}, "pass", 0, 403),
    ({"membench.toml": config_text(tau=0.4)}, "regression", 1, 403),
    ({"membench.toml": config_text(tau=0.4)}, "regression", 1, 404),
    ({}, "pass", 0, 422),
    ({"membench.toml": config_text(tau=0.4)}, "regression", 1, 500),
])
def test_a_refused_comment_is_a_warning_and_the_verdict_stands(
        origin: tuple[Path, str], fake: FakeGitHub, tmp_path: Path,
        files: dict[str, str], verdict: str, code: int, status: int) -> None:
    # E.g. a fork PR's read-only token (403); the error even echoes the token back.
    fault = fake.fail("POST", COMMENTS, status, count=None,
                      message=f"Resource not accessible by integration ({TOKEN})")
    run = run_step(pull_request(origin, tmp_path, files), fake, tmp_path)
    assert fault.hits == (3 if status >= 500 else 1)  # 5xx retried, never duplicated
    assert run.returncode == code, run.log
    assert (run.outputs["verdict"], run.outputs["exit-code"]) == (verdict, str(code))
    assert run.outputs["comment-url"] == ""
    (warning,) = run.annotations("warning")
    assert warning.startswith("::warning title=membench-gate comment::")
    assert str(status) in warning and "***" in warning
    assert fake.comments_on(PR_NUMBER) == []


def test_comment_off_never_calls_github(
        origin: tuple[Path, str], fake: FakeGitHub, tmp_path: Path) -> None:
    run = run_step(pull_request(origin, tmp_path, {}), fake, tmp_path, comment="off")
    assert run.returncode == 0, run.log
    assert run.outputs["verdict"] == "pass" and run.outputs["comment-url"] == ""
    assert fake.requests() == []


def test_comment_keys_keep_one_comment_each(
        origin: tuple[Path, str], fake: FakeGitHub, tmp_path: Path) -> None:
    checkout = pull_request(origin, tmp_path, {})
    urls = {run_step(checkout, fake, tmp_path, comment_key=key).outputs["comment-url"]
            for key in ("fast", "full", "fast")}
    comments = fake.comments_on(PR_NUMBER)
    assert len(comments) == 2 and urls == {c["html_url"] for c in comments}
    assert [c["body"].splitlines()[0] for c in comments] == [
        "<!-- membench-gate:v1 key=fast -->", "<!-- membench-gate:v1 key=full -->"]


def test_workflow_commands_printed_by_the_adapter_are_inert(
        origin: tuple[Path, str], fake: FakeGitHub, tmp_path: Path) -> None:
    checkout = pull_request(origin, tmp_path, {"membench.toml": config_text(adapter="noisy:Noisy")})
    # stdout and stderr in one pipe, in order: the runner acts on commands in both.
    run = run_step(checkout, fake, tmp_path, merge_stderr=True)
    parsed = workflow_commands(run.stdout)
    active, blocks = parsed.active, parsed.blocks
    assert not parsed.stopped
    assert not [c for c in active if "pwned" in c or "set-output" in c], active
    # The adapter runs in its own process: what it prints stays there (its stderr is kept for
    # error messages), so the bait never reaches the log, and its noise changes no verdict.
    for bait in ("::error::pwned", "::set-output name=x::y", "::warning::pwned-too"):
        assert bait not in run.stdout.splitlines(), bait
    assert run.outputs["verdict"] == "pass", run.log
    stops = [c for c in active if c.startswith("::stop-commands::")]
    tokens = [s.removeprefix("::stop-commands::") for s in stops]
    assert len(stops) == len(blocks) == 1  # the check (which runs the suites) in one block
    assert all(re.fullmatch(r"[0-9a-f]{32}", t) for t in tokens)
    assert "x" not in run.outputs and set(run.outputs) == OUTPUTS


def test_broken_config_is_an_error_with_outputs(
        origin: tuple[Path, str], fake: FakeGitHub, tmp_path: Path) -> None:
    checkout = pull_request(origin, tmp_path, {"membench.toml": "[adapter\npython = 1\n"})
    run = run_step(checkout, fake, tmp_path)
    assert run.returncode == 4, run.log
    assert set(run.outputs) == OUTPUTS
    assert (run.outputs["verdict"], run.outputs["exit-code"]) == ("error", "4")
    assert run.outputs["results-path"] == ""  # nothing ran
    assert "ERROR" in run.summary and "membench.toml" in run.summary  # the reason, in the summary
    assert run.annotations("error")
    assert "membench.toml" in run.stdout  # the one-line reason names the file, in the log
    # The sticky comment says ERROR too: a red check never sits under an earlier green scoreboard.
    [comment] = fake.comments_on(5)
    assert "ERROR" in comment["body"] and run.outputs["comment-url"] == comment["html_url"]


def test_an_adapter_exiting_with_a_verdict_code_is_still_an_error(
        origin: tuple[Path, str], fake: FakeGitHub, tmp_path: Path) -> None:
    checkout = pull_request(origin, tmp_path,
                            {"membench.toml": config_text(adapter="exiting:Exiting")})
    run = run_step(checkout, fake, tmp_path, fail_on_regression="false")
    assert run.outputs["verdict"] == "error"
    assert (run.returncode, run.outputs["exit-code"]) == (4, "4")


def test_an_unterminated_last_line_does_not_swallow_the_annotations(
        origin: tuple[Path, str], fake: FakeGitHub, tmp_path: Path) -> None:
    checkout = pull_request(origin, tmp_path,
                            {"membench.toml": config_text(adapter="unterminated:Unterminated")})
    run = run_step(checkout, fake, tmp_path)
    assert run.returncode == 1 and run.outputs["verdict"] == "regression"
    assert "adapter: done" not in run.stdout  # the adapter's output stays in its own process
    assert not workflow_commands(run.stdout).stopped
    assert len(run.annotations("error")) == 10


def test_an_invalid_input_is_an_error_with_outputs(
        origin: tuple[Path, str], fake: FakeGitHub, tmp_path: Path) -> None:
    run = run_step(pull_request(origin, tmp_path, {}), fake, tmp_path,
                   fail_on_regression="maybe")
    assert run.returncode == 4
    assert (run.outputs.get("verdict"), run.outputs.get("exit-code")) == ("error", "4")
    assert "ERROR" in run.summary
    assert any("fail-on-regression" in a for a in run.annotations("error"))


def test_selftest_input_adds_the_gate_sensitivity_and_never_changes_the_verdict(
        origin: tuple[Path, str], fake: FakeGitHub, tmp_path: Path) -> None:
    checkout = pull_request(origin, tmp_path, {})
    run = run_step(checkout, fake, tmp_path, selftest="true")
    assert run.returncode == 0, run.log
    assert run.outputs["verdict"] == "pass"
    report = json.loads((run.out_dir / "selftest.json").read_text(encoding="utf-8"))
    line = f"**Gate sensitivity {report['covered']}/{report['total']}**"
    (comment,) = fake.comments_on(PR_NUMBER)
    assert line in comment["body"] and line in run.summary
    assert "::warning" not in run.stdout or report["blind"]  # a warning only for blind metrics
    # Off by default: no selftest, no line.
    plain = run_step(pull_request(origin, tmp_path, {}, dev=tmp_path / "dev"), fake, tmp_path)
    assert plain.returncode == 0, plain.log
    assert "Gate sensitivity" not in fake.comments_on(PR_NUMBER)[0]["body"]
    assert not (plain.out_dir / "selftest.json").exists()


# A pull request's stand-in for the gate: were it imported, the step would end green at once.
SHADOW_GATE = "import sys\nsys.exit(0)\n"


@pytest.mark.parametrize("pythonpath", [None, ".", ""])
def test_a_membench_gate_folder_in_the_checkout_cannot_stand_in_for_the_gate(
        origin: tuple[Path, str], fake: FakeGitHub, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch, pythonpath: str | None) -> None:
    # The step and the check it starts run in the checkout; neither imports the gate from there,
    # not even when PYTHONPATH names the working directory ("." or an empty entry). (The gate's
    # config sits in bench/, so the adapter's host, which runs in the config's folder, is not
    # the one in question here.)
    if pythonpath is None:
        monkeypatch.delenv("PYTHONPATH", raising=False)
    else:
        monkeypatch.setenv("PYTHONPATH", pythonpath)
    checkout = pull_request(origin, tmp_path, {
        "bench/membench.toml": config_text(adapter="silent:Silent"),
        "bench/silent.py": SILENT_ADAPTER,
        "membench_gate/__init__.py": SHADOW_GATE,
    })
    run = run_step(checkout, fake, tmp_path, config="bench/membench.toml")
    assert run.returncode == 1, run.log  # the silent memory breaks an invariant
    assert run.outputs["verdict"] == "regression" and run.outputs["exit-code"] == "1"
    assert run.verdict()["verdict"] == "regression"
    assert run.summary.startswith("## membench-gate: ❌ REGRESSION")


HOSTILE = 'recall down <img src=x> @octocat | "] ``` #1'  # Markdown, Mermaid, mention


def test_the_comment_charts_what_the_pr_moves_over_the_blessed_baselines(
        fake: FakeGitHub, tmp_path: Path) -> None:
    # main holds four blessed baselines (the last one the real run's again); the checkout has
    # the base branch's history (actions/checkout with fetch-depth: 0).
    seed = seed_repo(tmp_path / "history" / "seed", {"membench.toml": config_text()})
    baseline = "baselines/main.json"
    real = json.loads((seed / baseline).read_text(encoding="utf-8"))
    shas = [git(seed, "log", "-1", "--format=%H", "--", baseline)]
    for recall, why in ((0.5, ""), (0.55, HOSTILE), (None, "back to the real run")):
        data = json.loads(json.dumps(real))
        if recall is not None:
            data["cells"]["veto/files_known"]["metrics"]["veto_recall_at_k"] = recall
        data["justification"] = {"text": why, "breaches": []} if why else None
        shas.append(commit(seed, f"bless {recall}", {baseline: canonical_dumps(data)}))
    checkout = pull_request((bare_origin(seed), shas[-1]), tmp_path,
                            {"membench.toml": config_text(tau=0.4)})
    git(checkout.path, "fetch", "-q", "--no-tags", "--unshallow", "origin")
    run = run_step(checkout, fake, tmp_path)
    assert run.returncode == 1, run.log

    (posted,) = fake.comments_on(PR_NUMBER)
    body = posted["body"]
    block = body[body.index("<details><summary>History:"):]
    block = block[:block.index("</details>")]
    assert "over the last 4 blessed baselines of the base branch" in block
    axis = "x-axis [" + ", ".join(f'"{sha[:7]}"' for sha in shas) + ', "this PR"]'
    assert block.count("```mermaid") >= 1 and block.count(axis) == block.count("```mermaid")
    # Why each was blessed, escaped as every untrusted text of the comment is.
    assert f"| `{shas[2][:7]}` | " in block and escape_md(HOSTILE) in block
    assert "<img" not in block and "@octocat" not in block
    assert block in run.summary  # the job summary shows the same block
    # The artifact's history.json: what the comment was rendered from.
    history = json.loads((run.out_dir / "history.json").read_text(encoding="utf-8"))
    assert [v["sha"] for v in history["versions"]] == [sha[:12] for sha in shas]
    assert history["versions"][1]["metrics"]["veto/files_known"]["veto_recall_at_k"] == 0.5
