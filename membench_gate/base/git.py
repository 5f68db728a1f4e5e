"""The base commit a run is compared with, and the bytes of a file at that commit.

The gate must read the baseline committed on the base branch, never the one a pull request brings,
so everything here is about finding the right commit (docs/gate.md, "Base commit"), fetching it
when a shallow CI clone lacks it, and reading a blob from it. This is the only module that talks
to git, and it talks to plain ``git``: one ``git cat-file --batch`` process answers every revision,
commit, tree and blob question of a check, so a check starts a handful of git processes and no git
library. Every git failure is turned into a one-line ``GateError`` before it leaves.

What git is shown is sealed too (docs/gate.md, "How a base ref resolves"): no replacement objects
and no grafts (they change what a sha holds and which commits are parents), none of the
variables that point git at another repository, and a branch name is looked up as exactly one
ref (``refs/remotes/origin/<name>``), never through git's guessing, where a tag comes first.
"""

from __future__ import annotations

import os
import posixpath
import re
import subprocess
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path, PurePosixPath
from typing import IO, Any, Literal, NamedTuple, Protocol, cast

from membench_gate.errors import GateError


class Context(Protocol):
    """What the base lookup reads of the run's environment (``ci.settings.Context`` is one):
    declared here so that the git layer knows nothing of where it came from."""

    @property
    def ci(self) -> bool: ...
    @property
    def event_name(self) -> str: ...
    @property
    def event_path(self) -> Path | None: ...
    @property
    def sha(self) -> str: ...
    @property
    def event(self) -> Mapping[str, Any]: ...


BaseHow = Literal[
    "explicit", "merge-commit-parent", "event-base-sha", "remote-default-branch", "local-branch"
]

ZERO_SHA = "0" * 40
_FULL_SHA = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")  # sha-1 or sha-256


def is_full_sha(text: str) -> bool:
    """Whether ``text`` is a full commit id, sha-1 (40 hex digits) or sha-256 (64): the one check
    the gate makes of a sha it is given (by git, the event payload or the GitHub API)."""
    return _FULL_SHA.fullmatch(text) is not None
_HEX = re.compile(r"[0-9a-fA-F]{4,}")
# The ancestry a --base-ref may add to what it names (HEAD~1, origin/main^2): git's own syntax,
# applied to the commit once it is found, never to a name.
_ANCESTRY = re.compile(r"(?:[~^][0-9]*)+\Z")
# What git refuses in a branch name (git check-ref-format), and a leading "-" (an option).
_NOT_A_BRANCH = re.compile(r"[\x00-\x20\x7f~^:?*\[\\]|\.\.|@\{|//|^[-/.]|/\.|\.lock(?:/|\Z)"
                           r"|[/.]\Z")
# Rule 5's branches, in the order they are tried; origin's only when there is an origin.
_ORIGIN_HEAD = "refs/remotes/origin/HEAD"
_ORIGIN_DEFAULTS = ("refs/remotes/origin/main", "refs/remotes/origin/master")
_LOCAL_DEFAULTS = ("refs/heads/main", "refs/heads/master")
_OBJECT_HEADER = re.compile(rb"([0-9a-f]{40,64}) ([a-z]+) ([0-9]+)\n")
_REGULAR_MODES = (b"100644", b"100755")
_TREE_MODE, _LINK_MODE = b"40000", b"120000"
_PR_EVENTS = ("pull_request", "pull_request_target")
# Object questions written to `git cat-file --batch` before its answers are read: 64 names
# (~100 bytes each) stay well under a pipe's 64 KiB, so writing never waits on unread answers.
_BATCH = 64
# How far a shallow pull request checkout is deepened, step by step, to find its merge-base.
_DEEPEN_STEPS = (50, 950)
_Failure = Callable[[str | None], GateError]  # the error for a failed fetch, given git's reason


class Version(NamedTuple):
    """A commit that changed a file, and the file's bytes at that commit (None: it deleted the
    file there). ``date`` is the commit date as git records it (ISO 8601, the committer's
    offset): a history says when a baseline landed, not when it was read."""

    sha: str
    date: str
    data: bytes | None


class BaseCommit(NamedTuple):
    """The commit whose committed baseline this run is compared with, and how it was found.

    ``sha`` is the full sha; ``ref`` a label of what was read: ``origin/main`` for origin's
    branch, ``main`` for a local branch (never a tag: none is read), ``HEAD`` or ``HEAD^1``, the
    sha given, the event's base ref; ``how`` one of
    ``explicit``, ``merge-commit-parent``, ``event-base-sha``, ``remote-default-branch``,
    ``local-branch`` (the ``base.how`` of the verdict). ``tip`` is the branch's tip when the
    base is where HEAD forked from it and that is not the tip: the branch moved on since, and
    its newer commits are not this change's.
    """

    sha: str
    ref: str
    how: BaseHow
    tip: str | None = None


def repo_root(path: Path) -> Path:
    """Return the top of the git work tree containing ``path`` (a file or a directory).

    Raises ``GateError`` when ``path`` does not exist, is not inside a git repository, or is in a
    bare repository (there is no working-tree baseline to compare there).
    """
    start = _start(path)
    done = _git(start, "rev-parse", "--is-shallow-repository", "--show-toplevel")
    return _toplevel(path, start, done)[1]


def head_sha(path: Path) -> str:
    """Return the full sha of HEAD in the work tree containing ``path`` (one ``git rev-parse``).

    Raises ``GateError`` outside a work tree and when HEAD has no commit yet.
    """
    return start_head_sha(path)()


