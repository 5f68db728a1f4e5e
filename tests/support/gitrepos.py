"""Real git repositories for tests: commits, a bare origin, CI-style checkouts, event payloads.

Every git call here runs with a fixed identity and date and without the user's or the system's
git config, so shas are the same on every machine and a developer's settings (commit signing,
hooks, another default branch) cannot leak in. ``clean_env`` gives a subprocess of the code under
test the same git, in a developer's shell rather than CI's; ``ISOLATED_ENV`` and ``LEAKY_VARS`` do
it for this process (see ``isolate_git`` in tests/integration/base/test_git.py).
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from membench_gate.ci.settings import Context

_DATE = "2024-01-01T00:00:00+00:00"

ISOLATED_ENV = {
    "GIT_AUTHOR_NAME": "Gate Tester",
    "GIT_AUTHOR_EMAIL": "tester@example.invalid",
    "GIT_AUTHOR_DATE": _DATE,
    "GIT_COMMITTER_NAME": "Gate Tester",
    "GIT_COMMITTER_EMAIL": "tester@example.invalid",
    "GIT_COMMITTER_DATE": _DATE,
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_TERMINAL_PROMPT": "0",
}

# Set by git hooks (pytest run from a pre-commit hook): they would point git at the outer repo.
LEAKY_VARS = (
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_INDEX_FILE",
    "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_COMMON_DIR",
    "GIT_NAMESPACE",
)


# What a CI runner or a workflow step sets, and this package reads: a developer's shell has none.
_CI_PREFIXES = ("GITHUB_", "RUNNER_", "MEMBENCH_", "INPUT_", "ACTIONS_")


def clean_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """This process's environment as a developer's shell: no CI or workflow variables, no active
    virtualenv, isolated git; ``extra`` on top (a test that plays CI sets ``CI`` or ``GITHUB_*``)."""
    env = {k: v for k, v in os.environ.items()
           if k not in LEAKY_VARS and k not in ("CI", "VIRTUAL_ENV")
           and not k.startswith(_CI_PREFIXES)}
    env.update(ISOLATED_ENV)
    env.update(extra or {})
    return env


def git(cwd: Path, *args: str) -> str:
    """Run ``git args`` in ``cwd`` and return its stdout, stripped; fail loudly with its stderr."""
    env = {k: v for k, v in os.environ.items() if k not in LEAKY_VARS} | ISOLATED_ENV
    done = subprocess.run(
        ["git", *args], cwd=cwd, env=env, capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        raise AssertionError(f"git {' '.join(args)} failed in {cwd}:\n{done.stderr}")
    return done.stdout.strip()


def init(path: Path, branch: str = "main") -> Path:
    """Create a repository at ``path`` whose unborn branch is ``branch``."""
    path.mkdir(parents=True, exist_ok=True)
    git(path, "init", "-q", "-b", branch)
    return path


def commit(repo: Path, message: str, files: Mapping[str, str | None]) -> str:
    """Write (or, for None, delete) ``files``, commit everything and return the new sha."""
    for name, text in files.items():
        target = repo / name
        if text is None:
            target.unlink()
        else:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", message)
    return git(repo, "rev-parse", "HEAD")


def clone(url: str, dest: Path, *options: str) -> Path:
    """``git clone [options] url dest``; returns ``dest``."""
    git(dest.parent, "clone", "-q", *options, url, str(dest))
    return dest


def bare_origin(seed: Path) -> Path:
    """A bare clone of ``seed`` next to it (``<seed>.git``): the origin a pull request starts from."""
    bare = seed.parent / f"{seed.name}.git"
    git(seed.parent, "clone", "-q", "--bare", str(seed), str(bare))
    return bare


def pr_clone(origin: Path, dest: Path, branch: str = "pr") -> Path:
    """A developer's clone of ``origin`` on a new ``branch``, the work tree of a pull request."""
    repo = clone(f"file://{origin}", dest)
    git(repo, "checkout", "-q", "-b", branch)
    return repo


def actions_checkout(url: str, dest: Path, ref: str) -> Path:
    """Check out ``ref`` at depth 1 the way actions/checkout does.

    It does not clone: it inits, fetches that single ref and checks it out detached, so no other
    commit and no remote-tracking branch is present.
    """
    init(dest)
    git(dest, "remote", "add", "origin", url)
    git(dest, "fetch", "-q", "--no-tags", "--depth=1", "origin", ref)
    git(dest, "checkout", "-q", "--detach", "FETCH_HEAD")
    return dest


def has_commit(repo: Path, sha: str) -> bool:
    """Whether the commit object ``sha`` is present in ``repo``."""
    try:
        git(repo, "cat-file", "-e", f"{sha}^{{commit}}")
    except AssertionError:
        return False
    return True


def write_event(path: Path, payload: Mapping[str, Any]) -> Path:
    """Write a GitHub event payload file as the runner does; returns its path."""
    path.write_text(json.dumps(payload), encoding="utf-8")
    return path


def github_env(event_name: str, event_path: Path | None = None, sha: str = "") -> dict[str, str]:
    """The GITHUB_* variables of a workflow run (``Context.from_env`` reads them)."""
    env = {"GITHUB_EVENT_NAME": event_name, "GITHUB_SHA": sha}
    if event_path is not None:
        env["GITHUB_EVENT_PATH"] = str(event_path)
    return env


def github_context(event_name: str, event_path: Path | None = None, sha: str = "") -> Context:
    """The context of a workflow run, as the commands build it from ``github_env``'s variables."""
    return Context.from_env(github_env(event_name, event_path, sha))
