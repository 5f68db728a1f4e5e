"""What we ask of GitHub: the sticky scoreboard comment and the workflow_run PR lookup.

On PyGithub's objects (``PaginatedList`` follows Link headers, ``GithubRetry`` retries reads and edits,
``graphql_query`` knows GitHub Enterprise Server's GraphQL URL), only what PyGithub does not do: our comment
has the hidden marker *and* the token's own login and is not minimized; Retry-After is capped; POSTs, never
re-sent by urllib3, are retried by :meth:`_Session.post`, a comment only after looking whether it landed.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterator
from contextlib import closing, contextmanager
from dataclasses import dataclass
from http import HTTPStatus
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import urlsplit

from membench_gate.base.git import is_full_sha
from membench_gate.errors import GateError
from membench_gate.report.render import WHOLE_MARKERS, strip_markers

if TYPE_CHECKING:
    from github.IssueComment import IssueComment

MARKER_PREFIX = "<!-- membench-gate:v1"
DEFAULT_API_URL = "https://api.github.com"
COMMENT_MODES = ("update", "recreate", "off")
PER_PAGE = 100
# Longest wait (seconds) we take from Retry-After or backoff: a CI job should not stall longer.
RETRY_AFTER_CAP = 60.0

_MAX_MESSAGE = 300
_KEY_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")
_REPOSITORY = re.compile(r"[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+")
_VIEWER_QUERY = "query { viewer { login } }"
_MINIMIZED_QUERY = "query($id: ID!) { node(id: $id) { ... on IssueComment { isMinimized } } }"
T = TypeVar("T")
_sleep = time.sleep  # one indirection, so tests can observe waits without slowing down


def marker(key: str) -> str:
    """The hidden HTML comment that identifies our comment for ``key`` (``comment-key``): reduced to
    ``[A-Za-z0-9._-]``, so it can neither end the comment early nor differ by whitespace."""
    cleaned = _KEY_UNSAFE.sub("-", (key or "").strip())[:100]
    return f"{MARKER_PREFIX} key={cleaned if cleaned.strip('-') else 'default'} -->"


# The longest marker line the comment's first line can be: the body gets the rest of the limit.
MARKER_ROOM = len(marker("k" * 100)) + 1


@dataclass(frozen=True)
class CommentOutcome:
    """What happened to the sticky comment: ``action`` (created, updated, unchanged, recreated, skipped,
    failed), its ``url``, and a one-line ``warning`` (a failure, or an old comment left undeleted)."""

    action: str
    url: str | None = None
    warning: str | None = None


def post_sticky_comment(*, body: str, key: str, mode: str, token: str, repository: str, pr_number: int,
                        api_url: str = DEFAULT_API_URL, retries: int = 3,
                        backoff: float = 1.0) -> CommentOutcome:
    """Create, update (in place; not at all when identical) or recreate (post, then delete the old) our one
    comment on PR ``pr_number``. Every failure — a fork PR's read-only token, an outage, bad input — is a
    ``failed`` outcome with a warning, never an exception: a comment never changes the verdict."""
    mode = (mode or "").strip().lower()
    if mode == "off":
        return CommentOutcome("skipped")
    where = f"could not comment on PR #{pr_number}"
    problem = _bad_input(token, repository, api_url)
    if mode not in COMMENT_MODES:
        problem = f"unknown comment mode {mode!r} (expected update, recreate or off)"
    elif not isinstance(pr_number, int) or isinstance(pr_number, bool) or pr_number <= 0:
        problem = problem or f"invalid pull request number {pr_number!r}"
    if problem:
        return CommentOutcome("failed", warning=_one_line(f"{where}: {problem}", token))
    try:
        with closing(_Session(token, api_url, retries, backoff)) as session:
            done = _StickyComment(session, repository, pr_number, key).post(body, mode)
    except Exception as exc:  # a comment must never change the verdict
        return CommentOutcome("failed", warning=_one_line(f"{where}: {_describe(exc)}", token))
    warning = done.warning and _one_line(f"{where}: {done.warning}", token)
    return CommentOutcome(done.action, done.url, warning)


def find_pr_for_head_sha(*, token: str, repository: str, head_sha: str, api_url: str = DEFAULT_API_URL,
                         retries: int = 3, backoff: float = 1.0,
                         head_repository: str | None = None) -> int | None:
    """The newest open PR whose head is ``head_sha`` (from ``head_repository`` when given, so another fork's
    PR on the same commit is not taken), for the fork-safe ``workflow_run`` job: GitHub leaves its
    ``pull_requests`` empty for forks. Raises :class:`GateError` when GitHub cannot be asked."""
    sha = (head_sha or "").strip().lower()
    if not is_full_sha(sha):
        raise GateError(f"invalid head sha {head_sha!r}: expected a full commit id (40 or 64 hex digits)")
    try:
        if problem := _bad_input(token, repository, api_url):
            raise GateError(problem)
        with closing(_Session(token, api_url, retries, backoff)) as session, \
                session.call("GET", f"/repos/{repository}/pulls"):
            for pull in session.github.get_repo(repository).get_pulls(state="open"):
                head = (pull.head.repo.full_name if pull.head.repo is not None else "").lower()
                if pull.head.sha.lower() == sha and (head_repository or head).lower() == head:
                    return pull.number
        return None
    except Exception as exc:  # users get one line, never a PyGithub traceback
        message = f"could not look up the PR for {sha} in {repository}: {_describe(exc)}"
        raise GateError(_one_line(message, token)) from None


class _StickyComment:
    """Our comment on one PR for one key: list, recognise, then create/update/recreate."""

    def __init__(self, session: _Session, repository: str, number: int, key: str) -> None:
        self.session, self.marker, self.login = session, marker(key), ""
        self.issue = session.github.get_repo(repository).get_issue(number)
        self.list_path = f"/repos/{repository}/issues/{number}/comments"

    def post(self, body: str, mode: str) -> CommentOutcome:
        """Carry out ``mode`` (``update`` or ``recreate``)."""
        # A stray marker in the body (ours or another key's) would make the comment claimable by the wrong
        # key on the next run, so the only marker left is the one we add.
        full_body = f"{self.marker}\n{strip_markers(body, WHOLE_MARKERS)}"
        # The token's own login: REST GET /user answers 403 to the workflow's installation token, GraphQL's
        # viewer works for every kind of token.
        self.login = (self.session.graphql(_VIEWER_QUERY, {}).get("viewer") or {}).get("login") or ""
        if not isinstance(self.login, str) or not self.login:
            raise _ApiError("POST", self.session.graphql_path, None, "unexpected response: no viewer login")
        comments = self._list()
        ours = [c for c in comments if self._is_ours(c)]
        known_ids = {c.id for c in comments}
        if mode == "update":
            for comment in ours:
                if self._is_minimized(comment):
                    continue
                if comment.body == full_body:
                    return CommentOutcome("unchanged", comment.html_url)
                with self.session.call("PATCH", comment.url, missing_ok=True):
                    comment.edit(full_body)
                    return CommentOutcome("updated", comment.html_url)
                break  # deleted between listing and editing: post a new one
            return CommentOutcome("created", self._create(full_body, known_ids).html_url)
        # Create first, then delete: if creating fails the PR keeps its old scoreboard.
        created = self._create(full_body, known_ids)
        warning = None
        for comment in ours:
            try:
                with self.session.call("DELETE", comment.url, missing_ok=True):
                    comment.delete()
            except _ApiError as exc:
                warning = warning or f"posted the new comment but could not delete the old one: {exc}"
        return CommentOutcome("recreated" if ours else "created", created.html_url, warning)

    def _list(self) -> list[IssueComment]:
        with self.session.call("GET", self.list_path):
            return list(self.issue.get_comments())

    def _is_ours(self, comment: IssueComment) -> bool:
        # Our marker is the first line of our comment: the same text further down is not ours.
        return (isinstance(comment.body, str)
                and comment.body.split("\n", 1)[0].rstrip("\r") == self.marker
                and comment.user is not None and _same_login(comment.user.login, self.login))

    def _is_minimized(self, comment: IssueComment) -> bool:
        try:
            node = self.session.graphql(_MINIMIZED_QUERY, {"id": comment.node_id}).get("node")
        except _ApiError as exc:
            if exc.status != 404:
                raise
            node = None  # gone since we listed it: just as unusable as a hidden one
        return not isinstance(node, dict) or node.get("isMinimized") is True

    def _create(self, full_body: str, known_ids: set[int]) -> IssueComment:
        """POST the comment; when a try may have been stored (5xx, a dropped connection), adopt our comment
        with this body and a new id instead of posting a second copy."""

        return self.session.post(self.list_path, lambda: self.issue.create_comment(full_body),
                                 lambda: next((c for c in self._list() if c.id not in known_ids
                                               and c.body == full_body and self._is_ours(c)), None))


class _ApiError(Exception):
    """One failed call, shown as ``<status> <GitHub's message> (<METHOD> <path>)``."""

    def __init__(self, method: str, path: str, status: int | None, message: str, *,
                 retry_after: float | None = None, transport: bool = False, attempts: int = 1) -> None:
        super().__init__(message)
        self.method, self.path, self.status, self.message = method, path, status, message
        self.retry_after, self.attempts = retry_after, attempts
        # Ambiguous: may have been carried out all the same. Retryable: says "later" (or lost the line).
        self.ambiguous = transport or (status or 0) >= 500
        self.retryable = self.ambiguous or status == 429 or (status == 403 and retry_after is not None)

    def __str__(self) -> str:
        status, tail = f"{self.status} " if self.status else "", f" after {self.attempts} attempts"
        return f"{status}{self.message} ({self.method} {self.path}){tail if self.attempts > 1 else ''}"