def start_head_sha(path: Path) -> Callable[[], str]:
    """:func:`head_sha`, asked now and answered (or raised) when the returned function is
    called: what the caller does meanwhile overlaps git's start-up."""
    start = _start(path)
    asked = _spawn(start, "rev-parse", "--show-toplevel", "--verify", "--quiet", "HEAD^{commit}")

    def answer() -> str:
        done = _finish(asked)
        lines = done.stdout.splitlines()
        if done.returncode == 1 and len(lines) == 1:
            raise GateError(f"HEAD of {lines[0]} has no commit yet")
        if done.returncode != 0 or len(lines) != 2:
            raise _no_work_tree(path, start, done)
        return lines[1]

    return answer


def resolve_base(repo: Path, base_ref: str | None = None, context: Context | None = None,
                 tried: list[str] | None = None) -> BaseCommit | None:
    """Find the base commit of this run (see :meth:`Repo.resolve_base`)."""
    with open_repo(repo) as r:
        return r.resolve_base(base_ref, context, tried)


def file_history(repo: Path, sha: str, path: str, *, limit: int | None = None,
                 since: str | None = None) -> list[Version]:
    """The versions of ``path`` on the branch up to ``sha`` (see :meth:`Repo.file_history`)."""
    with open_repo(repo) as r:
        return r.file_history(sha, path, limit=limit, since=since)


def read_file_at(repo: Path, sha: str, path: str) -> bytes | None:
    """Return the bytes of ``path`` at commit ``sha`` (see :meth:`Repo.read_file`)."""
    with open_repo(repo) as r:
        return r.read_file(sha, path)


@contextmanager
def open_repo(path: Path, started: Started | None = None) -> Iterator[Repo]:
    """The git work tree containing ``path``; its git processes end with the block.
    ``started`` are its processes when they were started ahead (see :class:`Started`)."""
    repo = Repo(path, started)
    try:
        yield repo
    finally:
        repo.close()


