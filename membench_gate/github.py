"""What we ask of GitHub: the sticky scoreboard comment and the workflow_run PR lookup.

The comment is found again by a hidden marker *and* the token's own login, so a comment that
merely quotes our marker (or another key's comment) is never touched. Every call goes through
PyGithub's requester with PyGithub's own retry switched off: :class:`_Client` owns the only retry
loop, so a POST that may have landed is never blindly re-sent.

PyGithub is imported inside the functions, so importing this module stays cheap: only the
commands that talk to GitHub pay for (or need) PyGithub.
"""

from __future__ import annotations

import email.utils
import re
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timezone
from http import HTTPStatus
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from membench_gate.errors import GateError

if TYPE_CHECKING:
    from github.Github import Github

MARKER_PREFIX = "<!-- membench-gate:v1"
DEFAULT_API_URL = "https://api.github.com"
DEFAULT_KEY = "default"
COMMENT_MODES = ("update", "recreate", "off")
PER_PAGE = 100
# Longest wait (seconds) we take from Retry-After or backoff: a CI job should not stall longer.
RETRY_AFTER_CAP = 60.0

_TIMEOUT = 30
_MAX_PAGES = 1000
_MAX_MESSAGE = 300
_USER_AGENT = "membench-gate"
_KEY_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")
_ANY_MARKER = re.compile(r"<!--\s*membench-gate:v1\b.*?-->", re.DOTALL)
_LINK = re.compile(r'<([^>]*)>\s*;\s*rel="?([^";]*)"?')
_FULL_SHA = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")
_REPOSITORY = re.compile(r"[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+")
_VIEWER_QUERY = "query { viewer { login } }"
_MINIMIZED_QUERY = "query($id: ID!) { node(id: $id) { ... on IssueComment { isMinimized } } }"


def marker(key: str) -> str:
    """The hidden HTML comment that identifies our comment for ``key`` (``comment-key``).

    The key is reduced to ``[A-Za-z0-9._-]`` (anything else becomes ``-``) so it can neither end
    the HTML comment early nor differ between runs by whitespace; an empty key is ``default``.
    """
    cleaned = _KEY_UNSAFE.sub("-", (key or "").strip())[:100]
    if not cleaned.strip("-"):
        cleaned = DEFAULT_KEY
    return f"{MARKER_PREFIX} key={cleaned} -->"


def default_graphql_url(api_url: str) -> str:
    """GitHub's GraphQL endpoint for a REST ``api_url`` (``…/api/v3`` → ``…/api/graphql``)."""
    base = api_url.rstrip("/")
    if base.endswith("/v3"):
        return base[: -len("/v3")] + "/graphql"
    return base + "/graphql"


@dataclass(frozen=True)
class CommentOutcome:
    """What happened to the sticky comment. Never an exception: commenting is best effort.

    ``action`` is one of ``created``, ``updated``, ``unchanged``, ``recreated``, ``skipped``,
    ``failed``; ``url`` is the comment's ``html_url`` when known; ``warning`` is one line for
    the job log (set on failure, and on success when a side step such as deleting an old
    comment failed).
    """

    action: str
    url: str | None = None
    warning: str | None = None


