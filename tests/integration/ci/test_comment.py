"""comment in process: the sticky comment from data, from a report, and when there is nothing to do,
against the loopback fake GitHub."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from membench_gate.ci.comment import body_from_data, comment
from membench_gate.ci.settings import Context, Settings
from membench_gate.errors import GateError
from membench_gate.gate.rules import decide
from membench_gate.model.canonical import canonical_dumps
from membench_gate.model.results import dumps_baseline, dumps_results
from membench_gate.report.render import COMMENT_LIMIT
from tests.support.configs import veto_results
from tests.support.fakegithub import FakeGitHub

TOKEN = "ghs_unit_comment_token"


def settings_for(fake: FakeGitHub, tmp_path: Path, pr: int | None = 5) -> Settings:
    event = tmp_path / "event.json"
    event.write_text(json.dumps({"pull_request": {"number": pr}} if pr else {}))
    return Settings(context=Context(token=TOKEN, repository=fake.repository, api_url=fake.api_url,
                                    event_name="pull_request", event_path=event))


@pytest.fixture
def fake(fake_github: Callable[..., FakeGitHub]) -> FakeGitHub:
    server = fake_github(token=TOKEN)
    server.add_pull(5)
    return server


def test_a_verdict_with_its_results_is_rendered_and_posted_once(fake: FakeGitHub, tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]
                                                                  ) -> None:
    head = veto_results(["d1"])
    verdict = decide(veto_results([]).to_baseline(), None, head)
    (tmp_path / "v.json").write_text(json.dumps(verdict.model_dump(mode="json")))
    (tmp_path / "r.json").write_text(dumps_results(head))
    settings = settings_for(fake, tmp_path)
    for _ in range(2):
        assert comment(settings, verdict=tmp_path / "v.json", results=tmp_path / "r.json") == 0
    [posted] = fake.comments_on(5)
    marker, _, body = posted["body"].partition("\n")
    assert marker == "<!-- membench-gate:v1 key=default -->"
    assert body == body_from_data(verdict, head, None)
    assert "veto/files_known" in body
    out = capsys.readouterr().out
    assert out.count("comment: https://github.com/acme/memory/pull/5#issuecomment-") == 2


def test_a_long_report_is_cut_at_a_line_and_its_code_fence_closed(fake: FakeGitHub,
                                                                   tmp_path: Path) -> None:
    report = tmp_path / "report.md"
    report.write_text("## membench-gate: PASS\n```\n" + "a line of the report\n" * 5000)
    assert comment(settings_for(fake, tmp_path), report=report) == 0
    [posted] = fake.comments_on(5)
    assert len(posted["body"].encode("utf-8")) <= COMMENT_LIMIT  # the marker line included
    body = posted["body"].partition("\n")[2]
    assert body.count("```") == 2 and "cut to fit a comment" in body


@pytest.mark.parametrize("key", [None, "k" * 300])
def test_a_report_at_the_limit_is_cut_to_leave_room_for_the_marker(fake: FakeGitHub,
                                                                   tmp_path: Path,
                                                                   key: str | None) -> None:
    report = tmp_path / "report.md"
    line = "a line of the report, 40 bytes long....\n"
    report.write_text("## membench-gate: PASS\n" + line * ((COMMENT_LIMIT - 23) // len(line)))
    assert COMMENT_LIMIT - 40 < len(report.read_bytes()) <= COMMENT_LIMIT
    assert comment(settings_for(fake, tmp_path), report=report, key=key) == 0
    [posted] = fake.comments_on(5)
    assert len(posted["body"].encode("utf-8")) <= COMMENT_LIMIT
    assert posted["body"].startswith("<!-- membench-gate:v1 key=")
    assert "cut to fit a comment" in posted["body"]


def test_off_and_a_run_without_a_pull_request_post_nothing(fake: FakeGitHub, tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]
                                                           ) -> None:
    report = tmp_path / "report.md"
    report.write_text("## membench-gate: PASS\n")
    assert comment(settings_for(fake, tmp_path), report=report, mode="off") == 0
    assert comment(settings_for(fake, tmp_path, pr=None), report=report) == 0
    assert fake.comments_on(5) == []
    out = capsys.readouterr().out
    assert "comment: off" in out and "not a pull request run" in out


def test_nothing_to_post_is_an_error_naming_the_flags(fake: FakeGitHub, tmp_path: Path) -> None:
    with pytest.raises(GateError, match="--verdict"):
        comment(settings_for(fake, tmp_path))


# -- comment --from-artifact: the history block from history.json --------------------------------

HEAD_SHA = "c0ffee" + "0" * 34
SHAS = [f"{i:x}" * 12 for i in range(1, 5)]  # the blessed versions' short shas, oldest first
HOSTILE = '"] ``` <img src=x> @octocat #1 :rocket:'  # Mermaid, Markdown, mentions: 38 chars


def history_data(**change: object) -> dict:
    versions = [{"sha": sha, "date": f"2024-03-0{i + 2}T09:30:00+01:00",
                 "justification": HOSTILE if i == 2 else "",
                 "metrics": {"veto/files_known": {"veto_recall_at_k": 0.6 + 0.05 * i}}}
                for i, sha in enumerate(SHAS)]
    return {"versions": versions, **change}


def write_artifact(folder: Path, history: str | None) -> Path:
    """A fork run's artifact: recall 0.95 → 0.9 (BLESS REQUIRED: nothing committed), and
    ``history`` as its history.json (None: no such file)."""
    folder.mkdir()
    base = veto_results([]).to_baseline()
    base.cells["veto/files_known"].metrics["veto_recall_at_k"] = 0.95
    head = veto_results([])
    verdict = decide(base, None, head)
    (folder / "verdict.json").write_text(json.dumps(verdict.model_dump(mode="json")))
    (folder / "results.json").write_text(dumps_results(head))
    (folder / "base.json").write_text(dumps_baseline(base))
    if history is not None:
        (folder / "history.json").write_text(history)
    return folder


def from_artifact(fake: FakeGitHub, tmp_path: Path, history: str | None,
                  capsys: pytest.CaptureFixture[str]) -> tuple[str, str]:
    """``comment --from-artifact`` in a workflow_run job: (the posted body, the job's stderr)."""
    art = write_artifact(tmp_path / "art", history)
    event = tmp_path / "run.json"
    event.write_text(json.dumps({"workflow_run": {
        "conclusion": "failure", "head_sha": HEAD_SHA,
        "pull_requests": [{"number": 5, "head": {"sha": HEAD_SHA}}]}}))
    settings = Settings(context=Context(token=TOKEN, repository=fake.repository,
                                        api_url=fake.api_url, event_name="workflow_run",
                                        event_path=event))
    capsys.readouterr()
    assert comment(settings, from_artifact=art) == 0
    [posted] = fake.comments_on(5)
    return posted["body"], capsys.readouterr().err


def test_from_artifact_charts_the_history_json_and_drops_its_justifications(
        fake: FakeGitHub, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    body, err = from_artifact(fake, tmp_path, canonical_dumps(history_data()), capsys)
    assert err == ""
    assert "<details><summary>History: the metrics this pull request moves, over the last 4 " \
           "blessed baselines of the base branch</summary>" in body
    assert "x-axis [" + ", ".join(f'"{sha[:7]}"' for sha in [*SHAS]) + ', "this PR"]' in body
    assert "line [0.6, 0.65, 0.7, 0.75, 0.9]" in body
    # Free text from an artifact is not posted, however escaped: no justification table.
    assert "| commit | committed | justification |" not in body
    assert "octocat" not in body and "<img" not in body


@pytest.mark.parametrize(("history", "why"), [
    (None, "history.json: file not found"),
    # A justification past the excerpt's length, names that are no names, a sha with markup.
    (canonical_dumps(history_data(versions=[{**history_data()["versions"][0],
                                             "justification": HOSTILE * 2}])),
     "versions.0.justification: String should have at most 60 characters"),
    (canonical_dumps(history_data(versions=[{**history_data()["versions"][0], "metrics": {
        'veto/files_known"]\n```': {"veto_recall_at_k": 0.5}}}])), "versions.0.metrics"),
    (canonical_dumps(history_data(versions=[{**history_data()["versions"][0],
                                             "sha": '"] <b>x</b>'}])), "versions.0.sha"),
    # More versions than check writes, a huge list, and numbers that are no numbers.
    (canonical_dumps(history_data(versions=history_data()["versions"] * 3)),
     "versions: List should have at most 10 items"),
    ('{"versions": [' + ", ".join(["{}"] * 300_000) + "]}", "more than 1048576 bytes"),
    (canonical_dumps(history_data()).replace("0.65", "NaN"), "NaN is not a JSON number"),
    (canonical_dumps(history_data()).replace("0.65", "1e999"), "is not a finite number"),
    (canonical_dumps(history_data(extra=1)), "extra: Extra inputs are not permitted"),
    ("[1, 2", "invalid JSON"),
])
def test_from_artifact_leaves_out_a_forged_history_and_still_posts(
        fake: FakeGitHub, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        history: str | None, why: str) -> None:
    body, err = from_artifact(fake, tmp_path, history, capsys)
    assert "BLESS REQUIRED" in body and "veto/files_known" in body  # the comment stands
    assert "History:" not in body and "membench-gate history" not in body
    [line] = err.strip().splitlines()
    assert line.startswith(f"membench-gate: warning: {tmp_path / 'art' / 'history.json'}"), line
    assert why in line and line.endswith("the history block is left out"), line