class Started:
    """The three processes every base lookup asks, started together so their start-ups
    overlap: where the work tree is (``rev-parse``), which remotes it has (``remote``, read when
    first asked) and the object process (``cat-file --batch``; git finds the repository from any
    folder inside it).

    ``check --results`` starts them for the config's folder before it imports and validates
    anything, as ``check`` starts the adapter: they run while the gate imports. A :class:`Repo`
    for the same folder adopts them; :meth:`close` ends whatever was not adopted.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self.start = _start(path)
        self.remotes: subprocess.Popen[str] | None = None
        self.batch: subprocess.Popen[bytes] | None = None
        self.probe: subprocess.Popen[str] | None = _spawn(
            self.start, "rev-parse", "--is-shallow-repository", "--show-toplevel")
        try:
            self.remotes = _spawn(self.start, "remote")
            self.batch = _batch(self.start)
        except BaseException:
            self.close()
            raise

    def take(self) -> tuple[subprocess.Popen[str], subprocess.Popen[str] | None,
                            subprocess.Popen[bytes] | None]:
        """Hand the processes over to a :class:`Repo`, which ends them from then on."""
        probe, remotes, batch = self.probe, self.remotes, self.batch
        if probe is None:
            raise RuntimeError("these git processes were handed over already")
        self.probe = self.remotes = self.batch = None
        return probe, remotes, batch

    def close(self) -> None:
        """Stop and reap the processes not handed over to a :class:`Repo` (none once they
        were): a check that fails before its base lookup never waits for git."""
        for name in ("probe", "remotes", "batch"):
            process = getattr(self, name)
            setattr(self, name, None)
            if process is not None:
                process.kill()  # (only reads the repository: nothing is left half done)
                process.wait()
                for stream in (process.stdin, process.stdout, process.stderr):
                    if stream is not None:  # not read: a child of git's may still hold it
                        stream.close()


class Repo:
    """A git work tree, asked through plain ``git`` processes.

    Object questions (what a revision names, a commit's parents, a tree entry, a blob) all go to
    one long-lived ``git cat-file --batch``; only the work git cannot answer from objects (merge
    bases, fetches, the remote's default branch) starts a process of its own.
    """

    def __init__(self, path: Path, started: Started | None = None) -> None:
        if started is not None and started.path != path:  # started for another folder
            started.close()
            started = None
        started = started or Started(path)
        probe, self._remotes, self._batch = started.take()
        try:
            shallow, root = _toplevel(path, started.start, _finish(probe))
        except BaseException:
            self.close()
            raise
        self.root = root
        self.shallow = shallow == "true"
        self._origin: bool | None = None

    def close(self) -> None:
        """End the ``cat-file`` process (closing its input ends it)."""
        batch, self._batch = self._batch, None
        if batch is not None:
            cast(IO[bytes], batch.stdin).close()
            batch.wait()
            cast(IO[bytes], batch.stdout).close()
        remotes, self._remotes = self._remotes, None
        if remotes is not None:  # never asked: reaped all the same
            _finish(remotes)

    def resolve_base(self, base_ref: str | None = None, context: Context | None = None,
                     tried: list[str] | None = None) -> BaseCommit | None:
        """Find the base commit of this run, in the order of docs/gate.md ("Base commit"),
        fetching it if missing.

        ``context`` (default: none, as outside GitHub Actions) supplies the event name, its
        payload and ``GITHUB_SHA``. The first rule that applies wins:

        1. ``base_ref`` (an empty string counts as not given) → exactly that commit,
           ``explicit``, with no merge-base. It is a full sha (fetched from origin when
           missing), ``HEAD``, or a branch: ``origin/<name>`` or ``refs/remotes/origin/<name>``
           is origin's branch, fetched when this clone lacks it, as a CI checkout does; a bare
           ``<name>`` is origin's branch too when there is an origin (an ERROR when a local
           branch of that name points elsewhere), else the local branch; ``refs/heads/<name>``
           is the local branch. Any of them may end in ``~N``/``^N``. Never a tag, an
           abbreviated sha or any other revision syntax (see :meth:`_explicit`).
        2. ``pull_request``/``pull_request_target`` and HEAD is GitHub's merge commit (two
           parents, and HEAD equals ``GITHUB_SHA`` when that is set) → its first parent,
           ``merge-commit-parent``. The parents are read from the raw commit object because a
           depth-1 clone hides them from history walks; the parent is fetched on demand.
        3. the same events otherwise (HEAD is the PR head) → the merge-base of HEAD and
           ``pull_request.base.sha``, ``event-base-sha``: the payload names the base branch's
           tip, which may have moved on since the branch forked, and a pull request is never
           blamed for the base's newer changes (GitHub's merge commit of rule 2 holds them on
           both sides). A shallow clone is deepened until the two histories meet; when they
           do not, the tip is compared.
        4. ``merge_group`` → ``merge_group.base_sha``, ``event-base-sha``; ``push`` →
           ``before``, ``event-base-sha``, unless it is the zero sha (a new branch) or not an
           ancestor of HEAD (a force push; the payload's ``forced`` flag says so too). In a
           shallow clone git cannot see HEAD's history, so ``forced: false`` with ``after``
           equal to HEAD is taken as proof of a fast-forward.
        5. the remote default branch: ``repository.default_branch`` from the payload as
           ``origin/<name>`` (fetched if the checkout did not bring it), else what
           ``refs/remotes/origin/HEAD`` points to (a branch of origin), else ``origin/main``,
           ``origin/master``, each looked up as exactly that ref →
           ``remote-default-branch``; without one, the local branch ``main``, else ``master``
           → ``local-branch``. The base is the merge-base of HEAD and that branch: the point
           this branch forked from, so a developer's changes are compared with what they
           started from and not with whatever landed on the default branch since. When the
           histories do not meet (unrelated branches, or history cut off by a shallow clone)
           the branch tip is used.
        6. origin's default branch as the remote itself names it (``git ls-remote --symref
           origin HEAD``), fetched (at depth 1 in a shallow clone) → ``remote-default-branch``:
           what a single-branch clone, ``workflow_dispatch`` or a ``push`` payload without
           ``repository.default_branch`` leaves as the only way to the base.

        Rules 3 and 4 need the event payload; without one they are skipped (a bare event name
        cannot say which commit the base is).

        Returns None only when no base can exist: HEAD has no commit yet, or there is no
        ``origin`` default branch and no local ``main``/``master`` (e.g. a fresh repository
        whose only branch has another name). On ``main`` itself with no remote the base is
        HEAD: the working tree is compared with the last commit, on the very first commit as on
        any later one. ``tried``, when given, receives one phrase per way that was tried and
        failed, for the error a CI run makes of a missing base.

        Raises ``GateError`` for an unknown ``base_ref``, a malformed payload, or a base commit
        that cannot be fetched.
        """
        if base_ref:
            return BaseCommit(*self._explicit(base_ref), "explicit")
        head = self.rev("HEAD")
        if head is None:
            return None
        event = _Event.of(context)
        notes = [] if tried is None else tried
        found = self._from_event(head, event)
        if found is None:
            notes.append(f"the event payload (GITHUB_EVENT_NAME={event.name or 'unset'}, "
                         f"payload {'given' if event.payload else 'absent'})")
            found = self._from_branches(head, event)
        if found is None:
            notes.append("refs/remotes/origin/HEAD, origin/main, origin/master and the local "
                         "main/master branches")
            found = self._from_remote_head(head, notes)
        return found

    def read_file(self, sha: str, path: str) -> bytes | None:
        """Return the bytes of the repo-relative posix ``path`` at commit ``sha``, or None if
        absent.

        A commit missing locally (a shallow clone) is fetched from origin first. Raises
        ``GateError`` when the commit cannot be found or fetched, when ``path`` leaves the
        repository, or when it names a directory, symlink or submodule rather than a file.
        """
        rel = _repo_relative(path)
        sha = self.ensure_commit(sha)
        folder, _, name = rel.rpartition("/")
        tree = self._object(f"{sha}:{folder}")
        if tree is None or tree[1] != "tree":
            return None
        entry = _tree_entry(tree[2], name.encode(), len(sha) // 2)
        if entry is None:
            return None
        mode, oid = entry
        # A symlink's blob holds the link target: it would surface later as a baffling parse error.
        if mode not in _REGULAR_MODES:
            raise GateError(f"{rel} at commit {sha} is not a regular file")
        blob = self._object(oid)
        if blob is None:
            raise GateError(f"{rel} at commit {sha}: object {oid} is missing")
        return blob[2]

    def file_history(self, sha: str, path: str, *, limit: int | None = None,
                     since: str | None = None) -> list[Version]:
        """The commits that changed the repo-relative ``path`` on the branch whose tip is
        ``sha``, oldest first, each with the file's bytes there: at most the ``limit`` newest,
        and with ``since`` (a revision) only those after it (``since..sha``, as git reads it).

        The branch is walked by first parents: what the branch itself held, commit by commit (a
        pull request merged in shows as its merge commit, dated when it landed). One ``git log``
        lists the commits and the object process reads every version, asked in batches.
        Raises ``GateError`` when ``since`` names no commit or git fails.
        """
        rel = _repo_relative(path)
        sha = self.ensure_commit(sha)
        args = ["log", "--first-parent", "--no-show-signature", "--format=%H %cI"]
        if limit is not None:
            args.append(f"--max-count={limit}")
        args.append(sha)
        if since is not None:
            start = self.rev(since)
            if start is None:
                raise GateError(f"--since '{since}' does not name a commit in {self.root}")
            args.append(f"^{start}")
        done = _git(self.root, *args, "--", rel)
        if done.returncode != 0:
            raise GateError(f"`git log` of {rel} failed in {self.root}: {_stderr_line(done)}")
        commits = [line.split(" ", 1) for line in reversed(done.stdout.splitlines())]
        blobs = self._objects([f"{commit}:{rel}" for commit, _ in commits])
        return [Version(commit, date, blob[2] if blob is not None and blob[1] == "blob" else None)
                for (commit, date), blob in zip(commits, blobs, strict=True)]

    def read_tree(self, sha: str, path: str) -> dict[str, bytes]:
        """Every file under the repo-relative folder ``path`` at commit ``sha``, by its path
        relative to that folder (empty when the folder is absent), read as the work tree of that
        commit would read it: a symlink inside the repository is followed (a folder of shared
        fixtures linked in), one that leaves it is an error; submodules are left out."""
        sha = self.ensure_commit(sha)
        found: dict[str, bytes] = {}
        root = self._resolve(sha, _repo_relative(path))
        if root is None or root[0] != _TREE_MODE:
            return found
        pending = [("", root[1], root[2])]
        while pending:
            prefix, oid, where = pending.pop()
            tree = self._object(oid)
            assert tree is not None and tree[1] == "tree", where
            for mode, name, entry_oid in _tree_entries(tree[2], len(sha) // 2):
                rel = f"{where}/{name}"
                if mode == _LINK_MODE:
                    resolved = self._resolve(sha, rel)
                    if resolved is None:
                        continue  # a dangling link: nothing a work tree could read either
                    mode, entry_oid, rel = resolved
                if mode == _TREE_MODE:
                    pending.append((f"{prefix}{name}/", entry_oid, rel))
                elif mode in _REGULAR_MODES:
                    found[f"{prefix}{name}"] = self._blob(entry_oid, rel, sha)
        return found

    def _resolve(self, sha: str, rel: str, hops: int = 0) -> tuple[bytes, str, str] | None:
        """(mode, oid, resolved path) of the repo-relative ``rel`` at ``sha``, following
        symlinks within the repository; None when nothing is there."""
        parts = rel.split("/")
        mode, oid, done = _TREE_MODE, f"{sha}^{{tree}}", ""
        for index, part in enumerate(parts):
            tree = self._object(oid)
            if tree is None or tree[1] != "tree":
                return None
            entry = _tree_entry(tree[2], part.encode("utf-8", "surrogateescape"), len(sha) // 2)
            if entry is None:
                return None
            mode, oid = entry
            here = f"{done}/{part}" if done else part
            if mode == _LINK_MODE:
                if hops >= 16:
                    raise GateError(f"{here} at commit {sha}: too many levels of symlinks")
                target = self._blob(oid, here, sha).decode("utf-8", "surrogateescape")
                joined = posixpath.normpath(posixpath.join(posixpath.dirname(here), target,
                                                           *parts[index + 1:]))
                if posixpath.isabs(target) or joined == ".." or joined.startswith("../"):
                    raise GateError(f"{here} at commit {sha} is a symlink out of the repository")
                return self._resolve(sha, joined, hops + 1)
            done = here
        return mode, oid, done

    def _blob(self, oid: str, rel: str, sha: str) -> bytes:
        blob = self._object(oid)
        if blob is None:
            raise GateError(f"{rel} at commit {sha}: object {oid} is missing")
        return blob[2]

    def rev(self, rev: str) -> str | None:
        """The commit sha ``rev`` names here, or None when it names none (or is not present).

        For ``HEAD``, a full sha and those followed by ``~N``/``^N`` only: git reads any other
        name by guessing, a tag before a branch (branches are looked up with :meth:`_refs`).
        """
        # Text from users must never reach git as an option.
        if rev.startswith("-"):
            return None
        found = self._object(f"{rev}^{{commit}}")
        return None if found is None else found[0]

    def ensure_commit(self, sha: str) -> str:
        """Make sure commit ``sha`` (a full sha) is present, fetching it from origin if not;
        return it."""
        if not is_full_sha(sha):
            raise GateError(f"commit {sha} is not in {self.root}")
        found = self.rev(sha)
        if found is not None:
            if found != sha:  # a tag object's sha, or a sha-1 length prefix in a sha-256 repo
                raise GateError(f"{sha} is not a full commit sha in {self.root}")
            return found
        if not self.has_origin():
            raise GateError(f"base commit {sha} is not in {self.root} and there is no 'origin' "
                            "remote to fetch it from")
        problem = self._fetch(sha)
        if problem is None and self.rev(sha) == sha:
            return sha
        raise GateError(f"cannot fetch base commit {sha} from origin: "
                        f"{problem or 'it is not a commit'}")

    def has_origin(self) -> bool:
        """Whether there is an ``origin`` remote to fetch a missing base from (asked once)."""
        if self._origin is None:
            remotes, self._remotes = self._remotes, None
            done = _git(self.root, "remote") if remotes is None else _finish(remotes)
            if done.returncode != 0:
                raise GateError(f"`git remote` failed in {self.root}: {_stderr_line(done)}")
            self._origin = "origin" in done.stdout.split()
        return self._origin

    # -- the rules ---------------------------------------------------------------------------

    def _explicit(self, base_ref: str) -> tuple[str, str]:
        """The commit ``--base-ref`` names, and the label of what was read.

        ``HEAD``; a full sha; ``origin/<name>`` or ``refs/remotes/origin/<name>`` (origin's
        branch); ``refs/heads/<name>`` (the local branch); a bare ``<name>`` (origin's branch
        when there is an origin, else the local one); any of them followed by ``~N``/``^N``.
        Nothing else: git's own lookup of a name tries ``refs/tags/<name>`` before any branch,
        and whoever can push can push a tag; an abbreviated sha may be a branch's name too.
        """
        match = _ANCESTRY.search(base_ref)
        name, ancestry = ((base_ref[:match.start()], match.group()) if match and match.start()
                          else (base_ref, ""))
        where = f"--base-ref '{base_ref}'"
        if name == "HEAD":  # git reads HEAD itself before any ref of that name
            found = self.rev("HEAD")
            if found is None:
                raise GateError(f"{where}: HEAD of {self.root} has no commit yet")
            sha, label = found, "HEAD"
        elif is_full_sha(name.lower()):
            sha = label = self.ensure_commit(name.lower())
        else:
            sha, label = self._branch(name, where)
        if not ancestry:
            return sha, label
        found = self.rev(sha + ancestry)
        if found is None:
            raise GateError(f"{where} does not name a commit in {self.root}: {label} "
                            f"({sha[:12]}) has no {ancestry} here")
        return found, label + ancestry

    def _branch(self, name: str, where: str) -> tuple[str, str]:
        """(commit, label) of the branch a ``--base-ref`` names (``where`` quotes it)."""
        if name.startswith("refs/tags/"):
            raise GateError(f"{where} names the tag {name}: a base is a branch or a full commit "
                            "sha, never a tag (give the tag's full commit sha to compare with it)")
        if name.startswith(("origin/", "refs/remotes/origin/")):
            branch = name.removeprefix("refs/remotes/").removeprefix("origin/")
            if not _is_branch_name(branch):
                raise self._no_base(where)
            if not self.has_origin():
                raise GateError(f"{where} names a branch of origin, and {self.root} has no "
                                "'origin' remote")
            return self._origin_branch(branch, lambda problem: GateError(
                f"{where} is not a branch on origin" + (f" ({problem})" if problem else ""))
            ), f"origin/{branch}"
        if name.startswith("refs/heads/"):
            branch = name.removeprefix("refs/heads/")
            local = f"refs/heads/{branch}"
            sha = self._peeled(self._refs(local), local) if _is_branch_name(branch) else None
            if sha is None:
                raise GateError(f"{where} does not name a commit in {self.root}: there is no "
                                f"local branch {branch}")
            return sha, branch
        if name.startswith("refs/") or not _is_branch_name(name):
            raise self._no_base(where)
        return self._bare_branch(name, where)

    def _bare_branch(self, name: str, where: str) -> tuple[str, str]:
        """A bare ``name``: origin's branch when there is an origin, else the local branch.

        A local branch of the name that points elsewhere than origin's makes the name
        ambiguous: an error naming both, never a guess. A tag of the name is never read.
        """
        tracking, local, tag = (f"refs/remotes/origin/{name}", f"refs/heads/{name}",
                                f"refs/tags/{name}")
        origin = self.has_origin()
        refs = self._refs(*([tracking] if origin else []), local, tag)
        mine = self._peeled(refs, local)
        if not origin:
            if mine is None:
                raise self._no_branch(where, name, refs, None)
            return mine, name
        sha = self._origin_branch(
            name, lambda problem: self._no_branch(where, name, refs, problem), refs)
        if mine is not None and mine != sha:
            raise GateError(f"{where} is ambiguous: origin's branch {tracking} is {sha[:12]}, "
                            f"the local branch {local} is {mine[:12]}; give origin/{name} or "
                            f"refs/heads/{name}")
        return sha, f"origin/{name}"

    def _no_base(self, where: str) -> GateError:
        return GateError(f"{where} does not name a commit in {self.root}: a base is HEAD, a full "
                         "commit sha or a branch (<name>, origin/<name>, refs/heads/<name>)")

    def _no_branch(self, where: str, name: str, refs: Mapping[str, tuple[str, str]],
                   problem: str | None) -> GateError:
        """The error for a bare ``name`` that is no branch here (nor on origin, if any)."""
        text = f"{where} does not name a commit in {self.root}"
        if self.has_origin():
            text += " nor a branch on origin" + (f" ({problem})" if problem else "")
        if f"refs/tags/{name}" in refs:
            text += f"; refs/tags/{name} is a tag, never a base (give its full commit sha)"
        elif f"refs/heads/{name}" in refs:
            text += f"; the local branch is refs/heads/{name}"
        elif _HEX.fullmatch(name):
            text += "; an abbreviated sha is not a base: give the full commit sha"
        return GateError(text)

    def _from_event(self, head: str, event: _Event) -> BaseCommit | None:
        if event.name in _PR_EVENTS:
            parents = self._parents(head)
            if len(parents) == 2 and event.sha_of_run in (None, head):
                return BaseCommit(self.ensure_commit(parents[0]), "HEAD^1", "merge-commit-parent")
            if event.path:  # a payload was given: it must say where the base is, even if empty
                tip = self.ensure_commit(event.sha("pull_request.base.sha"))
                ref = event.text("pull_request.base.ref") or "pull_request.base.sha"
                return self._forked(head, tip, ref, "event-base-sha", deepen=True)
        elif event.name == "merge_group" and event.path:
            sha = self.ensure_commit(event.sha("merge_group.base_sha"))
            ref = event.text("merge_group.base_ref") or "merge_group.base_sha"
            return BaseCommit(sha, ref, "event-base-sha")
        elif event.name == "push" and event.path:
            return self._from_push(head, event)
        return None

    def _from_push(self, head: str, event: _Event) -> BaseCommit | None:
        before = event.sha("before")
        # No fetch for these: a new branch has no `before`, a force push's is not an ancestor.
        if before == ZERO_SHA or event.get("forced") is True:
            return None
        self.ensure_commit(before)
        fast_forward = self._is_ancestor(before, head) or (
            self.shallow and event.get("forced") is False and event.get("after") == head
        )
        if not fast_forward:
            return None
        return BaseCommit(before, event.text("ref") or "before", "event-base-sha")

    def _from_branches(self, head: str, event: _Event) -> BaseCommit | None:
        origin = self.has_origin()
        name = event.text("repository.default_branch") if origin else None
        if name is not None:
            if not _is_branch_name(name):
                raise GateError(f"GitHub event payload {event.path}: repository.default_branch "
                                f"{name!r} is not a branch name")
            # actions/checkout fetches only the ref it checks out, not the default branch.
            sha = self._origin_branch(name, lambda problem: GateError(
                f"cannot fetch default branch {name} from origin: "
                f"{problem or 'it is not a commit'}"))
            return self._forked(head, sha, f"origin/{name}", "remote-default-branch")
        refs = self._refs(*((_ORIGIN_HEAD, *_ORIGIN_DEFAULTS) if origin else ()), *_LOCAL_DEFAULTS)
        candidates: list[tuple[str, str, BaseHow]] = []  # (label, object id, how), in order
        oid, target = refs.get(_ORIGIN_HEAD, ("", ""))
        if target.startswith("refs/remotes/origin/"):  # origin/HEAD names a branch of origin
            candidates.append((target.removeprefix("refs/remotes/"), oid, "remote-default-branch"))
        candidates += [(ref.removeprefix("refs/remotes/"), refs[ref][0], "remote-default-branch")
                       for ref in _ORIGIN_DEFAULTS if ref in refs]
        candidates += [(ref.removeprefix("refs/heads/"), refs[ref][0], "local-branch")
                       for ref in _LOCAL_DEFAULTS if ref in refs]
        for label, oid, how in candidates:
            sha = self.rev(oid)
            if sha is not None:
                return self._forked(head, sha, label, how)
        return None

    def _from_remote_head(self, head: str, notes: list[str]) -> BaseCommit | None:
        """Ask origin which branch is its default and fetch it: the last way to a base."""
        if not self.has_origin():
            notes.append("no 'origin' remote to ask for its default branch")
            return None
        done = _git(self.root, "ls-remote", "--symref", "origin", "HEAD")
        if done.returncode != 0:
            notes.append(f"`git ls-remote --symref origin HEAD` failed: {_stderr_line(done)}")
            return None
        match = re.search(r"^ref: refs/heads/(\S+)\tHEAD$", done.stdout, re.MULTILINE)
        if match is None or not _is_branch_name(match.group(1)):
            notes.append("`git ls-remote --symref origin HEAD` names no default branch")
            return None
        name = match.group(1)
        ref = f"refs/remotes/origin/{name}"
        problem = self._fetch(f"+refs/heads/{name}:{ref}")
        sha = None if problem is not None else self._peeled(self._refs(ref), ref)
        if sha is None:
            notes.append(f"fetching origin's default branch {name} failed: {problem or 'no commit'}")
            return None
        return self._forked(head, sha, f"origin/{name}", "remote-default-branch")

    # -- refs --------------------------------------------------------------------------------

    def _refs(self, *names: str) -> dict[str, tuple[str, str]]:
        """``{ref: (object id, symref target or "")}`` of those full ref ``names`` that exist,
        each looked up as exactly that ref.

        ``git for-each-ref`` takes a full name as itself. A revision lookup does not: asked for
        ``refs/remotes/origin/main`` that is absent, git goes on to try
        ``refs/tags/refs/remotes/origin/main`` and more, and asked for ``main``, it takes
        ``refs/tags/main`` before any branch.
        """
        if not names:
            return {}
        done = _git(self.root, "for-each-ref", "--format=%(objectname) %(refname) %(symref)",
                    *names)
        if done.returncode != 0:
            raise GateError(f"`git for-each-ref` failed in {self.root}: {_stderr_line(done)}")
        found: dict[str, tuple[str, str]] = {}
        for line in done.stdout.splitlines():
            oid, _, rest = line.partition(" ")
            ref, _, target = rest.partition(" ")
            if ref in names:  # a name also matches the refs below it (refs/heads/main/x)
                found[ref] = (oid, target)
        return found

    def _peeled(self, refs: Mapping[str, tuple[str, str]], ref: str) -> str | None:
        """The commit the ``ref`` of a :meth:`_refs` answer points to, or None."""
        found = refs.get(ref)
        return None if found is None else self.rev(found[0])

    # -- fetching ----------------------------------------------------------------------------

    def _origin_branch(self, branch: str, error: _Failure,
                       refs: Mapping[str, tuple[str, str]] | None = None) -> str:
        """The commit of origin's ``branch``: ``refs/remotes/origin/<branch>`` and no other ref,
        fetched when this clone lacks it; ``error(problem)`` is the ``GateError`` raised when
        that fails (``problem`` None: fetched, but no commit). ``refs`` is a :meth:`_refs`
        answer that looked it up already."""
        tracking = f"refs/remotes/origin/{branch}"
        sha = self._peeled(self._refs(tracking) if refs is None else refs, tracking)
        if sha is not None:
            return sha
        problem = self._fetch(f"+refs/heads/{branch}:{tracking}")
        if problem is not None:
            raise error(problem)
        sha = self._peeled(self._refs(tracking), tracking)
        if sha is None:
            raise error(None)
        return sha

    def _fetch(self, refspec: str) -> str | None:
        """Fetch ``refspec`` from origin; return None on success, else git's reason in one line."""
        args = ["fetch", "--no-tags"]
        # --depth on a complete clone would make it shallow, cutting the history a developer has.
        if self.shallow:
            args.append("--depth=1")
        done = _git(self.root, *args, "origin", refspec)
        # The batch process may have looked up the fetched objects and refs before they existed.
        self.close()
        return None if done.returncode == 0 else _stderr_line(done)

    # -- history -----------------------------------------------------------------------------

    def _forked(self, head: str, tip: str, ref: str, how: BaseHow,
                deepen: bool = False) -> BaseCommit:
        """The base where HEAD forked from the branch ``ref`` whose tip is ``tip``, with the tip
        when the branch moved on since (see :meth:`_fork_point`)."""
        base = self._fork_point(head, tip, deepen)
        return BaseCommit(base, ref, how, tip if base != tip else None)

    def _fork_point(self, head: str, tip: str, deepen: bool = False) -> str:
        """Where HEAD forked from the branch whose tip is ``tip``: their merge-base, or the tip
        when the histories do not meet here (unrelated, or cut off by a shallow clone). With
        ``deepen``, a shallow clone is deepened from origin (a few steps, up to a thousand
        commits) until they meet: a CI checkout of a pull request's head has one commit of
        each."""
        if tip == head:  # on the branch's tip: it is its own merge-base
            return head
        done = _git(self.root, "merge-base", head, tip)
        steps = _DEEPEN_STEPS if deepen and self.shallow and self.has_origin() else ()
        for depth in steps:
            if done.returncode == 0:
                break
            fetched = _git(self.root, "fetch", "--no-tags", f"--deepen={depth}", "origin",
                           head, tip)
            self.close()  # the batch process may have read the shallow history before
            if fetched.returncode != 0:
                break
            done = _git(self.root, "merge-base", head, tip)
        return done.stdout.strip() if done.returncode == 0 else tip

    def _is_ancestor(self, ancestor: str, descendant: str) -> bool:
        return _git(self.root, "merge-base", "--is-ancestor", ancestor, descendant).returncode == 0

    def _parents(self, sha: str) -> list[str]:
        """A commit's parents, read from the raw object (a depth-1 clone hides them from
        history walks)."""
        found = self._object(sha)
        if found is None:
            return []
        header = found[2].split(b"\n\n", 1)[0]
        return [line[7:].decode() for line in header.split(b"\n") if line.startswith(b"parent ")]

    # -- the object process ------------------------------------------------------------------

    def _object(self, name: str) -> tuple[str, str, bytes] | None:
        """(oid, type, content) of the object ``name`` names, or None when it names none."""
        return self._objects([name])[0]

    def _objects(self, names: list[str]) -> list[tuple[str, str, bytes] | None]:
        """:meth:`_object` of each of ``names``, asked in batches: the questions of a batch are
        written at once and the answers read after, without a round trip each. A batch is
        small enough that its questions fit the pipe while git is busy answering."""
        found: list[tuple[str, str, bytes] | None] = []
        for at in range(0, len(names), _BATCH):
            batch = names[at:at + _BATCH]
            asked = [name for name in batch if "\n" not in name]
            if self._batch is None:
                self._batch = _batch(self.root)
            stdin = cast(IO[bytes], self._batch.stdin)
            stdout = cast(IO[bytes], self._batch.stdout)
            try:
                stdin.write(b"".join(name.encode("utf-8", "surrogateescape") + b"\n"
                                     for name in asked))
                stdin.flush()
            except OSError:
                raise GateError(f"`git cat-file --batch` ended early in {self.root}") from None
            for name in batch:
                found.append(self._answer(stdout) if "\n" not in name else None)
        return found

    def _answer(self, stdout: IO[bytes]) -> tuple[str, str, bytes] | None:
        """The object process's next answer."""
        try:
            line = stdout.readline()
        except OSError:
            line = b""
        if not line:
            raise GateError(f"`git cat-file --batch` ended early in {self.root}")
        match = _OBJECT_HEADER.fullmatch(line)
        if match is None:  # "<name> missing", "<name> ambiguous"
            return None
        content = stdout.read(int(match.group(3)) + 1)[:-1]  # the content, then a newline
        return match.group(1).decode(), match.group(2).decode(), content


