"""The sticky comment and the PR lookup, over real HTTP against tests/fakegithub.py."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.error import HTTPError
from urllib.request import Request, urlopen

import pytest

from membench_gate.ci import github as gh
from membench_gate.errors import GateError
from tests.support.fakegithub import FakeGitHub
from tests.support.paths import REPO as REPO_ROOT
from tests.support.paths import SUPPORT

TOKEN = "ghs_s3cr3tInstallationToken0123456789"
REPO = "acme/memory"
PR = 5
COMMENTS = rf"/repos/{REPO}/issues/{PR}/comments"
ONE_COMMENT = rf"/repos/{REPO}/issues/comments/\d+"


@pytest.fixture
def fake(fake_github: Callable[..., FakeGitHub]) -> FakeGitHub:
    server = fake_github(token=TOKEN, login="github-actions")
    server.add_pull(PR)
    return server


def post(fake: FakeGitHub, body: str = "scoreboard v1", **overrides: Any) -> gh.CommentOutcome:
    kwargs: dict[str, Any] = {
        "body": body,
        "key": "default",
        "mode": "update",
        "token": TOKEN,
        "repository": REPO,
        "pr_number": PR,
        "api_url": fake.api_url,
        "backoff": 0,
    }
    kwargs.update(overrides)
    return gh.post_sticky_comment(**kwargs)


def ours(fake: FakeGitHub, key: str = "default") -> list[dict[str, Any]]:
    return [
        c
        for c in fake.comments_on(PR)
        if gh.marker(key) in c["body"] and c["user"]["login"] == "github-actions[bot]"
    ]


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


# -- marker and urls ----------------------------------------------------------------------


def test_marker_is_a_hidden_comment_with_a_sanitised_key() -> None:
    assert gh.marker("default") == "<!-- membench-gate:v1 key=default -->"
    assert gh.marker("veto.main_2") == "<!-- membench-gate:v1 key=veto.main_2 -->"
    assert gh.marker("my gate/x") == "<!-- membench-gate:v1 key=my-gate-x -->"
    assert gh.marker("") == gh.marker("  ") == gh.marker("default")
    assert gh.marker("a --> b").count("-->") == 1
    assert gh.marker("x").startswith(gh.MARKER_PREFIX)


@pytest.mark.parametrize(
    ("api_url", "expected"),
    [
        ("https://api.github.com", "https://api.github.com/graphql"),
        ("https://ghe.example.com/api/v3", "https://ghe.example.com/api/graphql"),
        ("https://ghe.example.com/api/v3/", "https://ghe.example.com/api/graphql"),
    ],
)
def test_graphql_url_is_derived_from_the_api_url(api_url: str, expected: str) -> None:
    session = gh._Session(TOKEN, api_url, retries=1, backoff=0)
    assert session.github.requester.graphql_url == expected
    session.close()


# -- update mode --------------------------------------------------------------------------


def test_first_run_creates_exactly_one_comment(fake: FakeGitHub) -> None:
    outcome = post(fake, "## Scoreboard\n\nall good")

    comments = fake.comments_on(PR)
    assert len(comments) == 1
    comment = comments[0]
    assert outcome == gh.CommentOutcome("created", comment["html_url"], None)
    assert comment["body"] == gh.marker("default") + "\n## Scoreboard\n\nall good"
    assert comment["user"]["login"] == "github-actions[bot]"
    # The login came from GraphQL: REST /user answers 403 to an installation token.
    assert fake.requests("GET", "/user") == []
    assert len(fake.requests("POST", "/graphql")) >= 1


def test_second_run_updates_the_same_comment(fake: FakeGitHub) -> None:
    first = post(fake, "v1")
    (before,) = fake.comments_on(PR)

    second = post(fake, "v2")

    (after,) = fake.comments_on(PR)
    assert second.action == "updated"
    assert second.url == first.url == after["html_url"]
    assert after["id"] == before["id"]
    assert after["body"].endswith("\nv2")
    assert len(fake.requests("PATCH", ONE_COMMENT)) == 1
    assert len(fake.requests("POST", COMMENTS)) == 1


def test_identical_body_is_not_resent(fake: FakeGitHub) -> None:
    post(fake, "same")
    fake.clear_log()

    outcome = post(fake, "same")

    assert outcome.action == "unchanged"
    assert outcome.url == fake.comments_on(PR)[0]["html_url"]
    assert fake.requests("PATCH") == []
    assert fake.requests("POST", COMMENTS) == []
    assert fake.requests("DELETE") == []


def test_marker_planted_by_another_user_is_left_alone(fake: FakeGitHub) -> None:
    planted = fake.add_comment(PR, gh.marker("default") + "\nI am the scoreboard", login="mallory")

    outcome = post(fake, "real")

    assert outcome.action == "created"
    comments = {c["id"]: c for c in fake.comments_on(PR)}
    assert len(comments) == 2
    assert comments[planted["id"]]["body"] == planted["body"]
    assert len(ours(fake)) == 1
    assert fake.requests("PATCH") == []


def test_our_comment_after_150_others_is_found_on_page_two(fake: FakeGitHub) -> None:
    for i in range(150):
        fake.add_comment(PR, f"comment {i}", login=f"user{i % 7}")
    mine = fake.add_comment(PR, gh.marker("default") + "\nold")

    outcome = post(fake, "new")

    assert outcome.action == "updated"
    assert len(fake.comments_on(PR)) == 151
    (comment,) = ours(fake)
    assert comment["id"] == mine["id"]
    assert comment["body"].endswith("\nnew")
    pages = [r.query.get("page", "1") for r in fake.requests("GET", COMMENTS)]
    assert pages == ["1", "2"]
    assert {r.query.get("per_page") for r in fake.requests("GET", COMMENTS)} == {"100"}


def test_minimized_comment_is_not_reused(fake: FakeGitHub) -> None:
    hidden = fake.add_comment(PR, gh.marker("default") + "\nold", minimized=True)

    outcome = post(fake, "new")

    assert outcome.action == "created"
    comments = {c["id"]: c for c in fake.comments_on(PR)}
    assert len(comments) == 2
    assert comments[hidden["id"]]["body"] == hidden["body"]
    assert fake.requests("PATCH") == []
    assert fake.requests("DELETE") == []


def test_visible_comment_is_preferred_over_a_minimized_one(fake: FakeGitHub) -> None:
    fake.add_comment(PR, gh.marker("default") + "\nhidden", minimized=True)
    visible = fake.add_comment(PR, gh.marker("default") + "\nvisible")

    outcome = post(fake, "new")

    assert outcome.action == "updated"
    assert [r.path for r in fake.requests("PATCH")] == [
        f"/repos/{REPO}/issues/comments/{visible['id']}"
    ]


def test_personal_token_without_bot_suffix_is_recognised() -> None:
    with FakeGitHub(token=TOKEN, login="octocat", bot=False) as fake:
        fake.add_pull(PR)
        assert post(fake, "v1").action == "created"
        assert post(fake, "v2").action == "updated"
        assert len(fake.comments_on(PR)) == 1


def test_two_comment_keys_coexist(fake: FakeGitHub) -> None:
    assert post(fake, "gate A", key="veto").action == "created"
    assert post(fake, "gate B", key="push").action == "created"
    assert post(fake, "gate A v2", key="veto").action == "updated"

    assert len(fake.comments_on(PR)) == 2
    assert ours(fake, "veto")[0]["body"].endswith("gate A v2")
    assert ours(fake, "push")[0]["body"].endswith("gate B")


def test_stray_markers_in_the_body_are_removed(fake: FakeGitHub) -> None:
    post(fake, "text " + gh.marker("other") + " more", key="mine")

    (comment,) = fake.comments_on(PR)
    assert gh.marker("other") not in comment["body"]
    assert comment["body"].count(gh.MARKER_PREFIX) == 1


def test_a_marker_rebuilt_by_stripping_is_removed_too(fake: FakeGitHub) -> None:
    # Removing the inner marker once joins the pieces around it into another key's marker.
    nested = "<!-- membench-" + gh.marker("inner") + "gate:v1 key=other -->"
    post(fake, f"text {nested} more", key="mine")

    (comment,) = fake.comments_on(PR)
    assert comment["body"].count(gh.MARKER_PREFIX) == 1
    assert comment["body"].startswith(gh.marker("mine") + "\n")


def test_a_marker_below_the_first_line_does_not_make_a_comment_ours(fake: FakeGitHub) -> None:
    # Another gate's comment quoting this key's marker further down is not this key's comment.
    theirs = fake.add_comment(PR, gh.marker("veto") + "\nquoted: " + gh.marker("default"),
                              login="github-actions[bot]")

    assert post(fake, "v1").action == "created"
    assert fake.comments_on(PR)[0]["body"] == theirs["body"]
    assert len(fake.comments_on(PR)) == 2


def test_comment_deleted_before_the_edit_is_posted_again(fake: FakeGitHub) -> None:
    post(fake, "v1")
    fake.fail("PATCH", ONE_COMMENT, 404, message="Not Found")

    outcome = post(fake, "v2")

    assert outcome.action == "created"
    assert len(fake.requests("POST", COMMENTS)) == 2


# -- recreate and off ---------------------------------------------------------------------


def test_recreate_deletes_the_old_comment_and_posts_a_new_one(fake: FakeGitHub) -> None:
    post(fake, "v1")
    (old,) = fake.comments_on(PR)
    fake.add_comment(PR, "a human comment", login="alice")

    outcome = post(fake, "v2", mode="recreate")

    assert outcome.action == "recreated"
    assert outcome.warning is None
    (new,) = ours(fake)
    assert new["id"] != old["id"]
    assert new["body"].endswith("\nv2")
    assert outcome.url == new["html_url"]
    assert [r.path for r in fake.requests("DELETE")] == [
        f"/repos/{REPO}/issues/comments/{old['id']}"
    ]
    assert len(fake.comments_on(PR)) == 2  # the human's comment stays


def test_recreate_without_an_old_comment_creates(fake: FakeGitHub) -> None:
    assert post(fake, "v1", mode="recreate").action == "created"
    assert len(fake.comments_on(PR)) == 1


def test_recreate_reports_an_old_comment_it_could_not_delete(fake: FakeGitHub) -> None:
    post(fake, "v1")
    fake.fail("DELETE", ONE_COMMENT, 403, message="Resource not accessible by integration")

    outcome = post(fake, "v2", mode="recreate")

    assert outcome.action == "recreated"
    assert outcome.warning is not None
    assert "403" in outcome.warning and "DELETE" in outcome.warning
    assert len(ours(fake)) == 2


def test_off_makes_no_request(fake: FakeGitHub) -> None:
    outcome = post(fake, "v1", mode="off")

    assert outcome == gh.CommentOutcome("skipped", None, None)
    assert fake.log == []


def test_off_needs_no_token_or_server() -> None:
    outcome = gh.post_sticky_comment(
        body="x",
        key="k",
        mode="OFF",
        token="",
        repository="",
        pr_number=0,
        api_url=f"http://127.0.0.1:{closed_port()}",
    )
    assert outcome.action == "skipped"


# -- failures never raise -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("method", "path", "status", "message"),
    [
        ("GET", COMMENTS, 403, "Resource not accessible by integration"),
        ("POST", COMMENTS, 403, "Resource not accessible by integration"),
        ("GET", COMMENTS, 404, "Not Found"),
        ("POST", COMMENTS, 404, "Not Found"),
        ("POST", COMMENTS, 422, "Validation Failed"),
        ("POST", "/graphql", 401, "Bad credentials"),
    ],
)
def test_client_errors_become_a_one_line_warning(
    fake: FakeGitHub, method: str, path: str, status: int, message: str
) -> None:
    fake.fail(method, path, status, count=None, message=message)

    outcome = post(fake)

    assert outcome.action == "failed"
    assert outcome.url is None
    assert outcome.warning is not None
    assert "\n" not in outcome.warning
    shown_path = path.replace(r"\d+", "")
    assert (
        outcome.warning
        == f"could not comment on PR #{PR}: {status} {message} ({method} {shown_path})"
    )
    # 4xx is an answer, not an outage: no retry.
    assert len(fake.requests(method, path)) == 1
    assert fake.comments_on(PR) == []


def test_fork_token_403_on_create_keeps_a_readable_warning(fake: FakeGitHub) -> None:
    fake.fail("POST", COMMENTS, 403, count=None, message="Resource not accessible by integration")

    outcome = post(fake)

    assert outcome.warning == (
        f"could not comment on PR #{PR}: 403 Resource not accessible by integration "
        f"(POST /repos/{REPO}/issues/{PR}/comments)"
    )


def test_validation_detail_is_included(fake: FakeGitHub) -> None:
    outcome = post(fake, "x" * 70_000)

    assert outcome.action == "failed"
    assert outcome.warning is not None
    assert "422 Validation Failed: body is too long" in outcome.warning


def test_wrong_token_fails_without_leaking_it(fake: FakeGitHub) -> None:
    outcome = post(fake, token="ghp_wrongTokenValue123")

    assert outcome.action == "failed"
    assert outcome.warning is not None
    assert "401 Bad credentials" in outcome.warning
    assert "ghp_wrongTokenValue123" not in outcome.warning


def test_token_never_appears_in_the_warning(fake: FakeGitHub) -> None:
    fake.fail("GET", COMMENTS, 403, count=None, message=f"token {TOKEN} lacks scope")

    outcome = post(fake)

    assert outcome.action == "failed"
    assert outcome.warning is not None
    assert TOKEN not in outcome.warning
    assert "403" in outcome.warning


def test_connection_refused_is_a_warning() -> None:
    outcome = gh.post_sticky_comment(
        body="x",
        key="default",
        mode="update",
        token=TOKEN,
        repository=REPO,
        pr_number=PR,
        api_url=f"http://127.0.0.1:{closed_port()}",
        retries=2,
        backoff=0,
    )
    assert outcome.action == "failed"
    assert outcome.warning is not None
    assert "connection failed" in outcome.warning
    assert "after 2 attempts" in outcome.warning
    assert TOKEN not in outcome.warning


@pytest.mark.parametrize(("body", "expected"), [("{not json", "not valid JSON"),
                                              ("<html>maintenance</html>", "unexpected response")])
def test_a_body_that_is_not_a_list_of_comments_is_a_warning(fake: FakeGitHub, body: str,
                                                           expected: str) -> None:
    fake.fail("GET", COMMENTS, 200, raw_body=body)

    outcome = post(fake)

    assert outcome.action == "failed"
    assert outcome.warning is not None
    assert expected in outcome.warning
    assert f"(GET /repos/{REPO}/issues/{PR}/comments)" in outcome.warning


@pytest.mark.parametrize(
    ("overrides", "expected"),
    [
        ({"mode": "sometimes"}, "unknown comment mode 'sometimes'"),
        ({"repository": "not-a-repo"}, "invalid repository"),
        ({"pr_number": 0}, "invalid pull request number"),
        ({"token": "  "}, "no GitHub token"),
        ({"api_url": "ftp://example.com"}, "invalid api_url"),
    ],
)
def test_bad_input_fails_without_a_request(
    fake: FakeGitHub, overrides: dict[str, Any], expected: str
) -> None:
    outcome = post(fake, **overrides)

    assert outcome.action == "failed"
    assert outcome.warning is not None
    assert expected in outcome.warning
    assert fake.log == []


# -- retries ------------------------------------------------------------------------------


@pytest.mark.parametrize(("method", "success"), [("GET", 200), ("POST", 201)])
def test_500_twice_then_success_posts_once(fake: FakeGitHub, method: str, success: int) -> None:
    fake.fail(method, COMMENTS, 500, count=2)

    outcome = post(fake)

    assert outcome.action == "created"
    assert len(fake.comments_on(PR)) == 1
    assert [r.status for r in fake.requests(method, COMMENTS)] == [500, 500, success]


def test_429_with_retry_after_zero_is_retried(fake: FakeGitHub) -> None:
    fake.fail("POST", COMMENTS, 429, retry_after=0, message="API rate limit exceeded")

    outcome = post(fake)

    assert outcome.action == "created"
    assert [r.status for r in fake.requests("POST", COMMENTS)] == [429, 201]
    # A 429 was refused, not half-done: no need to look for a landed comment.
    assert len(fake.requests("GET", COMMENTS)) == 1


def test_secondary_rate_limit_403_with_retry_after_is_retried(fake: FakeGitHub) -> None:
    fake.fail(
        "GET",
        COMMENTS,
        403,
        retry_after=0,
        message="You have exceeded a secondary rate limit. Please wait a few minutes.",
    )

    assert post(fake).action == "created"
    assert [r.status for r in fake.requests("GET", COMMENTS)] == [403, 200]


def test_retry_after_is_honoured_and_capped(
    fake: FakeGitHub, monkeypatch: pytest.MonkeyPatch
) -> None:
    waits: list[float] = []
    monkeypatch.setattr(gh, "_sleep", waits.append)
    fake.fail("GET", COMMENTS, 429, retry_after=7)
    fake.fail("PATCH", ONE_COMMENT, 503, retry_after=86_400)
    fake.fail("POST", "/graphql", 502, count=2)

    post(fake, "v1", backoff=0.5)
    post(fake, "v2", backoff=0.5)

    # viewer: 502, 502 → 0.5 s then 1 s; list: Retry-After 7; edit: Retry-After capped.
    assert waits == [0.5, 1.0, 7.0, gh.RETRY_AFTER_CAP]


def test_apply_then_502_on_create_leaves_exactly_one_comment(fake: FakeGitHub) -> None:
    fault = fake.fail("POST", COMMENTS, 502, apply_then_fail=True)

    outcome = post(fake)

    assert fault.hits == 1
    (comment,) = fake.comments_on(PR)
    assert outcome == gh.CommentOutcome("created", comment["html_url"], None)
    assert len(fake.requests("POST", COMMENTS)) == 1


def test_dropped_connection_after_create_leaves_exactly_one_comment(fake: FakeGitHub) -> None:
    fake.fail("POST", COMMENTS, 0, apply_then_fail=True)

    outcome = post(fake)

    assert outcome.action == "created"
    assert len(fake.comments_on(PR)) == 1


def test_apply_then_502_in_recreate_mode_leaves_one_new_comment(fake: FakeGitHub) -> None:
    post(fake, "v1")
    (old,) = fake.comments_on(PR)
    fake.fail("POST", COMMENTS, 502, apply_then_fail=True)

    outcome = post(fake, "v2", mode="recreate")

    assert outcome.action == "recreated"
    (new,) = fake.comments_on(PR)
    assert new["id"] != old["id"]
    assert new["body"].endswith("\nv2")


def test_apply_then_502_on_every_create_still_never_duplicates(fake: FakeGitHub) -> None:
    fake.fail("POST", COMMENTS, 502, count=None, apply_then_fail=True)

    outcome = post(fake, retries=5)

    assert outcome.action == "created"
    assert len(fake.comments_on(PR)) == 1
    assert len(fake.requests("POST", COMMENTS)) == 1


def test_create_is_not_resent_when_we_cannot_tell_whether_it_landed(fake: FakeGitHub) -> None:
    fake.fail("POST", COMMENTS, 502)
    # The first listing works; the one that would tell whether the POST landed does not.
    fake.fail("GET", COMMENTS, 503, count=None, skip=1)

    outcome = post(fake)

    assert outcome.action == "failed"
    assert outcome.warning is not None
    assert "502 Bad Gateway (POST" in outcome.warning
    assert len(fake.requests("POST", COMMENTS)) == 1


@pytest.mark.parametrize("retries", [1, 3, 4])
def test_5xx_forever_fails_after_retries_attempts(fake: FakeGitHub, retries: int) -> None:
    fake.fail("GET", COMMENTS, 503, count=None)

    outcome = post(fake, retries=retries)

    assert outcome.action == "failed"
    assert outcome.warning is not None
    assert f"503 Service Unavailable (GET /repos/{REPO}/issues/{PR}/comments)" in outcome.warning
    assert len(fake.requests("GET", COMMENTS)) == retries
    assert ("after" in outcome.warning) is (retries > 1)


def test_post_5xx_forever_fails_after_retries_posts(fake: FakeGitHub) -> None:
    fake.fail("POST", COMMENTS, 502, count=None)

    outcome = post(fake, retries=3)

    assert outcome.action == "failed"
    assert outcome.warning is not None
    assert "502 Bad Gateway (POST" in outcome.warning
    assert "after 3 attempts" in outcome.warning
    assert len(fake.requests("POST", COMMENTS)) == 3
    assert fake.comments_on(PR) == []


# -- GitHub Enterprise Server -------------------------------------------------------------


def test_ghes_api_prefix() -> None:
    with FakeGitHub(token=TOKEN, repository=REPO, api_prefix="/api/v3") as fake:
        fake.add_pull(PR)
        assert fake.api_url.endswith("/api/v3")
        for i in range(120):
            fake.add_comment(PR, f"noise {i}", login="bob")

        assert post(fake, "v1").action == "created"
        assert post(fake, "v2").action == "updated"

        assert len(fake.comments_on(PR)) == 121
        raw = {r.raw_path.split("?")[0] for r in fake.log}
        assert "/api/graphql" in raw
        assert f"/api/v3/repos/{REPO}/issues/{PR}/comments" in raw
        assert all(r.status < 400 for r in fake.log)


def test_ghes_paths_are_named_in_warnings() -> None:
    with FakeGitHub(token=TOKEN, repository=REPO, api_prefix="/api/v3") as fake:
        fake.add_pull(PR)
        fake.fail("POST", COMMENTS, 403, message="Forbidden")

        outcome = post(fake)

    assert outcome.warning is not None
    assert f"(POST /api/v3/repos/{REPO}/issues/{PR}/comments)" in outcome.warning


# -- find_pr_for_head_sha -----------------------------------------------------------------


def test_find_pr_for_head_sha_over_two_pages(fake: FakeGitHub) -> None:
    target = "ab" * 20
    fake.add_pull(7, target)
    for number in range(10, 140):
        fake.add_pull(number)
    fake.add_pull(200, target, state="closed")

    found = gh.find_pr_for_head_sha(
        token=TOKEN, repository=REPO, head_sha=target.upper(), api_url=fake.api_url, backoff=0
    )

    assert found == 7
    pages = [r.query.get("page", "1") for r in fake.requests("GET", rf"/repos/{REPO}/pulls")]
    assert pages == ["1", "2"]
    assert {r.query["state"] for r in fake.requests("GET", rf"/repos/{REPO}/pulls")} == {"open"}


def test_find_pr_for_head_sha_none_when_absent(fake: FakeGitHub) -> None:
    found = gh.find_pr_for_head_sha(
        token=TOKEN, repository=REPO, head_sha="f" * 40, api_url=fake.api_url, backoff=0
    )
    assert found is None


def test_find_pr_for_head_sha_retries_then_raises_gate_error(fake: FakeGitHub) -> None:
    fake.fail("GET", rf"/repos/{REPO}/pulls", 502, count=None)

    with pytest.raises(GateError) as info:
        gh.find_pr_for_head_sha(
            token=TOKEN, repository=REPO, head_sha="a" * 40, api_url=fake.api_url, backoff=0
        )

    message = str(info.value)
    assert "502" in message and f"GET /repos/{REPO}/pulls" in message
    assert TOKEN not in message
    assert len(fake.requests("GET", rf"/repos/{REPO}/pulls")) == 3


def test_find_pr_for_head_sha_rejects_a_bad_sha(fake: FakeGitHub) -> None:
    with pytest.raises(GateError, match="head sha"):
        gh.find_pr_for_head_sha(token=TOKEN, repository=REPO, head_sha="main", api_url=fake.api_url)
    assert fake.log == []


# -- import cost --------------------------------------------------------------------------


def test_importing_the_module_does_not_import_pygithub() -> None:
    code = (
        "import sys, membench_gate.ci.github as m\n"
        "assert m.marker('k')\n"
        "print('github' in sys.modules)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO_ROOT, capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == "False"


# -- the fake itself ----------------------------------------------------------------------


def _get(url: str, token: str | None = TOKEN) -> tuple[int, Any, Any]:
    request = Request(url, headers={"Authorization": f"Bearer {token}"} if token else {})
    try:
        with urlopen(request, timeout=5) as response:
            return response.status, response.headers, json.loads(response.read() or b"null")
    except HTTPError as exc:
        return exc.code, exc.headers, json.loads(exc.read() or b"null")


def test_fake_requires_a_token_and_forbids_rest_user(fake: FakeGitHub) -> None:
    assert _get(fake.api_url + f"/repos/{REPO}", token=None)[0] == 401
    assert _get(fake.api_url + f"/repos/{REPO}", token="nope")[0] == 401
    status, _, body = _get(fake.api_url + "/user")
    assert (status, body["message"]) == (403, "Resource not accessible by integration")
    status, _, body = _get(fake.api_url + f"/repos/{REPO}")
    assert (status, body["full_name"]) == (200, REPO)
    status, _, body = _get(fake.api_url + f"/repos/{REPO}/pulls/{PR}")
    assert (status, body["number"]) == (200, PR)
    assert _get(fake.api_url + f"/repos/{REPO}/pulls/999")[0] == 404


def test_fake_link_header(fake: FakeGitHub) -> None:
    for i in range(150):
        fake.add_comment(PR, f"c{i}", login="bob")
    base = fake.api_url + f"/repos/{REPO}/issues/{PR}/comments"

    _, headers, first = _get(base + "?per_page=100")
    assert len(first) == 100
    assert headers["Link"] == (
        f'<{base}?per_page=100&page=2>; rel="next", <{base}?per_page=100&page=2>; rel="last"'
    )
    _, headers, second = _get(base + "?per_page=100&page=2")
    assert [c["body"] for c in second] == [f"c{i}" for i in range(100, 150)]
    assert 'rel="next"' not in headers["Link"] and 'rel="first"' in headers["Link"]
    _, headers, _ = _get(base)
    assert "per_page=30&page=5" in headers["Link"]


@contextmanager
def fake_script(*args: str) -> Iterator[str]:
    """Run tests/fakegithub.py in another process, as end-to-end tests do; yields its API url."""
    command = [sys.executable, str(SUPPORT / "fakegithub.py"), f"--token={TOKEN}", *args]
    with subprocess.Popen(command, stdout=subprocess.PIPE, text=True) as process:
        try:
            assert process.stdout is not None
            line = process.stdout.readline()
            assert line.startswith("fakegithub listening on http://127.0.0.1:")
            yield line.rsplit(" ", 1)[-1].strip()
        finally:
            process.terminate()
            process.wait(timeout=10)


def test_fake_runs_as_a_script_and_dumps_state(tmp_path: Path) -> None:
    state = tmp_path / "state.json"
    args = ["--port=0", f"--state={state}", "--login=github-actions", f"--repository={REPO}"]
    with fake_script(*args, f"--pr={PR}:{'c' * 40}") as api_url:
        outcome = post_to(api_url, "from another process")
        found = gh.find_pr_for_head_sha(
            token=TOKEN, repository=REPO, head_sha="c" * 40, api_url=api_url
        )

    assert outcome.action == "created"
    assert found == PR
    dumped = json.loads(state.read_text())
    (comment,) = dumped["comments"]
    assert comment["body"].endswith("from another process")
    assert comment["user"]["login"] == "github-actions[bot]"
    assert comment["issue_number"] == PR
    assert dumped["api_url"] == api_url
    assert any(r["method"] == "POST" for r in dumped["log"])


def test_fake_state_file_seeds_a_new_server(tmp_path: Path) -> None:
    state = tmp_path / "state.json"
    seed = {
        "pulls": [{"number": PR, "head_sha": "d" * 40}],
        "comments": [
            {
                "issue_number": PR,
                "body": gh.marker("default") + "\nold",
                "login": "github-actions[bot]",
            }
        ],
    }
    state.write_text(json.dumps(seed))

    with fake_script(f"--state={state}") as api_url:
        outcome = post_to(api_url, "new")

    assert outcome.action == "updated"
    (comment,) = json.loads(state.read_text())["comments"]
    assert comment["body"] == gh.marker("default") + "\nnew"


def post_to(api_url: str, body: str) -> gh.CommentOutcome:
    return gh.post_sticky_comment(
        body=body,
        key="default",
        mode="update",
        token=TOKEN,
        repository=REPO,
        pr_number=PR,
        api_url=api_url,
        backoff=0,
    )
