"""Base commit resolution and reading blobs at a commit, against real git repositories."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from membench_gate.base.git import (
    ZERO_SHA,
    BaseCommit,
    Started,
    head_sha,
    read_file_at,
    repo_root,
    resolve_base,
)
from membench_gate.ci.settings import Context
from membench_gate.errors import GateError
from tests.support.gitrepos import (
    ISOLATED_ENV,
    LEAKY_VARS,
    actions_checkout,
    clone,
    commit,
    git,
    github_context,
    github_env,
    has_commit,
    init,
    write_event,
)

# Real git repositories and git processes in every test: most take a second or more.
pytestmark = pytest.mark.slow

BASELINE = "baselines/main.json"
MAIN_BASELINE = '{"cells": {"veto/default": {"recall": 0.9}}}\n'
BRANCH_BASELINE = '{"cells": {"veto/default": {"recall": 0.5}}}\n'
MISSING_SHA = "1234567890abcdef1234567890abcdef12345678"


@pytest.fixture(autouse=True)
def isolate_git(monkeypatch: pytest.MonkeyPatch) -> None:
    """Give gitbase's own git calls the same clean environment the helpers use."""
    for name in LEAKY_VARS:
        monkeypatch.delenv(name, raising=False)
    for name, value in ISOLATED_ENV.items():
        monkeypatch.setenv(name, value)


@dataclass(frozen=True)
class Upstream:
    """A bare origin as GitHub holds it, with the shas of its commits.

    main: m1 (blessed baseline) ── m2 (code only)
    feature: m1 ── f1 (changes the baseline)        refs/pull/1/head = f1
    develop: m2 ── d1                               refs/pull/1/merge = merge (m2, f1)
    """

    url: str
    m1: str
    m2: str
    f1: str
    d1: str
    merge: str


@pytest.fixture(scope="module")
def upstream(tmp_path_factory: pytest.TempPathFactory) -> Upstream:
    top = tmp_path_factory.mktemp("upstream")
    work = init(top / "work")
    m1 = commit(work, "bless baseline", {BASELINE: MAIN_BASELINE, "src.txt": "v1\n"})
    git(work, "checkout", "-q", "-b", "feature")
    f1 = commit(work, "PR changes the baseline", {BASELINE: BRANCH_BASELINE})
    git(work, "checkout", "-q", "main")
    m2 = commit(work, "code on main", {"src.txt": "v2\n"})
    git(work, "checkout", "-q", "-b", "develop")
    d1 = commit(work, "develop work", {"develop.txt": "d\n"})
    git(work, "checkout", "-q", "-b", "pr-merge", "main")
    git(work, "merge", "-q", "--no-ff", "-m", "Merge f1 into m2", "feature")
    merge = git(work, "rev-parse", "HEAD")

    origin = top / "origin.git"
    git(top, "init", "-q", "--bare", "-b", "main", str(origin))
    git(
        work,
        "push",
        "-q",
        str(origin),
        "main",
        "feature",
        "develop",
        "feature:refs/pull/1/head",
        "pr-merge:refs/pull/1/merge",
    )
    return Upstream(origin.as_uri(), m1, m2, f1, d1, merge)


def pr_payload(tmp_path: Path, base_sha: str) -> Path:
    return write_event(
        tmp_path / "event.json",
        {"pull_request": {"number": 1, "base": {"sha": base_sha, "ref": "main"}}},
    )


# Remote default branch (a developer's clone)


def test_pr_branch_is_compared_with_its_fork_point_on_origin_main(
    upstream: Upstream, tmp_path: Path
) -> None:
    repo = clone(upstream.url, tmp_path / "clone")
    git(repo, "checkout", "-q", "feature")

    base = resolve_base(repo)

    # main moved on to m2 since: the verdict names its tip beside the fork point compared.
    assert base == BaseCommit(upstream.m1, "origin/main", "remote-default-branch", upstream.m2)
    assert read_file_at(repo, base.sha, BASELINE) == MAIN_BASELINE.encode()
    assert (repo / BASELINE).read_text(encoding="utf-8") == BRANCH_BASELINE