class _Event(NamedTuple):
    """The GitHub event of this run: its name and payload, where the payload came from, and
    the commit the run is for (``GITHUB_SHA``)."""

    name: str
    payload: Mapping[str, Any]
    path: str
    sha_of_run: str | None

    @classmethod
    def of(cls, context: Context | None) -> _Event:
        if context is None:
            return cls("", {}, "", None)
        # The payload is read here, before any rule: a broken one is an error whatever HEAD is.
        payload = context.event
        return cls(context.event_name, payload, str(context.event_path or ""), context.sha or None)

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
        if not isinstance(value, str) or not is_full_sha(value):
            raise GateError(
                f"GitHub event payload {self.path}: {dotted} is missing or not a full commit sha"
            )
        return value


def _tree_entries(tree: bytes, oid_size: int) -> Iterator[tuple[bytes, str, str]]:
    """(mode, name, oid) of every entry of a raw tree object."""
    at = 0
    while at < len(tree):
        space = tree.index(b" ", at)
        nul = tree.index(b"\0", space)
        end = nul + 1 + oid_size
        yield tree[at:space], tree[space + 1:nul].decode("utf-8", "surrogateescape"), \
            tree[nul + 1:end].hex()
        at = end


def _tree_entry(tree: bytes, name: bytes, oid_size: int) -> tuple[bytes, str] | None:
    """(mode, oid) of the entry ``name`` in a raw tree object (``<mode> <name>\\0<oid>``…)."""
    at = 0
    while at < len(tree):
        space = tree.index(b" ", at)
        nul = tree.index(b"\0", space)
        end = nul + 1 + oid_size
        if tree[space + 1:nul] == name:
            return tree[at:space], tree[nul + 1:end].hex()
        at = end
    return None


