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
from membench_gate.model.results import dumps_results
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