@pytest.mark.parametrize(("case", "branch"), [("origin-head-develop", "develop"),
                                              ("no-origin-head", "main"),
                                              ("unrelated-history", "main")])
def test_the_remote_default_branch_is_origin_head_else_origin_main(
    upstream: Upstream, tmp_path: Path, case: str, branch: str
) -> None:
    repo = clone(upstream.url, tmp_path / "clone")
    if case == "origin-head-develop":
        git(repo, "remote", "set-head", "origin", "develop")
    elif case == "no-origin-head":
        git(repo, "checkout", "-q", "develop")
        git(repo, "remote", "set-head", "origin", "--delete")
    else:
        # No fork point with any branch: the default branch's tip stands in.
        git(repo, "checkout", "-q", "--orphan", "lone")
        commit(repo, "unrelated root", {"lone.txt": "x\n"})

    found = resolve_base(repo)
    assert found is not None and found[:3] == (
        upstream.m2, f"origin/{branch}", "remote-default-branch"
    )


def test_payload_default_branch_wins_and_is_fetched_when_absent(
    upstream: Upstream, tmp_path: Path
) -> None:
    repo = actions_checkout(upstream.url, tmp_path / "ci", "refs/heads/feature")
    event = write_event(tmp_path / "event.json", {"repository": {"default_branch": "develop"}})

    base = resolve_base(repo, context=github_context("workflow_dispatch", event, upstream.f1))

    # The depth-1 histories do not meet, so the fetched tip stands in for the fork point.
    assert base == BaseCommit(upstream.d1, "origin/develop", "remote-default-branch")
    assert git(repo, "rev-parse", "refs/remotes/origin/develop") == upstream.d1


# GitHub events


def test_github_merge_commit_uses_first_parent_fetched_on_demand(
    upstream: Upstream, tmp_path: Path
) -> None:
    repo = actions_checkout(upstream.url, tmp_path / "ci", "refs/pull/1/merge")
    assert not has_commit(repo, upstream.m2)
    # A stale base.sha in the payload shows the merge commit's own parent is what counts.
    context = github_context("pull_request", pr_payload(tmp_path, upstream.m1), upstream.merge)

    base = resolve_base(repo, context=context)

    assert base == BaseCommit(upstream.m2, "HEAD^1", "merge-commit-parent")
    assert has_commit(repo, upstream.m2)
    assert read_file_at(repo, base.sha, BASELINE) == MAIN_BASELINE.encode()
    assert (repo / BASELINE).read_text(encoding="utf-8") == BRANCH_BASELINE


def test_merge_commit_that_is_not_github_sha_is_a_pr_head(
    upstream: Upstream, tmp_path: Path
) -> None:
    # A PR head can itself be a merge (main merged into the branch): its parent is no base.
    repo = actions_checkout(upstream.url, tmp_path / "ci", "refs/pull/1/merge")
    context = github_context("pull_request", pr_payload(tmp_path, upstream.m1), sha=upstream.f1)

    assert resolve_base(repo, context=context) == BaseCommit(upstream.m1, "main", "event-base-sha")


def test_pr_head_checkout_uses_the_merge_base_with_the_payload_base_sha(
        upstream: Upstream, tmp_path: Path) -> None:
    """The payload names main's tip m2, which moved on after feature forked at m1: the head
    checkout (depth 1, neither m1 nor m2 present) is deepened until their histories meet, and
    m1 is compared, with m2 named as the tip."""
    repo = actions_checkout(upstream.url, tmp_path / "ci", "refs/pull/1/head")
    assert not has_commit(repo, upstream.m2) and not has_commit(repo, upstream.m1)
    context = github_context("pull_request", pr_payload(tmp_path, upstream.m2), upstream.merge)

    base = resolve_base(repo, context=context)

    assert base == BaseCommit(upstream.m1, "main", "event-base-sha", upstream.m2)
    assert read_file_at(repo, base.sha, BASELINE) == MAIN_BASELINE.encode()