def post_sticky_comment(
    *,
    body: str,
    key: str,
    mode: str,
    token: str,
    repository: str,
    pr_number: int,
    api_url: str = DEFAULT_API_URL,
    graphql_url: str | None = None,
    retries: int = 3,
    backoff: float = 1.0,
) -> CommentOutcome:
    """Create, update or recreate our one comment on PR ``pr_number`` of ``repository``.

    ``mode`` ``update`` edits our existing comment in place (nothing is sent when its body is
    already identical), ``recreate`` posts a new one and deletes the old, ``off`` does nothing.
    ``body`` must not contain the marker; it is added here. Any failure — a fork PR's read-only
    token, an outage, bad input — comes back as ``action="failed"`` with a one-line warning and
    never as an exception, so a comment can never change the gate's verdict.
    """
    normalized_mode = (mode or "").strip().lower()
    if normalized_mode == "off":
        return CommentOutcome("skipped")
    where = f"could not comment on PR #{pr_number}"
    try:
        number = _pr_number(pr_number)
        problem = _check_inputs(token, repository, api_url, graphql_url)
        if normalized_mode not in COMMENT_MODES:
            problem = f"unknown comment mode {mode!r} (expected update, recreate or off)"
        elif number is None:
            problem = f"invalid pull request number {pr_number!r}"
        if problem or number is None:
            return CommentOutcome("failed", warning=_one_line(f"{where}: {problem}", token))
        client = _Client(
            token=token,
            api_url=api_url,
            graphql_url=graphql_url,
            retries=retries,
            backoff=backoff,
        )
        try:
            sticky = _StickyComment(client, repository, number, key)
            return sticky.post(body, normalized_mode, where, token)
        finally:
            client.close()
    except _ApiError as exc:
        return CommentOutcome("failed", warning=_one_line(f"{where}: {exc}", token))
    except Exception as exc:  # a comment must never change the verdict
        detail = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
        return CommentOutcome("failed", warning=_one_line(f"{where}: {detail}", token))


def find_pr_for_head_sha(
    *,
    token: str,
    repository: str,
    head_sha: str,
    api_url: str = DEFAULT_API_URL,
    retries: int = 3,
    backoff: float = 1.0,
    head_repository: str | None = None,
) -> int | None:
    """The number of the open PR of ``repository`` whose head commit is ``head_sha``, else None.

    With ``head_repository`` (the triggering run's ``head_repository.full_name``) the PR's head
    must also come from that repository, so another fork's PR on the same commit is not taken.

    For the fork-safe two-workflow setup: the ``workflow_run`` job learns the PR from the head
    sha of the run it reacts to (GitHub leaves ``pull_requests`` empty for forks). Lists open
    pulls page by page; the first one (newest first, GitHub's order) with that exact head sha
    wins. Raises :class:`GateError` when GitHub cannot be asked.
    """
    sha = (head_sha or "").strip().lower()
    if not _FULL_SHA.fullmatch(sha):
        raise GateError(f"invalid head sha {head_sha!r}: expected a full 40-hex commit id")
    problem = _check_inputs(token, repository, api_url, None)
    if problem:
        raise GateError(_one_line(f"could not look up the PR for {sha}: {problem}", token))
    try:
        client = _Client(
            token=token, api_url=api_url, graphql_url=None, retries=retries, backoff=backoff
        )
        try:
            for pull in client.paginate(f"/repos/{repository}/pulls", {"state": "open"}):
                head = pull.get("head")
                if isinstance(head, dict) and str(head.get("sha", "")).lower() == sha \
                        and _from_repository(head, head_repository):
                    number = pull.get("number")
                    if isinstance(number, int) and not isinstance(number, bool):
                        return number
            return None
        finally:
            client.close()
    except _ApiError as exc:
        message = f"could not look up the PR for {sha} in {repository}: {exc}"
        raise GateError(_one_line(message, token)) from None
    except Exception as exc:  # users get one line, never a PyGithub traceback
        message = f"could not look up the PR for {sha} in {repository}: {type(exc).__name__}: {exc}"
        raise GateError(_one_line(message, token)) from None


def _from_repository(head: dict[str, Any], repository: str | None) -> bool:
    if repository is None:
        return True
    repo = head.get("repo")
    name = repo.get("full_name") if isinstance(repo, dict) else None
    return isinstance(name, str) and name.lower() == repository.lower()


# -- the sticky comment -------------------------------------------------------------------