class _Session:
    """A ``Github`` client with our retry policy, and one way to report its errors."""

    def __init__(self, token: str, api_url: str, retries: int, backoff: float) -> None:
        self.retries, self.backoff = max(int(retries), 1), max(float(backoff), 0.0)
        self.github = _github(token, api_url, self.retries, self.backoff)
        self.prefix = urlsplit(api_url.rstrip("/")).path
        self.graphql_path = urlsplit(self.github.requester.graphql_url).path

    def close(self) -> None:
        """Release the HTTP connections."""
        self.github.close()

    @contextmanager
    def call(self, method: str, url: str, *, missing_ok: bool = False) -> Iterator[None]:
        """What PyGithub, requests or urllib3 raise, as one :class:`_ApiError`; ``missing_ok``: 404 passes."""
        import requests
        from github import GithubException
        from urllib3 import Retry
        from urllib3.exceptions import MaxRetryError

        path = self.prefix + url if url.startswith("/") else urlsplit(url).path
        try:
            yield
        except GithubException as exc:
            if missing_ok and exc.status == 404:
                return
            data = exc.data
            if exc.status == 400 and isinstance(data, dict) and data.get("errors"):  # graphql_query's
                message = f"GraphQL error: {data['errors'][0].get('message')}"
                raise _ApiError(method, path, None, message) from None
            # Seconds or an HTTP date, read as urllib3 reads it for the calls it retries itself.
            after = {k.lower(): v for k, v in (exc.headers or {}).items()}.get("retry-after")
            error = _ApiError(method, path, exc.status, _github_message(exc.status, data),
                              retry_after=Retry(0).parse_retry_after(after) if after else None)
            # GithubRetry has spent every attempt on a retryable answer to anything but a POST.
            error.attempts = self.retries if error.retryable and method != "POST" else 1
            raise error from None
        except ValueError:
            raise _ApiError(method, path, None, "response is not valid JSON") from None
        except requests.RequestException as exc:
            # urllib3 has retried all but a POST that reached GitHub (then MaxRetryError is not the cause):
            # only that one may have landed, and only that one is ours to retry.
            spent = method != "POST" or isinstance(exc.args[0] if exc.args else None, MaxRetryError)
            raise _ApiError(method, path, None, f"connection failed: {_reason(exc)}", transport=not spent,
                            attempts=self.retries if spent else 1) from None
        except (AttributeError, TypeError, KeyError) as exc:
            raise _ApiError(method, path, None, f"unexpected response: {exc}") from None

    def post(self, url: str, send: Callable[[], T], landed: Callable[[], T | None] | None = None) -> T:
        """A POST, tried ``retries`` times while the answer says "later"; when a try may have landed,
        ``landed`` (none for a read) looks for it before sending again."""
        for attempt in range(1, self.retries + 1):
            try:
                with self.call("POST", url):
                    return send()
            except _ApiError as exc:
                exc.attempts = max(exc.attempts, attempt)
                if not exc.retryable:
                    raise
                if attempt < self.retries:
                    _pause(self.backoff * 2 ** (attempt - 1) if exc.retry_after is None else exc.retry_after)
                if exc.ambiguous and landed is not None:
                    try:
                        found = landed()
                    except _ApiError:
                        raise exc from None  # cannot tell: re-sending could duplicate it
                    if found is not None:
                        return found
                if attempt == self.retries:
                    raise
        raise AssertionError("unreachable")  # pragma: no cover

    def graphql(self, query: str, variables: dict[str, Any]) -> dict[str, Any]:
        """The ``data`` of a GraphQL read (a node that does not exist: a 404 error)."""
        return self.post(self.graphql_path,
                         lambda: self.github.requester.graphql_query(query, variables)[1].get("data") or {})