def test_pr_head_checkout_on_the_base_tip_names_no_tip(upstream: Upstream, tmp_path: Path
                                                        ) -> None:
    repo = actions_checkout(upstream.url, tmp_path / "ci", "develop")
    context = github_context("pull_request", pr_payload(tmp_path, upstream.m2), upstream.d1)

    assert resolve_base(repo, context=context) == BaseCommit(upstream.m2, "main",
                                                              "event-base-sha")


def test_merge_group_uses_base_sha(upstream: Upstream, tmp_path: Path) -> None:
    # HEAD is a two-parent commit, as in a merge queue; only PR events take its first parent.
    repo = actions_checkout(upstream.url, tmp_path / "ci", "refs/pull/1/merge")
    event = write_event(
        tmp_path / "event.json",
        {"merge_group": {"base_sha": upstream.m1, "base_ref": "refs/heads/main"}},
    )

    base = resolve_base(repo, context=github_context("merge_group", event, upstream.merge))

    assert base == BaseCommit(upstream.m1, "refs/heads/main", "event-base-sha")


def test_environment_is_read_when_no_env_is_given(
    upstream: Upstream, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = clone(upstream.url, tmp_path / "clone")
    event = write_event(tmp_path / "event.json", {"merge_group": {"base_sha": upstream.m1}})
    for name, value in github_env("merge_group", event, upstream.m2).items():
        monkeypatch.setenv(name, value)

    assert resolve_base(repo, context=Context.from_env()) == BaseCommit(
        upstream.m1, "merge_group.base_sha", "event-base-sha")


def push_payload(tmp_path: Path, before: str, after: str, *, forced: bool = False) -> Path:
    return write_event(
        tmp_path / "event.json",
        {"ref": "refs/heads/main", "before": before, "after": after, "forced": forced},
    )


def test_push_uses_before(upstream: Upstream, tmp_path: Path) -> None:
    repo = clone(upstream.url, tmp_path / "clone")
    event = push_payload(tmp_path, upstream.m1, upstream.m2)

    base = resolve_base(repo, context=github_context("push", event, upstream.m2))

    assert base == BaseCommit(upstream.m1, "refs/heads/main", "event-base-sha")


def test_push_in_shallow_clone_fetches_before_of_a_fast_forward(
    upstream: Upstream, tmp_path: Path
) -> None:
    repo = clone(upstream.url, tmp_path / "clone", "--depth=1")
    assert not has_commit(repo, upstream.m1)
    event = push_payload(tmp_path, upstream.m1, upstream.m2)

    base = resolve_base(repo, context=github_context("push", event, upstream.m2))

    assert base == BaseCommit(upstream.m1, "refs/heads/main", "event-base-sha")
    assert read_file_at(repo, base.sha, BASELINE) == MAIN_BASELINE.encode()


@pytest.mark.parametrize("case", ["new-branch", "not-ancestor", "forced-shallow"])
def test_push_falls_through_to_remote_default_branch(
    upstream: Upstream, tmp_path: Path, case: str
) -> None:
    options = ("--depth=1",) if case == "forced-shallow" else ()
    repo = clone(upstream.url, tmp_path / "clone", *options)
    before = {"new-branch": ZERO_SHA, "not-ancestor": upstream.f1, "forced-shallow": upstream.m1}
    event = push_payload(tmp_path, before[case], upstream.m2, forced=case == "forced-shallow")

    base = resolve_base(repo, context=github_context("push", event, upstream.m2))

    assert base == BaseCommit(upstream.m2, "origin/main", "remote-default-branch")
    if case == "forced-shallow":
        assert not has_commit(repo, upstream.m1)


# Explicit --base-ref


@pytest.mark.parametrize("ref", ["feature", "origin/develop", "m1-sha"])
def test_explicit_base_ref_wins_over_the_event(
    upstream: Upstream, tmp_path: Path, ref: str
) -> None:
    repo = clone(upstream.url, tmp_path / "clone")
    ref = upstream.m1 if ref == "m1-sha" else ref
    expected = {"feature": upstream.f1, "origin/develop": upstream.d1, upstream.m1: upstream.m1}
    label = {"feature": "origin/feature", "origin/develop": "origin/develop"}.get(ref, ref)
    context = github_context("pull_request", pr_payload(tmp_path, upstream.m2), upstream.merge)

    assert resolve_base(repo, ref, context) == BaseCommit(expected[ref], label, "explicit")


@pytest.mark.parametrize("ref", ["main", "origin/main", "m1-sha"])
def test_explicit_base_missing_from_ci_checkout_is_fetched(
    upstream: Upstream, tmp_path: Path, ref: str
) -> None:
    repo = actions_checkout(upstream.url, tmp_path / "ci", "refs/pull/1/head")
    ref = upstream.m1 if ref == "m1-sha" else ref
    expected = upstream.m1 if ref == upstream.m1 else upstream.m2
    assert not has_commit(repo, expected)

    base = resolve_base(repo, ref)

    label = upstream.m1 if ref == upstream.m1 else "origin/main"  # what was read, not what was said
    assert base == BaseCommit(expected, label, "explicit")
    assert read_file_at(repo, base.sha, BASELINE) == MAIN_BASELINE.encode()


def test_fetch_keeps_a_complete_clone_complete(upstream: Upstream, tmp_path: Path) -> None:
    repo = clone(upstream.url, tmp_path / "clone", "--single-branch", "--branch", "main")
    assert not has_commit(repo, upstream.d1)

    resolve_base(repo, upstream.d1)

    assert git(repo, "rev-parse", "--is-shallow-repository") == "false"


@pytest.mark.parametrize("ref", ["no-such-branch", "--output=/dev/null"])
def test_unknown_base_ref_is_a_gate_error_naming_it(
    upstream: Upstream, tmp_path: Path, ref: str
) -> None:
    repo = clone(upstream.url, tmp_path / "clone")

    with pytest.raises(GateError, match=re.escape(f"--base-ref '{ref}' does not name a commit")):
        resolve_base(repo, ref)


def test_unfetchable_base_commit_is_a_gate_error_naming_it(
    upstream: Upstream, tmp_path: Path
) -> None:
    repo = clone(upstream.url, tmp_path / "clone", "--depth=1")
    context = github_context("pull_request", pr_payload(tmp_path, MISSING_SHA), upstream.f1)

    with pytest.raises(GateError) as caught:
        resolve_base(repo, context=context)

    message = str(caught.value)
    assert message.startswith(f"cannot fetch base commit {MISSING_SHA} from origin: ")
    assert "\n" not in message
    assert "not our ref" in message  # git's own reason, not a wrapper's
    with pytest.raises(GateError, match=f"cannot fetch base commit {MISSING_SHA}"):
        read_file_at(repo, MISSING_SHA, BASELINE)


def test_missing_commit_without_origin_is_a_gate_error(tmp_path: Path) -> None:
    repo = init(tmp_path / "solo")
    commit(repo, "only", {"a.txt": "a\n"})

    with pytest.raises(GateError, match=rf"{MISSING_SHA} is not in .* no 'origin' remote"):
        resolve_base(repo, MISSING_SHA)


# No remote: local branches


@pytest.mark.parametrize("branch", ["main", "master"])
def test_no_remote_uses_fork_point_of_local_branch(tmp_path: Path, branch: str) -> None:
    repo = init(tmp_path / "solo", branch)
    forked = commit(repo, "bless", {BASELINE: MAIN_BASELINE})
    git(repo, "checkout", "-q", "-b", "feature")
    commit(repo, "feature", {BASELINE: BRANCH_BASELINE})
    git(repo, "checkout", "-q", branch)
    later = commit(repo, "later on the base branch", {"later.txt": "x\n"})
    git(repo, "checkout", "-q", "feature")

    assert resolve_base(repo) == BaseCommit(forked, branch, "local-branch", later)


def test_first_commit_on_main_is_its_own_base(tmp_path: Path) -> None:
    repo = init(tmp_path / "solo")
    first = commit(repo, "first", {BASELINE: MAIN_BASELINE})

    assert resolve_base(repo) == BaseCommit(first, "main", "local-branch")


def test_no_base_can_exist(tmp_path: Path) -> None:
    unborn = init(tmp_path / "unborn")
    other = init(tmp_path / "other", "trunk")
    commit(other, "first", {"a.txt": "a\n"})

    assert resolve_base(unborn) is None
    assert resolve_base(other) is None


# Event payload problems


def test_malformed_event_payload_is_a_gate_error_naming_the_file(
    upstream: Upstream, tmp_path: Path
) -> None:
    repo = clone(upstream.url, tmp_path / "clone")
    event = tmp_path / "event.json"
    event.write_text('{"pull_request": ', encoding="utf-8")

    with pytest.raises(GateError, match=re.escape(
            f"{event}: cannot read the event payload: JSON:1:18: invalid JSON")):
        resolve_base(repo, context=github_context("pull_request", event, upstream.merge))
    with pytest.raises(
        GateError, match=re.escape(f"{tmp_path / 'gone.json'}: cannot read the event payload: ")
    ):
        resolve_base(repo, context=github_context("push", tmp_path / "gone.json"))


def test_event_payload_without_the_base_sha_is_a_gate_error(
    upstream: Upstream, tmp_path: Path
) -> None:
    repo = clone(upstream.url, tmp_path / "clone")
    event = write_event(tmp_path / "event.json", {"pull_request": {"base": {"ref": "main"}}})

    with pytest.raises(GateError, match=re.escape(f"{event}: pull_request.base.sha is missing")):
        resolve_base(repo, context=github_context("pull_request", event, upstream.f1))


# read_file_at, repo_root, head_sha


def test_read_file_at_present_absent_and_deleted_later(tmp_path: Path) -> None:
    repo = init(tmp_path / "solo")
    added = commit(repo, "add", {BASELINE: MAIN_BASELINE, "keep.txt": "k\n"})
    deleted = commit(repo, "delete", {BASELINE: None})

    assert read_file_at(repo, added, BASELINE) == MAIN_BASELINE.encode()
    assert read_file_at(repo, added, f"./{BASELINE}") == MAIN_BASELINE.encode()
    assert read_file_at(repo, added, "baselines/other.json") is None
    assert read_file_at(repo, deleted, BASELINE) is None
    assert (repo / "keep.txt").exists()


@pytest.mark.parametrize(
    ("path", "message"),
    [("baselines", "is not a regular file"), ("../outside.json", "is not a path inside")],
)
def test_read_file_at_refuses_what_is_not_a_file_in_the_repo(
    tmp_path: Path, path: str, message: str
) -> None:
    repo = init(tmp_path / "solo")
    sha = commit(repo, "add", {BASELINE: MAIN_BASELINE})

    with pytest.raises(GateError, match=message):
        read_file_at(repo, sha, path)


def test_repo_root_and_head_sha(tmp_path: Path) -> None:
    repo = init(tmp_path / "solo")
    sha = commit(repo, "add", {BASELINE: MAIN_BASELINE})

    assert repo_root(repo / "baselines") == repo.resolve()
    assert repo_root(repo / BASELINE) == repo.resolve()
    assert head_sha(repo / "baselines") == sha


def test_not_a_repository_and_unborn_head_are_gate_errors(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()

    with pytest.raises(GateError, match="is not inside a git repository"):
        repo_root(plain)
    with pytest.raises(GateError, match="is not inside a git repository"):
        resolve_base(plain)
    with pytest.raises(GateError, match="has no commit yet"):
        head_sha(init(tmp_path / "unborn"))


_CHILDREN_LEFT = """
import os, sys
from pathlib import Path
from membench_gate.errors import GateError
from membench_gate.base.git import read_file_at, resolve_base

def left():  # a child not waited for, running or a zombie
    try:
        os.waitpid(-1, os.WNOHANG)
    except ChildProcessError:
        return False
    return True

plain, repo, sha = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3]
try:
    resolve_base(plain)
except GateError:
    pass
print(left())
print(resolve_base(repo).sha == sha, left())
print(read_file_at(repo, sha, "baselines/main.json") is not None, left())
"""


def test_git_processes_are_ended_whether_or_not_a_repository_is_found(tmp_path: Path) -> None:
    # A repository lookup starts its git processes together; every one of them is waited for,
    # when the folder is a repository and when it is not (in a fresh interpreter, which has no
    # other child).
    plain = tmp_path / "plain"
    plain.mkdir()
    repo = init(tmp_path / "solo")
    sha = commit(repo, "add", {BASELINE: MAIN_BASELINE})

    done = subprocess.run([sys.executable, "-c", _CHILDREN_LEFT, str(plain), str(repo), sha],
                          capture_output=True, text=True, check=False)

    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[:3] == ["False", "True False", "True False"]


_STARTED_LEFT = """
import os, sys
from pathlib import Path
from membench_gate.errors import GateError
from membench_gate.base.git import Started, open_repo

def left():
    try:
        os.waitpid(-1, os.WNOHANG)
    except ChildProcessError:
        return False
    return True

plain, repo, other, sha = Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3]), sys.argv[4]
started = Started(repo)
started.close()
started.close()
print("closed", left())
started = Started(repo)
with open_repo(repo, started) as r:
    print("adopted", r.resolve_base().sha == sha, started.probe is None)
started.close()
print("after", left())
with open_repo(repo, Started(other)) as r:  # started for another folder: ended, started anew
    print("elsewhere", r.root == repo, r.resolve_base().sha == sha)
print("after", left())
try:
    with open_repo(plain, Started(plain)):
        pass
except GateError as exc:
    print("plain", "not inside a git repository" in str(exc))
print("after", left())
"""


def test_git_processes_started_ahead_are_adopted_or_ended(tmp_path: Path) -> None:
    # check --results starts the git processes of its base lookup before it imports the rest:
    # the lookup adopts them when it asks from the same folder; otherwise, or when nothing asks,
    # every one is ended and waited for.
    plain = tmp_path / "plain"
    plain.mkdir()
    repo = init(tmp_path / "solo")
    (repo / "sub").mkdir()
    sha = commit(repo, "add", {BASELINE: MAIN_BASELINE})

    done = subprocess.run([sys.executable, "-c", _STARTED_LEFT, str(plain), str(repo),
                           str(repo / "sub"), sha], capture_output=True, text=True, check=False)

    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "closed False", "adopted True True", "after False", "elsewhere True True",
        "after False", "plain True", "after False"]


def test_git_processes_started_ahead_and_not_adopted_are_stopped_not_awaited(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A check that fails before its base lookup (a broken results file) must not wait for git:
    # on a git that does not answer, the processes are killed.
    repo = init(tmp_path / "solo")
    commit(repo, "add", {BASELINE: MAIN_BASELINE})
    slow = tmp_path / "slow"
    slow.mkdir()
    (slow / "git").write_text("#!/bin/sh\nexec sleep 60\n")  # a git that never answers
    (slow / "git").chmod(0o755)
    monkeypatch.setenv("PATH", f"{slow}{os.pathsep}{os.environ['PATH']}")

    started = Started(repo)
    processes = [started.probe, started.remotes, started.batch]
    started.close()

    assert [p.returncode for p in processes if p is not None] == [-signal.SIGKILL] * 3
    assert (started.probe, started.remotes, started.batch) == (None, None, None)


def test_missing_git_is_one_gate_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = init(tmp_path / "solo")
    commit(repo, "add", {BASELINE: MAIN_BASELINE})
    monkeypatch.setenv("PATH", str(tmp_path / "nowhere"))

    for lookup in (repo_root, head_sha, resolve_base):
        with pytest.raises(GateError, match=r"^cannot use git: No such file or directory"):
            lookup(repo)