class _StickyComment:
    """Our comment on one PR for one key: list, recognise, then create/update/recreate."""

    def __init__(self, client: _Client, repository: str, number: int, key: str) -> None:
        self.client = client
        self.marker = marker(key)
        self.list_path = f"/repos/{repository}/issues/{number}/comments"
        self.item_path = f"/repos/{repository}/issues/comments/{{id}}"
        self.login = ""

    def post(self, body: str, mode: str, where: str, token: str) -> CommentOutcome:
        """Carry out ``mode`` (``update`` or ``recreate``)."""
        # A stray marker in the body (ours or another key's) would make the comment claimable
        # by the wrong key on the next run, so the only marker left is the one we add.
        full_body = f"{self.marker}\n{_ANY_MARKER.sub('', body)}"
        self.login = self._viewer_login()
        comments = self._list()
        ours = [c for c in comments if self._is_ours(c)]
        known_ids = {c.get("id") for c in comments}

        if mode == "update":
            for comment in ours:
                if self._is_minimized(comment):
                    continue
                if comment.get("body") == full_body:
                    return CommentOutcome("unchanged", _html_url(comment))
                updated = self._update(comment, full_body)
                if updated is not None:
                    return CommentOutcome("updated", _html_url(updated))
                # Deleted between listing and editing: fall through and post a new one.
                break
            created = self._create(full_body, known_ids)
            return CommentOutcome("created", _html_url(created))

        # Create first, then delete: if creating fails the PR keeps its old scoreboard.
        created = self._create(full_body, known_ids)
        failures = []
        for comment in ours:
            try:
                self._delete(comment)
            except _ApiError as exc:
                failures.append(str(exc))
        warning = None
        if failures:
            warning = _one_line(
                f"{where}: posted the new comment but could not delete the old one: {failures[0]}",
                token,
            )
        return CommentOutcome("recreated" if ours else "created", _html_url(created), warning)

    def _viewer_login(self) -> str:
        # The workflow's installation token gets 403 from REST GET /user; GraphQL's viewer works
        # for every kind of token.
        data = self.client.graphql(_VIEWER_QUERY, {})
        viewer = data.get("viewer")
        login = viewer.get("login") if isinstance(viewer, dict) else None
        if not isinstance(login, str) or not login:
            raise self.client.unexpected("POST", self.client.graphql_url, "no viewer login")
        return login

    def _list(self) -> list[dict[str, Any]]:
        return list(self.client.paginate(self.list_path, {}))

    def _is_ours(self, comment: dict[str, Any]) -> bool:
        body = comment.get("body")
        user = comment.get("user")
        login = user.get("login") if isinstance(user, dict) else None
        return (
            isinstance(body, str)
            and self.marker in body
            and isinstance(login, str)
            and _same_login(login, self.login)
        )

    def _is_minimized(self, comment: dict[str, Any]) -> bool:
        node_id = comment.get("node_id")
        if not isinstance(node_id, str) or not node_id:
            return False
        try:
            data = self.client.graphql(_MINIMIZED_QUERY, {"id": node_id})
        except _ApiError as exc:
            if exc.graphql_type == "NOT_FOUND":
                return True  # gone since we listed it: just as unusable as a hidden one
            raise
        node = data.get("node")
        if node is None:
            return True
        return isinstance(node, dict) and node.get("isMinimized") is True

    def _update(self, comment: dict[str, Any], full_body: str) -> dict[str, Any] | None:
        path = self.item_path.format(id=comment.get("id"))
        try:
            _, data = self.client.call("PATCH", path, body={"body": full_body})
        except _ApiError as exc:
            if exc.status == 404:
                return None
            raise
        return self.client.expect_dict("PATCH", path, data)

    def _delete(self, comment: dict[str, Any]) -> None:
        try:
            self.client.call("DELETE", self.item_path.format(id=comment.get("id")))
        except _ApiError as exc:
            if exc.status != 404:  # already gone is what we wanted
                raise

    def _create(self, full_body: str, known_ids: set[Any]) -> dict[str, Any]:
        """POST the comment, retrying without ever producing a duplicate.

        After an answer that leaves it open whether GitHub stored the comment (5xx, a dropped
        connection), we list again and adopt a comment of ours with this exact body and an id
        we had not seen before, instead of posting a second copy.
        """
        client = self.client
        attempts = max(client.retries, 1)
        for attempt in range(1, attempts + 1):
            try:
                _, data = client.once("POST", self.list_path, body={"body": full_body})
                return client.expect_dict("POST", self.list_path, data)
            except _ApiError as exc:
                exc.attempts = attempt
                if not exc.retryable:
                    raise
                if attempt < attempts:
                    _sleep(client.delay(exc, attempt))
                if exc.ambiguous:
                    try:
                        landed = self._landed(full_body, known_ids)
                    except _ApiError:
                        # Cannot tell whether it landed, so re-sending could duplicate it.
                        raise exc from None
                    if landed is not None:
                        return landed
                if attempt == attempts:
                    raise
        raise AssertionError("unreachable")  # pragma: no cover

    def _landed(self, full_body: str, known_ids: set[Any]) -> dict[str, Any] | None:
        for comment in self._list():
            if (
                comment.get("id") not in known_ids
                and comment.get("body") == full_body
                and self._is_ours(comment)
            ):
                return comment
        return None


