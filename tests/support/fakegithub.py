"""A small, faithful fake of the GitHub API on 127.0.0.1, for tests of the comment layer.

It serves exactly the endpoints membench-gate calls, with GitHub's JSON shapes, headers and
error bodies, over real HTTP (a ``ThreadingHTTPServer`` on port 0), so PyGithub's requester,
our retry loop and pagination all run unmodified:

- ``GET  /repos/{o}/{r}``, ``GET /repos/{o}/{r}/pulls/{n}``, ``GET /repos/{o}/{r}/pulls``
- ``GET|POST /repos/{o}/{r}/issues/{n}/comments``
- ``PATCH|DELETE /repos/{o}/{r}/issues/comments/{id}``
- ``GET  /user`` → 403 "Resource not accessible by integration", as for the workflow's
  installation token (switch off with ``user_forbidden=False``)
- ``POST /graphql`` answering ``viewer { login }`` and
  ``node(id: …) { ... on IssueComment { isMinimized } }``

Lists are paginated with ``per_page``/``page`` and a ``Link`` header (rel first/prev/next/last).
Every request needs ``Authorization: token T`` or ``Bearer T``, else 401. With
``api_prefix="/api/v3"`` it answers under that prefix and GraphQL moves to ``/api/graphql``, as on
GitHub Enterprise Server.

Comments made with the token are authored by ``login + "[bot]"`` (type ``Bot``) while GraphQL's
viewer answers ``login``: that is what GitHub does for an app installation token (``bot=False``
makes both plain ``login``, as for a personal token).

Test hooks: :meth:`FakeGitHub.add_pull`, :meth:`FakeGitHub.add_comment` (any author, optionally
minimized), :meth:`FakeGitHub.fail` (fault rules), :attr:`FakeGitHub.log` (every request).

Run as a script for end-to-end tests in another process::

    python tests/support/fakegithub.py --port 0 --state state.json --token T --login github-actions \
        --repository acme/memory --pr 5:<head sha>

It prints ``fakegithub listening on <api url>``, serves until killed (SIGTERM/SIGINT) and rewrites
the state file (comments, pulls, request log, urls) after every request. If the state file already
holds ``pulls``/``comments`` at start-up, they seed the server.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import re
import signal
import sys
import threading
import time
import zlib
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

DOCS = "https://docs.github.com/rest"
MAX_BODY = 65536  # GitHub rejects longer comment bodies with 422
_ID_BASE = 1_000_000  # real comment ids are large; small ones could hide int/str mix-ups
_REPO = r"/repos/(?P<owner>[A-Za-z0-9_.-]+)/(?P<repo>[A-Za-z0-9_.-]+)"


@dataclass
class Fault:
    """A rule that makes matching requests fail.

    ``path`` is a regular expression matched in full against the request path below the API
    prefix, without the query string (GraphQL is always ``/graphql``). The first ``skip``
    matching requests pass; then ``count`` of them fail (``None``: all the rest). ``status`` 0
    drops the connection without an answer. With ``apply_then_fail`` the request is performed
    first (the comment is created, edited or deleted) and only then answered with the fault:
    GitHub's "it landed but you got a 502" case. ``raw_body`` replaces the JSON error body
    verbatim (e.g. to send broken JSON).
    """

    method: str
    path: str
    status: int = 502
    count: int | None = 1
    skip: int = 0
    retry_after: str | None = None
    apply_then_fail: bool = False
    message: str | None = None
    raw_body: str | None = None
    hits: int = 0
    seen: int = 0

    def applies(self, method: str, path: str) -> bool:
        """Whether this rule fails this request (counting it as seen when it matches)."""
        if self.count is not None and self.hits >= self.count:
            return False
        if self.method.upper() != method or re.fullmatch(self.path, path) is None:
            return False
        self.seen += 1
        if self.seen <= self.skip:
            return False
        self.hits += 1
        return True


@dataclass
class LoggedRequest:
    """One request as the fake saw it (``path`` below the API prefix, GraphQL as ``/graphql``)."""

    method: str
    path: str
    query: dict[str, str]
    status: int
    body: Any = None
    raw_path: str = ""
    fault: bool = False


@dataclass
class _Comment:
    id: int
    repository: str
    issue_number: int
    body: str
    login: str
    user_type: str = "User"
    minimized: bool = False
    minimized_reason: str | None = None
    created_at: str = ""
    updated_at: str = ""

    @property
    def node_id(self) -> str:
        return "IC_" + base64.b64encode(f"0:IssueComment{self.id}".encode()).decode().rstrip("=")


@dataclass
class _Pull:
    repository: str
    number: int
    head_sha: str
    head_ref: str = "feature"
    head_repository: str = ""
    base_ref: str = "main"
    base_sha: str = "0" * 40
    state: str = "open"
    title: str = ""
    login: str = "contributor"
    created_at: str = ""


@dataclass
class _Response:
    status: int
    payload: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    raw: bytes | None = None


def _now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _error(status: int, message: str | None = None, **extra: Any) -> _Response:
    text = message or HTTPStatus(status).phrase
    return _Response(status, {"message": text, "documentation_url": DOCS, **extra})


def graphql_path_for(api_prefix: str) -> str:
    """Where GitHub serves GraphQL for a REST prefix: ``/api/v3`` → ``/api/graphql``."""
    prefix = api_prefix.rstrip("/")
    if prefix.endswith("/v3"):
        prefix = prefix[: -len("/v3")]
    return prefix + "/graphql"


class FakeGitHub:
    """The fake API server. Use as a context manager, or call :meth:`start` / :meth:`stop`."""

    def __init__(
        self,
        *,
        token: str = "fake-token",
        login: str = "github-actions",
        bot: bool = True,
        repository: str = "acme/memory",
        api_prefix: str = "",
        host: str = "127.0.0.1",
        port: int = 0,
        html_base: str = "https://github.com",
        user_forbidden: bool = True,
        state_path: str | os.PathLike[str] | None = None,
    ) -> None:
        self.token = token
        self.login = login
        self.bot = bot
        self.api_prefix = api_prefix.rstrip("/")
        self.graphql_path = graphql_path_for(self.api_prefix)
        self.html_base = html_base.rstrip("/")
        self.user_forbidden = user_forbidden
        self.state_path = Path(state_path) if state_path is not None else None
        self.repository = repository
        self.repositories: set[str] = {repository}
        self.comments: list[_Comment] = []
        self.pulls: list[_Pull] = []
        self.faults: list[Fault] = []
        self.log: list[LoggedRequest] = []
        self._next_id = _ID_BASE
        self._lock = threading.RLock()
        self._thread: threading.Thread | None = None
        self._server = ThreadingHTTPServer((host, port), _Handler)
        self._server.daemon_threads = True
        self._server.fake = self  # type: ignore[attr-defined]
        self._routes: list[tuple[str, re.Pattern[str], Callable[..., _Response]]] = [
            ("GET", re.compile("/user"), self._get_user),
            ("GET", re.compile(_REPO), self._get_repo),
            ("GET", re.compile(_REPO + "/pulls"), self._list_pulls),
            ("GET", re.compile(_REPO + r"/pulls/(?P<number>\d+)"), self._get_pull),
            ("GET", re.compile(_REPO + r"/issues/(?P<number>\d+)/comments"), self._list_comments),
            ("POST", re.compile(_REPO + r"/issues/(?P<number>\d+)/comments"), self._create_comment),
            ("PATCH", re.compile(_REPO + r"/issues/comments/(?P<id>\d+)"), self._update_comment),
            ("DELETE", re.compile(_REPO + r"/issues/comments/(?P<id>\d+)"), self._delete_comment),
        ]

    # -- lifecycle ---------------------------------------------------------------------------

    @property
    def port(self) -> int:
        """The TCP port the server listens on."""
        return int(self._server.server_address[1])

    @property
    def origin(self) -> str:
        """``http://127.0.0.1:<port>``."""
        return f"http://{self._server.server_address[0]}:{self.port}"

    @property
    def api_url(self) -> str:
        """What the action gets as GITHUB_API_URL."""
        return self.origin + self.api_prefix

    @property
    def graphql_url(self) -> str:
        """What the action gets as GITHUB_GRAPHQL_URL."""
        return self.origin + self.graphql_path

    def serve_forever(self) -> None:
        """Serve in the calling thread until :meth:`stop` is called from another one."""
        self._server.serve_forever()

    def start(self) -> FakeGitHub:
        """Serve in a daemon thread."""
        # A short poll keeps stop() (and so every test's teardown) from waiting half a second.
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and release the port."""
        if self._thread is not None:
            self._server.shutdown()
            self._thread.join()
            self._thread = None
        self._server.server_close()

    def __enter__(self) -> FakeGitHub:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- test hooks --------------------------------------------------------------------------

    @property
    def author_login(self) -> str:
        """How REST shows the token's user as a comment author."""
        return self.login + "[bot]" if self.bot else self.login

    def add_repository(self, repository: str) -> None:
        """Make ``owner/name`` exist."""
        with self._lock:
            self.repositories.add(repository)

    def add_pull(
        self,
        number: int,
        head_sha: str | None = None,
        *,
        repository: str | None = None,
        state: str = "open",
        head_repository: str | None = None,
        base_ref: str = "main",
    ) -> dict[str, Any]:
        """Create pull request ``number`` (its comments live at ``issues/{number}/comments``)."""
        repo = repository or self.repository
        with self._lock:
            self.repositories.add(repo)
            pull = _Pull(
                repository=repo,
                number=number,
                head_sha=head_sha or f"{number:040x}",
                head_repository=head_repository or repo,
                base_ref=base_ref,
                state=state,
                title=f"PR {number}",
                created_at=_now(),
            )
            self.pulls = [p for p in self.pulls if (p.repository, p.number) != (repo, number)]
            self.pulls.append(pull)
            self.dump()
            return self._pull_json(pull, self.origin + self.api_prefix)

    def add_comment(
        self,
        number: int,
        body: str,
        *,
        login: str | None = None,
        user_type: str | None = None,
        minimized: bool = False,
        minimized_reason: str = "outdated",
        repository: str | None = None,
    ) -> dict[str, Any]:
        """Seed a comment on PR ``number``; by default written by the token's own user."""
        repo = repository or self.repository
        author = login or self.author_login
        kind = user_type or ("Bot" if author.endswith("[bot]") else "User")
        with self._lock:
            comment = self._new_comment(repo, number, body, author, kind)
            comment.minimized = minimized
            comment.minimized_reason = minimized_reason if minimized else None
            self.dump()
            return self._comment_json(comment, self.origin + self.api_prefix)

    def minimize(self, comment_id: int, reason: str = "outdated") -> None:
        """Hide a comment, as a maintainer's "Hide → Outdated" does."""
        with self._lock:
            comment = self._find_comment(comment_id)
            if comment is None:
                raise KeyError(comment_id)
            comment.minimized, comment.minimized_reason = True, reason

    def fail(
        self,
        method: str,
        path: str,
        status: int = 502,
        *,
        count: int | None = 1,
        skip: int = 0,
        retry_after: str | int | None = None,
        apply_then_fail: bool = False,
        message: str | None = None,
        raw_body: str | None = None,
    ) -> Fault:
        """Add a fault rule (see :class:`Fault`); returns it so a test can read ``hits``."""
        fault = Fault(
            method=method.upper(),
            path=path,
            status=status,
            count=count,
            skip=skip,
            retry_after=None if retry_after is None else str(retry_after),
            apply_then_fail=apply_then_fail,
            message=message,
            raw_body=raw_body,
        )
        with self._lock:
            self.faults.append(fault)
        return fault

    def comments_on(self, number: int, repository: str | None = None) -> list[dict[str, Any]]:
        """The comments of PR ``number`` as the REST API shows them, oldest first."""
        repo = repository or self.repository
        with self._lock:
            return [
                self._comment_json(c, self.origin + self.api_prefix)
                for c in self.comments
                if (c.repository, c.issue_number) == (repo, number)
            ]

    def requests(self, method: str | None = None, path: str | None = None) -> list[LoggedRequest]:
        """Logged requests, filtered by method and by a path regex matched in full."""
        with self._lock:
            return [
                r
                for r in self.log
                if (method is None or r.method == method.upper())
                and (path is None or re.fullmatch(path, r.path) is not None)
            ]

    def clear_log(self) -> None:
        """Forget the requests seen so far."""
        with self._lock:
            self.log.clear()

    # -- state file --------------------------------------------------------------------------

    def state(self) -> dict[str, Any]:
        """Everything a test in another process may want to assert on, JSON-ready."""
        with self._lock:
            base = self.origin + self.api_prefix
            comments = []
            for comment in self.comments:
                item = self._comment_json(comment, base)
                item.update(
                    repository=comment.repository,
                    issue_number=comment.issue_number,
                    minimized=comment.minimized,
                )
                comments.append(item)
            return {
                "api_url": self.api_url,
                "graphql_url": self.graphql_url,
                "login": self.login,
                "repositories": sorted(self.repositories),
                "pulls": [self._pull_json(p, base) for p in self.pulls],
                "comments": comments,
                "log": [asdict(r) for r in self.log],
            }

    def load_state(self, state: dict[str, Any]) -> None:
        """Seed pulls and comments from a dict shaped like :meth:`state` (extra keys ignored)."""
        for repo in state.get("repositories", []):
            self.add_repository(repo)
        for pull in state.get("pulls", []):
            repo = pull.get("repository") or pull.get("base", {}).get("repo", {}).get("full_name")
            self.add_pull(
                int(pull["number"]),
                pull.get("head_sha") or pull.get("head", {}).get("sha"),
                repository=repo,
                state=pull.get("state", "open"),
            )
        for comment in state.get("comments", []):
            self.add_comment(
                int(comment["issue_number"]),
                comment["body"],
                login=comment.get("login") or comment.get("user", {}).get("login"),
                minimized=bool(comment.get("minimized", False)),
                repository=comment.get("repository"),
            )

    def dump(self) -> None:
        """Write :meth:`state` to ``state_path`` (if set), atomically."""
        if self.state_path is None:
            return
        tmp = self.state_path.with_name(self.state_path.name + ".tmp")
        tmp.write_text(json.dumps(self.state(), indent=1), encoding="utf-8")
        # Atomic replace: a reader in another process never sees a half-written file.
        os.replace(tmp, self.state_path)

    # -- request handling --------------------------------------------------------------------

    def handle(self, method: str, raw_path: str, headers: Any, raw_body: bytes) -> _Response | None:
        """Answer one request; ``None`` means "drop the connection"."""
        split = urlsplit(raw_path)
        query = {k: v[-1] for k, v in parse_qs(split.query, keep_blank_values=True).items()}
        if split.path == self.graphql_path:
            path: str | None = "/graphql"
        elif self.api_prefix and not split.path.startswith(self.api_prefix + "/"):
            path = None
        else:
            path = split.path[len(self.api_prefix) :]
        body: Any = None
        bad_json = False
        if raw_body:
            try:
                body = json.loads(raw_body)
            except ValueError:
                bad_json = True
        host = headers.get("Host") or f"127.0.0.1:{self.port}"
        base = f"http://{host}{self.api_prefix}"

        with self._lock:
            fault = None
            if path is None:
                response: _Response | None = _error(404, "Not Found")
            elif not self._authorized(headers.get("Authorization", "")):
                response = _error(401, "Bad credentials")
            else:
                fault = next((f for f in self.faults if f.applies(method, path)), None)
                if fault is not None and not fault.apply_then_fail:
                    response = None
                elif bad_json:
                    response = _error(400, "Problems parsing JSON")
                else:
                    response = self._route(method, path, query, body, base)
                if fault is not None:
                    response = self._fault_response(fault)
            self.log.append(
                LoggedRequest(
                    method=method,
                    path=path if path is not None else split.path,
                    query=query,
                    status=response.status if response is not None else 0,
                    body=body,
                    raw_path=raw_path,
                    fault=fault is not None,
                )
            )
            self.dump()
            return response

    def _authorized(self, header: str) -> bool:
        scheme, _, value = header.partition(" ")
        return scheme.lower() in ("token", "bearer") and value.strip() == self.token

    @staticmethod
    def _fault_response(fault: Fault) -> _Response | None:
        if fault.status == 0:
            return None
        headers = {"Retry-After": fault.retry_after} if fault.retry_after is not None else {}
        if fault.raw_body is not None:
            return _Response(fault.status, headers=headers, raw=fault.raw_body.encode())
        response = _error(fault.status, fault.message)
        response.headers.update(headers)
        return response

    def _route(
        self, method: str, path: str, query: dict[str, str], body: Any, base: str
    ) -> _Response:
        if path == "/graphql":
            if method != "POST":
                return _error(404, "Not Found")
            return self._graphql(body)
        for route_method, pattern, handler in self._routes:
            match = pattern.fullmatch(path)
            if match and route_method == method:
                params = match.groupdict()
                repo = f"{params.pop('owner', '')}/{params.pop('repo', '')}"
                if repo != "/" and repo not in self.repositories:
                    return _error(404, "Not Found")
                return handler(repo=repo, query=query, body=body, base=base, **params)
        return _error(404, "Not Found")

    # -- endpoints ---------------------------------------------------------------------------

    def _get_user(self, **_: Any) -> _Response:
        if self.user_forbidden:
            return _error(403, "Resource not accessible by integration")
        return _Response(200, self._user_json(self.author_login, "Bot" if self.bot else "User"))

    def _get_repo(self, *, repo: str, base: str, **_: Any) -> _Response:
        owner, name = repo.split("/")
        return _Response(
            200,
            {
                "id": zlib.crc32(repo.encode()) % 10_000_000,
                "node_id": "R_" + base64.b64encode(repo.encode()).decode().rstrip("="),
                "name": name,
                "full_name": repo,
                "owner": self._user_json(owner, "Organization"),
                "private": False,
                "html_url": f"{self.html_base}/{repo}",
                "url": f"{base}/repos/{repo}",
                "default_branch": "main",
            },
        )

    def _get_pull(self, *, repo: str, number: str, base: str, **_: Any) -> _Response:
        pull = self._find_pull(repo, int(number))
        if pull is None:
            return _error(404, "Not Found")
        return _Response(200, self._pull_json(pull, base))

    def _list_pulls(self, *, repo: str, query: dict[str, str], base: str, **_: Any) -> _Response:
        state = query.get("state", "open")
        if state not in ("open", "closed", "all"):
            return _error(422, "Validation Failed")
        pulls = [p for p in self.pulls if p.repository == repo and state in ("all", p.state)]
        # GitHub's default order for this endpoint: newest first.
        pulls.sort(key=lambda p: p.number, reverse=True)
        items = [self._pull_json(p, base) for p in pulls]
        return self._page(items, query, f"{base}/repos/{repo}/pulls")

    def _list_comments(
        self, *, repo: str, number: str, query: dict[str, str], base: str, **_: Any
    ) -> _Response:
        if self._find_pull(repo, int(number)) is None:
            return _error(404, "Not Found")
        items = [
            self._comment_json(c, base)
            for c in self.comments
            if (c.repository, c.issue_number) == (repo, int(number))
        ]
        return self._page(items, query, f"{base}/repos/{repo}/issues/{number}/comments")

    def _create_comment(
        self, *, repo: str, number: str, body: Any, base: str, **_: Any
    ) -> _Response:
        if self._find_pull(repo, int(number)) is None:
            return _error(404, "Not Found")
        invalid = self._validate_body(body)
        if invalid is not None:
            return invalid
        comment = self._new_comment(
            repo, int(number), body["body"], self.author_login, "Bot" if self.bot else "User"
        )
        payload = self._comment_json(comment, base)
        return _Response(201, payload, {"Location": payload["url"]})

    def _update_comment(self, *, repo: str, id: str, body: Any, base: str, **_: Any) -> _Response:
        comment = self._find_comment(int(id), repo)
        if comment is None:
            return _error(404, "Not Found")
        invalid = self._validate_body(body)
        if invalid is not None:
            return invalid
        comment.body = body["body"]
        comment.updated_at = _now()
        return _Response(200, self._comment_json(comment, base))

    def _delete_comment(self, *, repo: str, id: str, **_: Any) -> _Response:
        comment = self._find_comment(int(id), repo)
        if comment is None:
            return _error(404, "Not Found")
        self.comments.remove(comment)
        return _Response(204)

    def _graphql(self, body: Any) -> _Response:
        if not isinstance(body, dict) or not isinstance(body.get("query"), str):
            return _Response(
                200,
                {
                    "errors": [
                        {"message": "A query attribute must be specified and must be a string."}
                    ]
                },
            )
        query: str = body["query"]
        variables = body.get("variables") or {}
        data: dict[str, Any] = {}
        errors: list[dict[str, Any]] = []
        if re.search(r"\bviewer\s*\{[^}]*\blogin\b", query):
            data["viewer"] = {"login": self.login}
        node = re.search(r'\bnode\s*\(\s*id\s*:\s*(?:\$(\w+)|"([^"]*)")\s*\)', query)
        if node is not None:
            node_id = variables.get(node.group(1)) if node.group(1) else node.group(2)
            comment = next((c for c in self.comments if c.node_id == node_id), None)
            if comment is None:
                data["node"] = None
                errors.append(
                    {
                        "type": "NOT_FOUND",
                        "path": ["node"],
                        "message": f"Could not resolve to a node with the global id of '{node_id}'",
                    }
                )
            else:
                fields: dict[str, Any] = {}
                if "isMinimized" in query:
                    fields["isMinimized"] = comment.minimized
                if "minimizedReason" in query:
                    fields["minimizedReason"] = comment.minimized_reason
                if re.search(r"\bid\b(?!\s*:)", query):
                    fields["id"] = comment.node_id
                data["node"] = fields
        if not data:
            return _Response(200, {"errors": [{"message": "fakegithub: unsupported query"}]})
        payload: dict[str, Any] = {"data": data}
        if errors:
            payload["errors"] = errors
        return _Response(200, payload)

    # -- helpers -----------------------------------------------------------------------------

    @staticmethod
    def _validate_body(body: Any) -> _Response | None:
        if not isinstance(body, dict) or not isinstance(body.get("body"), str):
            return _error(
                422,
                'Invalid request.\n\n"body" wasn\'t supplied.',
            )
        if len(body["body"]) > MAX_BODY:
            return _error(
                422,
                "Validation Failed",
                errors=[
                    {
                        "resource": "IssueComment",
                        "code": "custom",
                        "field": "body",
                        "message": f"body is too long (maximum is {MAX_BODY} characters)",
                    }
                ],
            )
        return None

    @staticmethod
    def _page(items: list[dict[str, Any]], query: dict[str, str], url: str) -> _Response:
        try:
            per_page = min(max(int(query.get("per_page", "30")), 1), 100)
            page = max(int(query.get("page", "1")), 1)
        except ValueError:
            return _error(422, "Validation Failed")
        last = max((len(items) + per_page - 1) // per_page, 1)
        start = (page - 1) * per_page
        rels: list[tuple[str, int]] = []
        if page > 1:
            rels += [("prev", min(page - 1, last)), ("first", 1)]
        if page < last:
            rels += [("next", page + 1), ("last", last)]
        headers = {}
        if rels:
            others = {k: v for k, v in query.items() if k not in ("page", "per_page")}

            def link(n: int) -> str:
                return f"{url}?{urlencode({**others, 'per_page': per_page, 'page': n})}"

            headers["Link"] = ", ".join(f'<{link(n)}>; rel="{rel}"' for rel, n in rels)
        return _Response(200, items[start : start + per_page], headers)

    def _new_comment(self, repo: str, number: int, body: str, login: str, kind: str) -> _Comment:
        self._next_id += 1
        stamp = _now()
        comment = _Comment(
            id=self._next_id,
            repository=repo,
            issue_number=number,
            body=body,
            login=login,
            user_type=kind,
            created_at=stamp,
            updated_at=stamp,
        )
        self.comments.append(comment)
        return comment

    def _find_comment(self, comment_id: int, repo: str | None = None) -> _Comment | None:
        return next(
            (
                c
                for c in self.comments
                if c.id == comment_id and (repo is None or c.repository == repo)
            ),
            None,
        )

    def _find_pull(self, repo: str, number: int) -> _Pull | None:
        return next((p for p in self.pulls if (p.repository, p.number) == (repo, number)), None)

    def _user_json(self, login: str, kind: str) -> dict[str, Any]:
        uid = zlib.crc32(login.encode()) % 100_000_000
        return {
            "login": login,
            "id": uid,
            "node_id": "U_" + base64.b64encode(login.encode()).decode().rstrip("="),
            "type": kind,
            "site_admin": False,
            "html_url": f"{self.html_base}/{login.removesuffix('[bot]')}",
        }

    def _comment_json(self, comment: _Comment, base: str) -> dict[str, Any]:
        repo = comment.repository
        return {
            "id": comment.id,
            "node_id": comment.node_id,
            "url": f"{base}/repos/{repo}/issues/comments/{comment.id}",
            "html_url": f"{self.html_base}/{repo}/pull/{comment.issue_number}"
            f"#issuecomment-{comment.id}",
            "issue_url": f"{base}/repos/{repo}/issues/{comment.issue_number}",
            "body": comment.body,
            "user": self._user_json(comment.login, comment.user_type),
            "created_at": comment.created_at,
            "updated_at": comment.updated_at,
            "author_association": "NONE" if comment.user_type == "Bot" else "CONTRIBUTOR",
            "performed_via_github_app": None,
        }

    def _pull_json(self, pull: _Pull, base: str) -> dict[str, Any]:
        repo = pull.repository
        return {
            "id": 500_000 + pull.number,
            "node_id": "PR_" + base64.b64encode(f"{repo}#{pull.number}".encode()).decode(),
            "number": pull.number,
            "state": pull.state,
            "title": pull.title,
            "user": self._user_json(pull.login, "User"),
            "html_url": f"{self.html_base}/{repo}/pull/{pull.number}",
            "url": f"{base}/repos/{repo}/pulls/{pull.number}",
            "created_at": pull.created_at,
            "head": {
                "ref": pull.head_ref,
                "sha": pull.head_sha,
                "repo": {"full_name": pull.head_repository},
            },
            "base": {"ref": pull.base_ref, "sha": pull.base_sha, "repo": {"full_name": repo}},
        }


class _Handler(BaseHTTPRequestHandler):
    # HTTP/1.1 keep-alive, like api.github.com: PyGithub reuses one connection across calls.
    protocol_version = "HTTP/1.1"
    # Headers and body go out as separate writes; with Nagle on, the body then waits for the
    # client's delayed ACK (~40 ms a request).
    disable_nagle_algorithm = True
    timeout = 30
    server_version = "fakegithub"
    sys_version = ""

    def _serve(self) -> None:
        fake: FakeGitHub = self.server.fake  # type: ignore[attr-defined]
        length = int(self.headers.get("Content-Length") or 0)
        raw_body = self.rfile.read(length) if length else b""
        response = fake.handle(self.command, self.path, self.headers, raw_body)
        if response is None:
            self.close_connection = True
            return
        if response.raw is not None:
            data = response.raw
        elif response.payload is None:
            data = b""
        else:
            data = json.dumps(response.payload).encode()
        self.send_response(response.status)
        self.send_header("Content-Type", "application/json; charset=utf-8")
        self.send_header("X-GitHub-Request-Id", f"FAKE:{len(fake.log)}")
        self.send_header("X-RateLimit-Limit", "5000")
        self.send_header("X-RateLimit-Remaining", "4999")
        self.send_header("X-RateLimit-Reset", str(int(time.time()) + 3600))
        for name, value in response.headers.items():
            self.send_header(name, value)
        if response.status != 204:
            self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if response.status != 204:
            self.wfile.write(data)

    do_GET = do_POST = do_PATCH = do_DELETE = do_PUT = _serve

    def log_message(self, format: str, *args: Any) -> None:
        """Silence the default stderr access log; the fake keeps its own :attr:`log`."""


def main(argv: list[str] | None = None) -> int:
    """Serve a fake GitHub until killed, dumping state after every request."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--state", required=True, help="JSON file rewritten after each request")
    parser.add_argument("--token", required=True)
    parser.add_argument("--login", default="github-actions")
    parser.add_argument("--no-bot", action="store_true", help="authors read LOGIN, not LOGIN[bot]")
    parser.add_argument("--repository", default="acme/memory")
    parser.add_argument("--pr", action="append", default=[], help="N or N:HEAD_SHA (repeatable)")
    parser.add_argument("--api-prefix", default="", help="e.g. /api/v3 for GitHub Enterprise")
    args = parser.parse_args(argv)

    fake = FakeGitHub(
        token=args.token,
        login=args.login,
        bot=not args.no_bot,
        repository=args.repository,
        api_prefix=args.api_prefix,
        host=args.host,
        port=args.port,
    )
    state_path = Path(args.state)
    if state_path.is_file() and state_path.stat().st_size:
        fake.load_state(json.loads(state_path.read_text(encoding="utf-8")))
    for spec in args.pr:
        number, _, sha = spec.partition(":")
        fake.add_pull(int(number), sha or None)
    fake.state_path = state_path
    fake.dump()

    def _terminate(signum: int, frame: object) -> None:
        raise SystemExit(0)

    signal.signal(signal.SIGTERM, _terminate)
    print(f"fakegithub listening on {fake.api_url}", flush=True)
    try:
        fake.serve_forever()
    except (KeyboardInterrupt, SystemExit):
        pass
    finally:
        fake.stop()
        fake.dump()
    return 0


if __name__ == "__main__":
    sys.exit(main())
