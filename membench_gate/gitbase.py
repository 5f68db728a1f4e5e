"""The base commit a run is compared with, and the bytes of a file at that commit.

The gate must read the baseline committed on the base branch, never the one a pull request brings,
so everything here is about finding the right commit (DESIGN.md §8 "Base commit"), fetching it
when a shallow CI clone lacks it, and reading a blob from it. This is the only module that talks
to git: every GitPython error is turned into a one-line ``GateError`` before it leaves.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any, Literal

from membench_gate.errors import GateError
from membench_gate.results import load_json

try:
    import git
except ImportError as exc:  # GitPython refuses to import at all when no git executable is found
    raise GateError(f"cannot use git: {str(exc).strip().splitlines()[0]}") from exc

BaseHow = Literal[
    "explicit", "merge-commit-parent", "event-base-sha", "remote-default-branch", "local-branch"
]

ZERO_SHA = "0" * 40
_FULL_SHA = re.compile(r"[0-9a-f]{40}")
_PR_EVENTS = ("pull_request", "pull_request_target")


@dataclass(frozen=True)
class BaseCommit:
    """The commit whose committed baseline this run is compared with, and how it was found.

    ``sha`` is the full 40-hex sha; ``ref`` a human label of what was used (the ``--base-ref``
    text, ``HEAD^1``, ``origin/main``, ``main``, the event's base ref); ``how`` one of
    ``explicit``, ``merge-commit-parent``, ``event-base-sha``, ``remote-default-branch``,
    ``local-branch`` (the ``base.how`` of the verdict).
    """

    sha: str
    ref: str
    how: BaseHow


def repo_root(path: Path) -> Path:
    """Return the top of the git work tree containing ``path`` (a file or a directory).

    Raises ``GateError`` when ``path`` does not exist, is not inside a git repository, or is in a
    bare repository (there is no working-tree baseline to compare there).
    """
    with _open(path) as repo:
        return Path(repo.working_tree_dir)


def head_sha(repo: Path) -> str:
    """Return the full sha of HEAD in the repository containing ``repo``.

    Raises ``GateError`` when HEAD has no commit yet.
    """
    with _open(repo) as r:
        sha = _rev(r, "HEAD")
        if sha is None:
            raise GateError(f"HEAD of {r.working_tree_dir} has no commit yet")
        return sha


def resolve_base(
    repo: Path, base_ref: str | None = None, env: Mapping[str, str] | None = None,
    tried: list[str] | None = None,
) -> BaseCommit | None:
    """Find the base commit of this run, in the order of DESIGN.md §8, fetching it if missing.

    ``env`` (default ``os.environ``) supplies ``GITHUB_EVENT_NAME``, ``GITHUB_EVENT_PATH`` (the
    JSON event payload) and ``GITHUB_SHA``. The first rule that applies wins:

    1. ``base_ref`` (any revision git understands; an empty string counts as not given) →
       exactly that commit, ``explicit``, with no merge-base. A full sha missing locally is
       fetched from origin; a name git does not know here (``main`` or ``origin/main``) is
       taken as origin's branch of that name, fetched if absent, since a CI checkout has no
       local branches.
    2. ``pull_request``/``pull_request_target`` and HEAD is GitHub's merge commit (two parents,
       and HEAD equals ``GITHUB_SHA`` when that is set) → its first parent,
       ``merge-commit-parent``. The parents are read from the raw commit object because a
       depth-1 clone hides them from history walks; the parent is fetched on demand.
    3. the same events otherwise (HEAD is the PR head) → ``pull_request.base.sha``,
       ``event-base-sha``.
    4. ``merge_group`` → ``merge_group.base_sha``, ``event-base-sha``.
    5. ``push`` → ``before``, ``event-base-sha``, unless it is the zero sha (a new branch) or not
       an ancestor of HEAD (a force push; the payload's ``forced`` flag says so too). In a
       shallow clone git cannot see HEAD's history, so ``forced: false`` with ``after`` equal
       to HEAD is taken as proof of a fast-forward.
    6. the remote default branch: ``repository.default_branch`` from the payload as
       ``origin/<name>`` (fetched if the checkout did not bring it), else what
       ``refs/remotes/origin/HEAD`` points to, else ``origin/main``, ``origin/master`` →
       ``remote-default-branch``.
    7. the local branch ``main``, else ``master`` → ``local-branch``.
    8. origin's default branch as the remote itself names it (``git ls-remote --symref origin
       HEAD``), fetched (at depth 1 in a shallow clone) → ``remote-default-branch``: what a
       single-branch clone, ``workflow_dispatch`` or a ``push`` payload without
       ``repository.default_branch`` leaves as the only way to the base.

    For rules 6 and 7 the base is the merge-base of HEAD and that branch: the point this branch
    forked from, so a developer's changes are compared with what they started from and not with
    whatever landed on the default branch since. When the histories do not meet (unrelated
    branches, or history cut off by a shallow clone) the branch tip is used.

    Rules 3-5 need the event payload; without ``GITHUB_EVENT_PATH`` they are skipped (a bare
    ``GITHUB_EVENT_NAME`` cannot say which commit the base is).

    Returns None only when no base can exist: HEAD has no commit yet, or there is no ``origin``
    default branch and no local ``main``/``master`` (e.g. a fresh repository whose only branch
    has another name). On ``main`` itself with no remote the base is HEAD: the working tree is
    compared with the last commit, on the very first commit as on any later one. ``tried``,
    when given, receives one phrase per way that was tried and failed, for the error a CI run
    makes of a missing base.

    Raises ``GateError`` for an unknown ``base_ref``, a malformed payload, or a base commit that
    cannot be fetched.
    """
    env = os.environ if env is None else env
    with _open(repo) as r:
        if base_ref:
            return BaseCommit(_explicit(r, base_ref), base_ref, "explicit")
        head = _rev(r, "HEAD")
        if head is None:
            return None
        event = _Event.load(env)
        github_sha = env.get("GITHUB_SHA") or None
        notes = [] if tried is None else tried
        found = _from_event(r, head, event, github_sha)
        if found is None:
            notes.append(f"the event payload (GITHUB_EVENT_NAME={event.name or 'unset'}, "
                         f"payload {'given' if event.payload else 'absent'})")
            found = _from_branches(r, head, event)
        if found is None:
            notes.append("refs/remotes/origin/HEAD, origin/main, origin/master and the local "
                         "main/master branches")
            found = _from_remote_head(r, head, notes)
        return found


def read_file_at(repo: Path, sha: str, path: str) -> bytes | None:
    """Return the bytes of the repo-relative posix ``path`` at commit ``sha``, or None if absent.

    A commit missing locally (a shallow clone) is fetched from origin first. Raises
    ``GateError`` when the commit cannot be found or fetched, when ``path`` leaves the
    repository, or when it names a directory, symlink or submodule rather than a file.
    """
    rel = _repo_relative(path)
    with _open(repo) as r:
        _ensure_commit(r, sha)
        try:
            obj = r.commit(sha).tree / rel
        except KeyError:
            return None
        # A symlink's blob holds the link target: it would surface later as a baffling parse error.
        if obj.type != "blob" or obj.mode == git.Blob.link_mode:
            raise GateError(f"{rel} at commit {sha} is not a regular file")
        return obj.data_stream.read()


@dataclass(frozen=True)
class _Event:
    """The GitHub event of this run: its name and payload, and where the payload came from."""

    name: str
    payload: Mapping[str, Any]
    path: str

    @classmethod
    def load(cls, env: Mapping[str, str]) -> _Event:
        name = env.get("GITHUB_EVENT_NAME", "")
        path = env.get("GITHUB_EVENT_PATH", "")
        if not path:
            return cls(name, {}, "")
        try:
            data = Path(path).read_bytes()
        except OSError as exc:
            raise GateError(f"cannot read GitHub event payload {path}: {exc.strerror}") from exc
        payload = load_json(data, f"GitHub event payload {path}")
        if not isinstance(payload, dict):
            raise GateError(f"GitHub event payload {path} is not a JSON object")
        return cls(name, payload, path)

    def get(self, dotted: str) -> Any:
        """The value at a dotted path such as ``pull_request.base.sha``, or None."""
        value: Any = self.payload
        for key in dotted.split("."):
            if not isinstance(value, Mapping):
                return None
            value = value.get(key)
        return value

    def text(self, dotted: str) -> str | None:
        value = self.get(dotted)
        return value if isinstance(value, str) and value else None

    def sha(self, dotted: str) -> str:
        """A full commit sha the event must carry; its absence means a broken payload."""
        value = self.get(dotted)
        if not isinstance(value, str) or not _FULL_SHA.fullmatch(value):
            raise GateError(
                f"GitHub event payload {self.path}: {dotted} is missing or not a full commit sha"
            )
        return value


def _explicit(r: git.Repo, base_ref: str) -> str:
    if _FULL_SHA.fullmatch(base_ref.lower()):
        return _ensure_commit(r, base_ref.lower())
    sha = _rev(r, base_ref)
    if sha is not None:
        return sha
    where = f"--base-ref '{base_ref}' does not name a commit in {r.working_tree_dir}"
    if base_ref.startswith("-") or not _has_origin(r):
        raise GateError(where)
    # A CI checkout has only the ref it checked out: a branch name means origin's branch.
    branch = base_ref.removeprefix("origin/")
    tracking = f"refs/remotes/origin/{branch}"
    if _rev(r, tracking) is None:
        problem = _fetch(r, f"+refs/heads/{branch}:{tracking}")
        if problem is not None:
            raise GateError(f"{where} nor a branch on origin ({problem})")
    sha = _rev(r, tracking)
    if sha is None:
        raise GateError(f"{where} nor a branch on origin")
    return sha


def _from_event(r: git.Repo, head: str, event: _Event, github_sha: str | None) -> BaseCommit | None:
    if event.name in _PR_EVENTS:
        parents = [p.hexsha for p in r.commit(head).parents]
        if len(parents) == 2 and github_sha in (None, head):
            return BaseCommit(_ensure_commit(r, parents[0]), "HEAD^1", "merge-commit-parent")
        if event.path:  # a payload was given: it must say where the base is, even if empty
            sha = _ensure_commit(r, event.sha("pull_request.base.sha"))
            ref = event.text("pull_request.base.ref") or "pull_request.base.sha"
            return BaseCommit(sha, ref, "event-base-sha")
    elif event.name == "merge_group" and event.path:
        sha = _ensure_commit(r, event.sha("merge_group.base_sha"))
        ref = event.text("merge_group.base_ref") or "merge_group.base_sha"
        return BaseCommit(sha, ref, "event-base-sha")
    elif event.name == "push" and event.path:
        return _from_push(r, head, event)
    return None


def _from_push(r: git.Repo, head: str, event: _Event) -> BaseCommit | None:
    before = event.sha("before")
    # No fetch for these: a new branch has no `before`, a force push's is not an ancestor.
    if before == ZERO_SHA or event.get("forced") is True:
        return None
    _ensure_commit(r, before)
    fast_forward = _is_ancestor(r, before, head) or (
        _is_shallow(r) and event.get("forced") is False and event.get("after") == head
    )
    if not fast_forward:
        return None
    return BaseCommit(before, event.text("ref") or "before", "event-base-sha")


def _from_branches(r: git.Repo, head: str, event: _Event) -> BaseCommit | None:
    remote_ref = _remote_default_branch(r, event)
    if remote_ref is not None:
        label = remote_ref.removeprefix("refs/remotes/")
        return BaseCommit(_fork_point(r, head, remote_ref), label, "remote-default-branch")
    for name in ("main", "master"):
        if _rev(r, f"refs/heads/{name}") is not None:
            return BaseCommit(_fork_point(r, head, f"refs/heads/{name}"), name, "local-branch")
    return None


def _from_remote_head(r: git.Repo, head: str, notes: list[str]) -> BaseCommit | None:
    """Ask origin which branch is its default and fetch it: the last way to a base."""
    if not _has_origin(r):
        notes.append("no 'origin' remote to ask for its default branch")
        return None
    try:
        listing = r.git.ls_remote("--symref", "origin", "HEAD",
                                  env={"GIT_TERMINAL_PROMPT": "0"})
    except git.GitCommandError as exc:
        notes.append(f"`git ls-remote --symref origin HEAD` failed: {_stderr_line(exc)}")
        return None
    match = re.search(r"^ref: refs/heads/(\S+)\tHEAD$", listing, re.MULTILINE)
    if match is None or match.group(1).startswith("-"):
        notes.append("`git ls-remote --symref origin HEAD` names no default branch")
        return None
    name = match.group(1)
    ref = f"refs/remotes/origin/{name}"
    problem = _fetch(r, f"+refs/heads/{name}:{ref}")
    if problem is not None or _rev(r, ref) is None:
        notes.append(f"fetching origin's default branch {name} failed: {problem or 'no commit'}")
        return None
    return BaseCommit(_fork_point(r, head, ref), f"origin/{name}", "remote-default-branch")


def _remote_default_branch(r: git.Repo, event: _Event) -> str | None:
    """The full ref of origin's default branch (``refs/remotes/origin/main``), or None."""
    if not _has_origin(r):
        return None
    name = event.text("repository.default_branch")
    if name is not None:
        ref = f"refs/remotes/origin/{name}"
        if _rev(r, ref) is None:
            # actions/checkout fetches only the ref it checks out, not the default branch.
            problem = _fetch(r, f"+refs/heads/{name}:{ref}")
            if problem is not None:
                raise GateError(f"cannot fetch default branch {name} from origin: {problem}")
        return ref
    try:
        target = r.git.symbolic_ref("--quiet", "refs/remotes/origin/HEAD")
    except git.GitCommandError:
        target = ""
    if target and _rev(r, target) is not None:
        return target
    for ref in ("refs/remotes/origin/main", "refs/remotes/origin/master"):
        if _rev(r, ref) is not None:
            return ref
    return None