# -- HTTP ---------------------------------------------------------------------------------


class _ApiError(Exception):
    """One failed call, rendered as ``<status> <GitHub's message> (<METHOD> <path>)``."""

    def __init__(
        self,
        method: str,
        path: str,
        status: int | None,
        message: str,
        *,
        retry_after: float | None = None,
        retryable: bool = False,
        transport: bool = False,
        graphql_type: str | None = None,
    ) -> None:
        super().__init__(message)
        self.method = method
        self.path = path
        self.status = status
        self.message = message
        self.retry_after = retry_after
        self.retryable = retryable
        self.transport = transport
        self.graphql_type = graphql_type
        self.attempts = 1

    @property
    def ambiguous(self) -> bool:
        """Whether the request may have been carried out despite the error."""
        return self.transport or (self.status is not None and self.status >= 500)

    def __str__(self) -> str:
        head = f"{self.status} {self.message}" if self.status is not None else self.message
        tail = f" after {self.attempts} attempts" if self.attempts > 1 else ""
        return f"{head} ({self.method} {self.path}){tail}"


class _Client:
    """PyGithub's requester plus our retry policy, pagination and GraphQL error handling."""

    def __init__(
        self,
        *,
        token: str,
        api_url: str,
        graphql_url: str | None,
        retries: int,
        backoff: float,
    ) -> None:
        from github import Auth, Github

        base = api_url.rstrip("/")
        self.retries = max(int(retries), 1)
        self.backoff = max(float(backoff), 0.0)
        self.graphql_url = graphql_url or default_graphql_url(base)
        self._prefix = urlsplit(base).path
        self._github: Github = Github(
            auth=Auth.Token(token.strip()),
            base_url=base,
            timeout=_TIMEOUT,
            user_agent=_USER_AGENT,
            per_page=PER_PAGE,
            # Ours is the only retry loop: PyGithub's would re-send POSTs blindly.
            retry=None,
            # PyGithub throttles by default (0.25 s per request, 1 s per write); we make a
            # handful of calls per run and honour GitHub's own Retry-After instead.
            seconds_between_requests=None,
            seconds_between_writes=None,
        )
        self._requester = self._github.requester

    def close(self) -> None:
        """Release the HTTP connections."""
        self._github.close()

    def display_path(self, url: str) -> str:
        """The request path as shown in messages: below the host, without the query."""
        if url.startswith("/"):
            return self._prefix + url.split("?", 1)[0]
        return urlsplit(url).path

    def unexpected(self, method: str, url: str, what: str) -> _ApiError:
        """An error for a 2xx answer we cannot use."""
        return _ApiError(method, self.display_path(url), None, f"unexpected response: {what}")

    def expect_dict(self, method: str, url: str, data: Any) -> dict[str, Any]:
        """``data`` if it is a JSON object (as GitHub sends for one comment), else an error."""
        if not isinstance(data, dict):
            raise self.unexpected(method, url, "expected a JSON object")
        return data

    def once(
        self,
        method: str,
        url: str,
        *,
        params: dict[str, Any] | None = None,
        body: Any = None,
    ) -> tuple[dict[str, Any], Any]:
        """One request, no retry. ``url`` is a path below ``api_url`` or an absolute URL."""
        import requests
        from github import GithubException

        path = self.display_path(url)
        try:
            return self._requester.requestJsonAndCheck(method, url, parameters=params, input=body)
        except GithubException as exc:
            headers = {k.lower(): v for k, v in (exc.headers or {}).items()}
            retry_after = _parse_retry_after(headers.get("retry-after"))
            status = exc.status
            retryable = (
                status >= 500
                or status == 429
                # GitHub's secondary rate limit is a 403 that says when to come back.
                or (status == 403 and retry_after is not None)
            )
            raise _ApiError(
                method,
                path,
                status,
                _github_message(status, exc.data),
                retry_after=retry_after,
                retryable=retryable,
            ) from None
        except requests.exceptions.RequestException as exc:
            raise _ApiError(
                method,
                path,
                None,
                f"connection failed: {_exception_reason(exc)}",
                retryable=True,
                transport=True,
            ) from None
        except ValueError:
            raise _ApiError(method, path, None, "response is not valid JSON") from None

    def call(
        self,
        method: str,
        url: str,
        *,
        params: dict[str, Any] | None = None,
        body: Any = None,
    ) -> tuple[dict[str, Any], Any]:
        """A request retried on 5xx, 429 and dropped connections (idempotent calls only)."""
        for attempt in range(1, self.retries + 1):
            try:
                return self.once(method, url, params=params, body=body)
            except _ApiError as exc:
                exc.attempts = attempt
                if not exc.retryable or attempt == self.retries:
                    raise
                _sleep(self.delay(exc, attempt))
        raise AssertionError("unreachable")  # pragma: no cover

    def delay(self, exc: _ApiError, attempt: int) -> float:
        """Seconds to wait before attempt ``attempt + 1``: Retry-After, else doubling backoff."""
        if exc.retry_after is not None:
            return min(exc.retry_after, RETRY_AFTER_CAP)
        return min(self.backoff * 2 ** (attempt - 1), RETRY_AFTER_CAP)

    def paginate(self, path: str, params: dict[str, Any]) -> Iterator[dict[str, Any]]:
        """Items of a list endpoint, following ``Link: rel="next"`` page after page."""
        url: str = path
        page_params: dict[str, Any] | None = {**params, "per_page": PER_PAGE}
        seen: set[str] = set()
        for _ in range(_MAX_PAGES):
            headers, data = self.call("GET", url, params=page_params)
            if not isinstance(data, list):
                raise self.unexpected("GET", url, "expected a JSON list")
            yield from (item for item in data if isinstance(item, dict))
            next_url = _next_link(headers.get("link") or headers.get("Link"))
            if next_url is None or next_url in seen:
                return
            seen.add(next_url)
            # The next link already carries per_page and every other parameter.
            url, page_params = next_url, None
        raise self.unexpected("GET", path, f"more than {_MAX_PAGES} pages")

    def graphql(self, query: str, variables: dict[str, Any]) -> dict[str, Any]:
        """The ``data`` of a GraphQL query; GraphQL errors (sent with status 200) raise."""
        _, payload = self.call(
            "POST", self.graphql_url, body={"query": query, "variables": variables}
        )
        if not isinstance(payload, dict):
            raise self.unexpected("POST", self.graphql_url, "expected a JSON object")
        errors = payload.get("errors")
        if isinstance(errors, list) and errors:
            first = errors[0] if isinstance(errors[0], dict) else {}
            raise _ApiError(
                "POST",
                self.display_path(self.graphql_url),
                None,
                f"GraphQL error: {first.get('message') or 'unknown error'}",
                graphql_type=first.get("type") if isinstance(first.get("type"), str) else None,
            )
        data = payload.get("data")
        if not isinstance(data, dict):
            raise self.unexpected("POST", self.graphql_url, "no GraphQL data")
        return data