def _github(token: str, api_url: str, retries: int, backoff: float) -> Any:
    """``Github`` retrying all but POSTs on 5xx, 429, rate limits: Retry-After (capped), else backoff."""
    from github import Auth, Github, GithubRetry

    class CappedRetry(GithubRetry):
        def get_backoff_time(self) -> float:
            return backoff * 2 ** (len(self.history) - 1) if self.history else 0.0

        def sleep(self, response: Any = None) -> None:
            after = self.get_retry_after(response) if response is not None else None
            _pause(self.get_backoff_time() if after is None else after)

    retry = CappedRetry(total=retries - 1, backoff_factor=backoff, raise_on_status=False,
                        status_forcelist=[*range(500, 600), 429], secondary_rate_wait=RETRY_AFTER_CAP,
                        # Never POST: a comment that landed before the error would be doubled.
                        allowed_methods={"GET", "HEAD", "PATCH", "PUT", "DELETE", "OPTIONS"})
    # No throttling: we make a handful of calls per run and honour GitHub's own Retry-After.
    return Github(auth=Auth.Token(token.strip()), base_url=api_url.rstrip("/"), timeout=30,
                  user_agent="membench-gate", per_page=PER_PAGE, retry=retry, lazy=True,
                  seconds_between_requests=None, seconds_between_writes=None)