def _fork_point(r: git.Repo, head: str, ref: str) -> str:
    try:
        return r.git.merge_base(head, ref)
    except git.GitCommandError:
        return r.git.rev_parse("--verify", f"{ref}^{{commit}}")


def _rev(r: git.Repo, rev: str) -> str | None:
    """The commit sha ``rev`` names here, or None when it names none (or is not present)."""
    # Text from users must never reach git as an option.
    if rev.startswith("-"):
        return None
    try:
        return r.git.rev_parse("--verify", "--quiet", f"{rev}^{{commit}}")
    except git.GitCommandError:
        return None


def _ensure_commit(r: git.Repo, sha: str) -> str:
    """Make sure commit ``sha`` is present, fetching it from origin if not; return its full sha."""
    found = _rev(r, sha)
    if found is not None:
        return found
    if not _FULL_SHA.fullmatch(sha):
        raise GateError(f"commit {sha} is not in {r.working_tree_dir}")
    if not _has_origin(r):
        raise GateError(
            f"base commit {sha} is not in {r.working_tree_dir} and there is no 'origin' remote"
            " to fetch it from"
        )
    problem = _fetch(r, sha)
    if problem is not None:
        raise GateError(f"cannot fetch base commit {sha} from origin: {problem}")
    found = _rev(r, sha)
    if found is None:
        raise GateError(f"cannot fetch base commit {sha} from origin: it is not a commit")
    return found