def _start(path: Path) -> Path:
    """Where git is asked from: ``path`` itself, or its folder when it is a file."""
    if not path.exists():
        raise GateError(f"{path} does not exist")
    return path.parent if path.is_file() else path


def _toplevel(path: Path, start: Path, done: subprocess.CompletedProcess[str]
              ) -> tuple[str, Path]:
    """What ``git rev-parse --is-shallow-repository --show-toplevel`` said: whether the clone
    is shallow, and the top of the work tree."""
    lines = done.stdout.splitlines()
    if done.returncode != 0 or len(lines) != 2:
        raise _no_work_tree(path, start, done)
    return lines[0], Path(lines[1])


def _no_work_tree(path: Path, start: Path, done: subprocess.CompletedProcess[str]) -> GateError:
    """The error for a ``path`` git finds no work tree around."""
    if "must be run in a work tree" in done.stderr:
        return GateError(f"{path} is in a bare git repository, which has no work tree")
    if "not a git repository" in done.stderr:
        return GateError(f"{path} is not inside a git repository")
    return GateError(f"`git rev-parse` failed in {start}: {_stderr_line(done)}")


def _is_branch_name(name: str) -> bool:
    """Whether git would take ``name`` as the name of a branch (and it is no option)."""
    return bool(name) and name != "@" and _NOT_A_BRANCH.search(name) is None