# -- helpers ------------------------------------------------------------------------------


def _sleep(seconds: float) -> None:
    # One indirection so tests can observe waits without slowing down.
    if seconds > 0:
        time.sleep(seconds)


def _check_inputs(token: str, repository: str, api_url: str, graphql_url: str | None) -> str | None:
    if not isinstance(token, str) or not token.strip():
        return "no GitHub token (set the github-token input)"
    if not isinstance(repository, str) or not _REPOSITORY.fullmatch(repository):
        return f"invalid repository {repository!r} (expected owner/name)"
    urls = {"api_url": api_url}
    if graphql_url is not None:
        urls["graphql_url"] = graphql_url
    for name, url in urls.items():
        parts = urlsplit(url) if isinstance(url, str) else None
        if parts is None or parts.scheme not in ("http", "https") or not parts.hostname:
            return f"invalid {name} {url!r} (expected an http(s) URL)"
    return None


def _pr_number(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    try:
        number = int(value)
    except (TypeError, ValueError):
        return None
    return number if number > 0 else None


def _same_login(a: str, b: str) -> bool:
    # An app's installation token is "name" to GraphQL's viewer and "name[bot]" as a REST
    # comment author; logins are case-insensitive on GitHub.
    def bare(login: str) -> str:
        login = login.strip().lower()
        return login.removesuffix("[bot]")

    return bare(a) == bare(b)


def _html_url(comment: dict[str, Any]) -> str | None:
    url = comment.get("html_url")
    return url if isinstance(url, str) else None


def _github_message(status: int, data: Any) -> str:
    message = data.get("message") if isinstance(data, dict) else None
    if not isinstance(message, str) or not message.strip():
        try:
            return HTTPStatus(status).phrase
        except ValueError:
            return "error"
    # 422 answers put the useful part ("body is too long …") in errors[].
    errors = data.get("errors") if isinstance(data, dict) else None
    if isinstance(errors, list) and errors and isinstance(errors[0], dict):
        detail = errors[0].get("message") or errors[0].get("code")
        if isinstance(detail, str) and detail:
            message = f"{message}: {detail}"
    return message


def _exception_reason(exc: BaseException) -> str:
    # requests nests the useful part ("[Errno 111] Connection refused") a few levels down.
    seen: set[int] = set()
    current: BaseException | None = exc
    reason = type(exc).__name__
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, OSError) and current.strerror:
            return current.strerror
        nested = [a for a in current.args if isinstance(a, BaseException)]
        inner = getattr(current, "reason", None)
        if isinstance(inner, BaseException):
            nested.insert(0, inner)
        reason = str(current) or reason
        current = nested[0] if nested else current.__cause__ or current.__context__
    return reason


def _parse_retry_after(value: Any) -> float | None:
    if value is None:
        return None
    text = str(value).strip()
    try:
        return max(float(text), 0.0)
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(text)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    return max((when - datetime.now(timezone.utc)).total_seconds(), 0.0)


def _next_link(header: str | None) -> str | None:
    if not header:
        return None
    for url, rels in _LINK.findall(header):
        if "next" in rels.split():
            return url
    return None


def _one_line(message: str, token: str | None) -> str:
    text = " ".join(message.split())
    if isinstance(token, str) and token.strip():
        text = text.replace(token.strip(), "***")
    if len(text) > _MAX_MESSAGE:
        text = text[: _MAX_MESSAGE - 1] + "…"
    return text