def _fetch(r: git.Repo, refspec: str) -> str | None:
    """Fetch ``refspec`` from origin; return None on success, else git's reason in one line."""
    args = ["--no-tags"]
    # --depth on a complete clone would make it shallow, cutting the history a developer has.
    if _is_shallow(r):
        args.append("--depth=1")
    try:
        # No credential prompt: in CI it would hang the job instead of failing it.
        r.git.fetch(*args, "origin", refspec, env={"GIT_TERMINAL_PROMPT": "0"})
    except git.GitCommandError as exc:
        return _stderr_line(exc)
    return None


def _is_ancestor(r: git.Repo, ancestor: str, descendant: str) -> bool:
    try:
        r.git.merge_base("--is-ancestor", ancestor, descendant)
    except git.GitCommandError:
        return False
    return True


def _is_shallow(r: git.Repo) -> bool:
    return r.git.rev_parse("--is-shallow-repository") == "true"


def _has_origin(r: git.Repo) -> bool:
    return any(remote.name == "origin" for remote in r.remotes)


def _repo_relative(path: str) -> str:
    rel = PurePosixPath(path)
    if rel.is_absolute() or ".." in rel.parts or not rel.parts:
        raise GateError(f"'{path}' is not a path inside the repository")
    return rel.as_posix()