def _repo_relative(path: str) -> str:
    rel = PurePosixPath(path)
    if rel.is_absolute() or ".." in rel.parts or not rel.parts:
        raise GateError(f"'{path}' is not a path inside the repository")
    return rel.as_posix()


# Variables that point git at other refs, objects or history than those of the repository it
# is run in: a git hook sets some (a gate run from one would read the outer repository), and
# an earlier step of a job could set any of them for the steps after it.
_REDIRECTING = ("GIT_DIR", "GIT_WORK_TREE", "GIT_COMMON_DIR", "GIT_INDEX_FILE",
                "GIT_OBJECT_DIRECTORY", "GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_NAMESPACE",
                "GIT_SHALLOW_FILE", "GIT_REPLACE_REF_BASE", "GIT_QUARANTINE_PATH")
# Replacement objects (`git replace`) swap what a sha holds and grafts (.git/info/grafts) which
# commits are parents: the gate reads neither. GIT_NO_REPLACE_OBJECTS yields to a repository's
# `core.useReplaceRefs = true`, so the setting is also given on the command line, which
# outranks every config file; GIT_GRAFT_FILE names a path that can never be a file.
_GIT = ("git", "-c", "core.useReplaceRefs=false")
_NO_GRAFTS = os.path.join(os.devnull, "grafts")


