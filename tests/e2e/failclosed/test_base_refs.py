"""The base commit is found only through refs a pull request cannot forge (docs/gate.md, "Base
commit", "How a base ref resolves").

Through the CLI in CI mode on real git repositories: a bare origin, CI checkouts with full
history (every branch and tag, as ``fetch-depth: 0`` fetches them) and at depth 1. A contributor
can push tags and branches, and a step before the gate can write to ``.git``; none of that may
move the base: a tag named like the base branch, a replacement object, a grafts file, an
environment pointing git at another repository. Each attack has its control: plain git is fooled
(the attack is live), and the honest checkout gives the same verdict as the attacked one.

The memory: origin's main (``main``) blessed the small memory at tau 0.3. The pull request
(``feature``) lowers tau to 0.2 and commits the baseline of its own run, without a justification:
compared with main that is a REGRESSION; compared with anything holding its own baseline (the
``decoy`` branch, a sibling of main, or the pull request itself) it would PASS.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest

from membench_gate.base.git import BaseCommit, resolve_base
from membench_gate.errors import GateError
from membench_gate.model.results import dumps_baseline, parse_results
from tests.support.gitrepos import ISOLATED_ENV, actions_checkout, clone, commit, git, init, write_event
from tests.support.memrepo import Check, check, config_text, gate, memory_origin

BASELINE = "baselines/main.json"


@dataclass(frozen=True)
class Upstream:
    """The bare origin and the shas of its commits.

    main:    first ── main (blessed, tau 0.3)
    feature:            └── pr (tau 0.2, its own run's baseline)
    decoy:   first ── decoy (tau 0.2, the same baseline, never blessed)
    """

    origin: Path
    dev: Path  # the contributor's clone
    first: str
    main: str
    pr: str
    decoy: str
    weak: str  # the baseline the pull request commits


@pytest.fixture(scope="module")
def upstream(tmp_path_factory: pytest.TempPathFactory) -> Upstream:
    root = tmp_path_factory.mktemp("refs")
    origin = memory_origin(root)
    dev = clone(f"file://{origin}", root / "dev")
    main, first = git(dev, "rev-parse", "HEAD"), git(dev, "rev-parse", "HEAD^")
    git(dev, "checkout", "-q", "-b", "feature")
    (dev / "membench.toml").write_text(config_text(tau=0.2), encoding="utf-8")
    assert gate(dev, "run", "--out", str(root / "run.json")).returncode == 0
    weak = dumps_baseline(parse_results((root / "run.json").read_bytes(), "run.json")
                          .to_baseline())
    pr = commit(dev, "lower tau, with this run's baseline", {BASELINE: weak})
    git(dev, "checkout", "-q", "-b", "decoy", first)
    decoy = commit(dev, "a baseline nobody blessed",
                   {"membench.toml": config_text(tau=0.2), BASELINE: weak})
    git(dev, "push", "-q", "origin", "feature", "decoy")
    return Upstream(origin, dev, first, main, pr, decoy, weak)


def own_origin(upstream: Upstream, tmp_path: Path) -> Path:
    """A copy of the origin this test may push to."""
    return Path(shutil.copytree(upstream.origin, tmp_path / "origin.git"))


def full_checkout(origin: Path, dest: Path, ref: str = "refs/remotes/origin/feature") -> Path:
    """What actions/checkout does with ``fetch-depth: 0``: every branch as ``origin/*``, every
    tag, no local branch, HEAD detached at ``ref``."""
    init(dest)
    git(dest, "remote", "add", "origin", f"file://{origin}")
    git(dest, "fetch", "-q", "--prune", "origin", "+refs/heads/*:refs/remotes/origin/*",
        "+refs/tags/*:refs/tags/*")
    git(dest, "checkout", "-q", "--detach", ref)
    return dest


def assert_regression_against(result: Check, sha: str, ref: str) -> None:
    """The verdict of the pull request compared with main: a REGRESSION, and the base the
    verdict names is the commit that was read."""
    assert result.code == 1, result.stdout + result.stderr
    base = result.verdict["base"]
    assert (base["sha"], base["ref"]) == (sha, ref)
    assert any(k.startswith("abstention/default") for k in result.breach_keys())
    assert f"base {sha[:12]} ({ref}," in result.stdout  # and the base it prints


# -- a tag never shadows a branch --------------------------------------------------------------

@pytest.mark.parametrize(("base_ref", "tag"), [
    ("main", "main"),
    ("origin/main", "origin/main"),  # git looks in refs/tags/ before refs/remotes/
])
def test_a_tag_named_like_the_base_branch_does_not_shadow_it(
        upstream: Upstream, tmp_path: Path, base_ref: str, tag: str) -> None:
    """Issue seen: with ``--base-ref main`` and ``fetch-depth: 0``, a tag ``main`` pushed by a
    contributor won git's ref disambiguation; the gate read the tag's baseline (PASS) and the
    report still said "(main)"."""
    origin = own_origin(upstream, tmp_path)
    honest = full_checkout(origin, tmp_path / "honest")
    git(upstream.dev, "push", "-q", f"file://{origin}", f"{upstream.pr}:refs/tags/{tag}")
    ci = full_checkout(origin, tmp_path / "ci")
    assert git(ci, "rev-parse", base_ref) == upstream.pr  # plain git takes the tag

    assert_regression_against(check(ci, "--base-ref", base_ref, ci=True),
                              upstream.main, "origin/main")
    # Control: the same checkout without the tag, the same verdict; and what reading the
    # tag's commit gives, which is what the tag was pushed for.
    assert_regression_against(check(honest, "--base-ref", base_ref, ci=True),
                              upstream.main, "origin/main")
    assert check(ci, "--base-ref", upstream.pr, ci=True).code == 0


def test_a_tag_is_never_a_base(upstream: Upstream, tmp_path: Path) -> None:
    origin = own_origin(upstream, tmp_path)
    git(upstream.dev, "push", "-q", f"file://{origin}", f"{upstream.main}:refs/tags/v1")
    ci = full_checkout(origin, tmp_path / "ci")

    for given in ("v1", "refs/tags/v1"):
        check(ci, "--base-ref", given, ci=True).assert_error(f"--base-ref '{given}'", "tag",
                                                            "refs/tags/v1")
    # Control: the tag's commit by its full sha is a base like any other.
    assert_regression_against(check(ci, "--base-ref", upstream.main, ci=True),
                              upstream.main, upstream.main)


def test_a_shallow_checkout_fetches_origins_branch_even_with_a_tag_of_its_name(
        upstream: Upstream, tmp_path: Path) -> None:
    """actions/checkout at depth 1 has no ``origin/main``: the gate fetches origin's branch, and
    a tag of the same name fetched with the checkout (``fetch-tags: true``) changes nothing."""
    origin = own_origin(upstream, tmp_path)
    url = f"file://{origin}"
    honest = actions_checkout(url, tmp_path / "honest", "refs/heads/feature")
    git(upstream.dev, "push", "-q", url, f"{upstream.pr}:refs/tags/main")
    ci = actions_checkout(url, tmp_path / "ci", "refs/heads/feature")
    git(ci, "fetch", "-q", "--depth=1", "origin", "+refs/tags/*:refs/tags/*")
    assert git(ci, "rev-parse", "main") == upstream.pr

    for repo in (ci, honest):
        assert_regression_against(check(repo, "--base-ref", "main", ci=True),
                                  upstream.main, "origin/main")
        assert git(repo, "rev-parse", "refs/remotes/origin/main") == upstream.main  # fetched
        assert git(repo, "rev-parse", "--is-shallow-repository") == "true"  # and still shallow


def test_the_default_branch_the_gate_derives_is_origins_branch_not_a_tag(
        upstream: Upstream, tmp_path: Path) -> None:
    """With no ``--base-ref`` the gate names the branch itself (here the payload's
    ``repository.default_branch``): ``refs/remotes/origin/main`` is looked up as that very ref,
    so a tag named ``refs/remotes/origin/main`` in a checkout lacking the branch is not it."""
    origin = own_origin(upstream, tmp_path)
    url = f"file://{origin}"
    git(upstream.dev, "push", "-q", url, f"{upstream.pr}:refs/tags/refs/remotes/origin/main")
    ci = actions_checkout(url, tmp_path / "ci", "refs/heads/feature")
    git(ci, "fetch", "-q", "--depth=1", "origin", "+refs/tags/*:refs/tags/*")
    assert git(ci, "rev-parse", "refs/remotes/origin/main") == upstream.pr
    event = write_event(tmp_path / "event.json", {"repository": {"default_branch": "main"}})
    env = {"GITHUB_EVENT_NAME": "workflow_dispatch", "GITHUB_EVENT_PATH": str(event)}

    result = check(ci, ci=True, env=env)

    assert_regression_against(result, upstream.main, "origin/main")
    assert result.verdict["base"]["how"] == "remote-default-branch"


# -- git replace and grafts --------------------------------------------------------------------

@pytest.mark.parametrize("what", ["baseline-blob", "base-commit", "useReplaceRefs-config"])
def test_replacement_objects_are_not_read(upstream: Upstream, tmp_path: Path, what: str) -> None:
    """Issue seen: ``git replace`` of the base baseline's blob swapped what the gate read."""
    ci = full_checkout(upstream.origin, tmp_path / "ci")
    if what == "base-commit":
        git(ci, "replace", upstream.main, upstream.decoy)
    else:
        original = git(ci, "rev-parse", f"{upstream.main}:{BASELINE}")
        git(ci, "replace", original, git(ci, "rev-parse", f"HEAD:{BASELINE}"))
    if what == "useReplaceRefs-config":  # the repository's config says to use them
        git(ci, "config", "core.useReplaceRefs", "true")
    # Live for plain git, even where it is asked not to use them, if the config says so.
    assert git(ci, "show", f"origin/main:{BASELINE}") == upstream.weak.strip()
    plain_off = git(ci, "--no-replace-objects", "show", f"origin/main:{BASELINE}")
    assert (plain_off == upstream.weak.strip()) is (what == "useReplaceRefs-config")

    result = check(ci, "--base-ref", "origin/main", ci=True)

    assert_regression_against(result, upstream.main, "origin/main")
    assert json.loads(result.files["base.json"] or "{}") != json.loads(upstream.weak)


def test_a_grafts_file_does_not_move_the_fork_point(upstream: Upstream, tmp_path: Path) -> None:
    """``.git/info/grafts`` giving the pull request and main the decoy as parent makes the decoy
    their merge-base for git, so the base of a run without a payload (the fork point from
    origin's main) would be the decoy."""
    ci = full_checkout(upstream.origin, tmp_path / "ci")
    honest = full_checkout(upstream.origin, tmp_path / "honest")
    (ci / ".git/info").mkdir(exist_ok=True)
    (ci / ".git/info/grafts").write_text(f"{upstream.pr} {upstream.decoy}\n"
                                         f"{upstream.main} {upstream.decoy}\n")
    assert git(ci, "merge-base", "HEAD", "origin/main") == upstream.decoy  # live for git
    env = {"GITHUB_EVENT_NAME": "workflow_dispatch"}

    for repo in (ci, honest):
        result = check(repo, ci=True, env=env)
        assert_regression_against(result, upstream.main, "origin/main")
        assert result.verdict["base"]["how"] == "remote-default-branch"


def test_the_environment_cannot_point_git_at_another_repository(
        upstream: Upstream, tmp_path: Path) -> None:
    """A step before the gate may leave ``GIT_DIR`` (or the object directories) in the job's
    environment: the gate still reads the repository it is run in."""
    ci = full_checkout(upstream.origin, tmp_path / "ci")
    decoy = full_checkout(upstream.origin, tmp_path / "decoy")
    git(decoy, "update-ref", "refs/remotes/origin/main", upstream.decoy)
    env = {"GIT_DIR": str(decoy / ".git"), "GIT_WORK_TREE": str(ci)}
    assert git(ci, "--git-dir", env["GIT_DIR"], "rev-parse", "origin/main") == upstream.decoy

    result = check(ci, "--base-ref", "origin/main", ci=True, env=env)

    assert_regression_against(result, upstream.main, "origin/main")


def test_a_worktree_finds_its_base_like_its_clone(upstream: Upstream, tmp_path: Path) -> None:
    ci = full_checkout(upstream.origin, tmp_path / "ci")
    git(ci, "worktree", "add", "-q", "--detach", str(tmp_path / "tree"), "origin/feature")

    assert_regression_against(check(tmp_path / "tree", "--base-ref", "main", ci=True),
                              upstream.main, "origin/main")


# -- what a name may be ------------------------------------------------------------------------

def test_a_local_branch_that_differs_from_origins_is_ambiguous(
        upstream: Upstream, tmp_path: Path) -> None:
    dev = clone(f"file://{upstream.origin}", tmp_path / "dev")
    ahead = commit(dev, "on main, not pushed", {"notes.txt": "later\n"})
    git(dev, "checkout", "-q", "--detach", "origin/feature")

    result = check(dev, "--base-ref", "main", ci=True)

    result.assert_error("--base-ref 'main' is ambiguous", "refs/heads/main",
                        "refs/remotes/origin/main", upstream.main[:12], ahead[:12])
    # Control: each candidate asked by its full name is a base, and so is the bare name once
    # both agree.
    assert_regression_against(check(dev, "--base-ref", "origin/main", ci=True),
                              upstream.main, "origin/main")
    assert_regression_against(check(dev, "--base-ref", "refs/heads/main", ci=True),
                              ahead, "main")
    git(dev, "update-ref", "refs/heads/main", upstream.main)
    assert_regression_against(check(dev, "--base-ref", "main", ci=True),
                              upstream.main, "origin/main")


def test_an_abbreviated_sha_is_refused(upstream: Upstream, tmp_path: Path) -> None:
    ci = full_checkout(upstream.origin, tmp_path / "ci")

    check(ci, "--base-ref", upstream.main[:12], ci=True).assert_error(
        f"--base-ref '{upstream.main[:12]}'", "full", "sha")
    # Control: the full sha, in any case.
    assert_regression_against(check(ci, "--base-ref", upstream.main.upper(), ci=True),
                              upstream.main, upstream.main)


def test_without_a_remote_a_name_is_the_local_branch_never_a_tag(
        upstream: Upstream, tmp_path: Path) -> None:
    repo = clone(f"file://{upstream.origin}", tmp_path / "laptop")
    git(repo, "remote", "remove", "origin")
    git(repo, "branch", "-q", "feature", upstream.pr)
    git(repo, "tag", "main", upstream.pr)
    git(repo, "checkout", "-q", "feature")
    assert git(repo, "rev-parse", "main") == upstream.pr  # plain git: the tag, with a warning

    assert_regression_against(check(repo, "--base-ref", "main"), upstream.main, "main")
    assert_regression_against(check(repo, "--base-ref", "HEAD~1"), upstream.main, "HEAD~1")
    check(repo, "--base-ref", "origin/main").assert_error("--base-ref 'origin/main'",
                                                         "no 'origin' remote")


# -- the forms of --base-ref, one lookup each --------------------------------------------------

@pytest.fixture
def isolated_git(monkeypatch: pytest.MonkeyPatch) -> None:
    """The gate's own git calls in this process, with the helpers' git config."""
    for name, value in ISOLATED_ENV.items():
        monkeypatch.setenv(name, value)


@pytest.mark.usefixtures("isolated_git")
def test_each_form_of_a_base_ref_reads_what_its_label_says(
        upstream: Upstream, tmp_path: Path) -> None:
    ci = full_checkout(upstream.origin, tmp_path / "ci")
    git(ci, "branch", "-q", "feature", upstream.pr)
    expected = {
        "HEAD": (upstream.pr, "HEAD"),
        "HEAD^": (upstream.main, "HEAD^"),
        upstream.first: (upstream.first, upstream.first),
        "main": (upstream.main, "origin/main"),
        "origin/main~1": (upstream.first, "origin/main~1"),
        "refs/remotes/origin/decoy": (upstream.decoy, "origin/decoy"),
        "refs/heads/feature": (upstream.pr, "feature"),
        "feature": (upstream.pr, "origin/feature"),  # local and origin's agree
    }
    for given, (sha, label) in expected.items():
        assert resolve_base(ci, given) == BaseCommit(sha, label, "explicit"), given


@pytest.mark.usefixtures("isolated_git")
@pytest.mark.parametrize(("given", "says"), [
    ("refs/pull/5/merge", "a base is HEAD, a full commit sha or a branch"),
    ("refs/remotes/upstream/main", "a base is HEAD, a full commit sha or a branch"),
    ("main@{1}", "a base is HEAD, a full commit sha or a branch"),
    (":/lower tau", "a base is HEAD, a full commit sha or a branch"),
    ("refs/heads/main", "there is no local branch main"),
    ("origin/nowhere", "is not a branch on origin (fatal: couldn't find remote ref"),
    ("origin/main~9", "origin/main~9' does not name a commit"),
])
def test_what_is_not_a_base_ref_is_one_error_naming_it(
        upstream: Upstream, tmp_path: Path, given: str, says: str) -> None:
    ci = full_checkout(upstream.origin, tmp_path / "ci")

    with pytest.raises(GateError) as caught:
        resolve_base(ci, given)

    message = str(caught.value)
    assert message.startswith(f"--base-ref '{given}'") and says in message, message
    assert "\n" not in message