def _stderr_line(exc: git.CommandError) -> str:
    """The line of git's stderr that says what went wrong."""
    # GitPython wraps stderr as "\n  stderr: '…'"; git ends some errors with hint lines (a
    # command to run), so the last fatal/error line explains best, else the last line.
    text = exc.stderr.strip().removeprefix("stderr: '").removesuffix("'")
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if not lines:
        return f"exit status {exc.status}"
    errors = [line for line in lines if line.startswith(("fatal:", "error:"))]
    return (errors or lines)[-1]


@contextmanager
def _open(path: Path) -> Iterator[git.Repo]:
    """Open the repository containing ``path``; any git failure inside becomes a ``GateError``."""
    start = path.parent if path.is_file() else path
    try:
        r = git.Repo(start, search_parent_directories=True)
    except git.NoSuchPathError as exc:
        raise GateError(f"{path} does not exist") from exc
    except git.InvalidGitRepositoryError as exc:
        raise GateError(f"{path} is not inside a git repository") from exc
    try:
        if r.bare:
            raise GateError(f"{path} is in a bare git repository, which has no work tree")
        yield r
    except git.CommandError as exc:
        raise GateError(
            f"`{' '.join(exc.command)}` failed in {r.working_tree_dir}: {_stderr_line(exc)}"
        ) from exc
    except (git.GitError, git.ODBError) as exc:
        detail = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise GateError(f"git failed in {r.working_tree_dir}: {detail}") from exc
    finally:
        r.close()