def _environment() -> dict[str, str]:
    env = {name: value for name, value in os.environ.items() if name not in _REDIRECTING}
    # No credential prompt: in CI it would hang the job instead of failing it.
    env.update(GIT_TERMINAL_PROMPT="0", GIT_NO_REPLACE_OBJECTS="1", GIT_GRAFT_FILE=_NO_GRAFTS)
    return env


def _git(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return _finish(_spawn(cwd, *args))


def _spawn(cwd: Path, *args: str) -> subprocess.Popen[str]:
    """Start ``git args`` in ``cwd``; :func:`_finish` collects what it said."""
    try:
        return subprocess.Popen([*_GIT, *args], cwd=cwd, stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                encoding="utf-8", errors="replace", env=_environment())
    except OSError as exc:
        raise GateError(f"cannot use git: {exc.strerror or exc}") from exc


def _finish(process: subprocess.Popen[str]) -> subprocess.CompletedProcess[str]:
    """Wait for a git process; its exit status and everything it wrote."""
    try:
        stdout, stderr = process.communicate()
    except BaseException:
        process.kill()
        process.wait()
        raise
    return subprocess.CompletedProcess(process.args, process.returncode, stdout, stderr)


def _batch(cwd: Path) -> subprocess.Popen[bytes]:
    """The long-lived ``git cat-file --batch`` that answers every object question."""
    try:
        return subprocess.Popen([*_GIT, "cat-file", "--batch"], cwd=cwd, stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                env=_environment())
    except OSError as exc:
        raise GateError(f"cannot use git: {exc.strerror or exc}") from exc


def _stderr_line(done: subprocess.CompletedProcess[str]) -> str:
    """The line of git's stderr that says what went wrong."""
    # git ends some errors with hint lines (a command to run), so the last fatal/error line
    # explains best, else the last line.
    lines = [line.strip() for line in done.stderr.splitlines() if line.strip()]
    if not lines:
        return f"exit status {done.returncode}"
    errors = [line for line in lines if line.startswith(("fatal:", "error:"))]
    return (errors or lines)[-1]