def _pause(seconds: float) -> None:
    if seconds > 0:
        _sleep(min(seconds, RETRY_AFTER_CAP))


def _bad_input(token: str, repository: str, api_url: str) -> str | None:
    if not isinstance(token, str) or not token.strip():
        return "no GitHub token (set the github-token input)"
    if not isinstance(repository, str) or not _REPOSITORY.fullmatch(repository):
        return f"invalid repository {repository!r} (expected owner/name)"
    parts = urlsplit(api_url) if isinstance(api_url, str) else None
    if parts is None or parts.scheme not in ("http", "https") or not parts.hostname:
        return f"invalid api_url {api_url!r} (expected an http(s) URL)"
    return None


def _same_login(a: str, b: str) -> bool:
    # An app's installation token is "name" to GraphQL's viewer and "name[bot]" as a REST comment author;
    # logins are case-insensitive on GitHub.
    return a.strip().lower().removesuffix("[bot]") == b.strip().lower().removesuffix("[bot]")


def _describe(exc: Exception) -> str:
    plain = isinstance(exc, _ApiError | GateError) or not str(exc)
    return (str(exc) or type(exc).__name__) if plain else f"{type(exc).__name__}: {exc}"


def _github_message(status: int, data: Any) -> str:
    message = data.get("message") if isinstance(data, dict) else None
    if not isinstance(message, str) or not message.strip():
        return {s.value: s.phrase for s in HTTPStatus}.get(status, "error")
    # 422 answers put the useful part ("body is too long …") in errors[].
    errors = data.get("errors")
    detail = errors[0] if isinstance(errors, list) and errors else None
    detail = (detail.get("message") or detail.get("code")) if isinstance(detail, dict) else None
    return f"{message}: {detail}" if isinstance(detail, str) and detail else message


def _reason(exc: BaseException) -> str:
    # requests nests the useful part ("Connection refused") a few levels down.
    for _ in range(10):  # bounded: a chain of causes can loop
        nested = (getattr(exc, "reason", None), *exc.args, exc.__context__)
        inner = next((e for e in nested if isinstance(e, BaseException)), None)
        if inner is None or (isinstance(exc, OSError) and exc.strerror):
            break
        exc = inner
    return getattr(exc, "strerror", None) or str(exc) or type(exc).__name__


def _one_line(message: str, token: str | None) -> str:
    text = " ".join(message.split())
    if isinstance(token, str) and token.strip():
        text = text.replace(token.strip(), "***")
    return text if len(text) <= _MAX_MESSAGE else text[: _MAX_MESSAGE - 1] + "…"
