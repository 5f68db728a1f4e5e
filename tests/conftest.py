"""What many test files share: the CLI in a real subprocess, a gate config next to the test adapters,
the factory of memory repositories (seeded, blessed, cloned for a pull request), the loopback fake
GitHub in this process, and act with the fake GitHub in its own process.

The helpers are plain functions (``from conftest import run_cli``) so module-level helpers and
module-scoped fixtures can call them; the stateful ones are fixtures.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from fakegithub import FakeGitHub
from gitrepos import clean_env, commit, init, pr_clone
from sealkit import plain_user, runner_user, sandbox_name, shared  # noqa: F401  (fixtures)

from membench_gate.model.results import Cell, Results

if TYPE_CHECKING:
    from actkit import FakeServer

REPO = Path(__file__).resolve().parent.parent
TESTS = Path(__file__).resolve().parent
BUILTIN = REPO / "fixtures"  # the built-in fixtures


def cli_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """:func:`gitrepos.clean_env` (a developer's shell, isolated git) with this package first on
    ``PYTHONPATH``; ``extra`` on top."""
    path = os.pathsep.join([str(REPO), *filter(None, [os.environ.get("PYTHONPATH")])])
    return clean_env({"PYTHONPATH": path, **(extra or {})})


# A progress line of a run outside a terminal (docs/gate.md, "Progress"): one per suite when it
# ends, and periodic ones while a suite runs for more than a few seconds. How many periodic lines a
# run prints depends on the machine's load, so a test that reads stderr leaves them out.
PROGRESS_LINE = re.compile(r"[a-z]+: \d+/\d+ adapter calls(?:, about \d+(?:s| min) left)?")


def without_progress(stderr: str) -> list[str]:
    """The lines of ``stderr`` other than periodic progress lines (a suite's last line stays)."""
    return [line for line in stderr.splitlines() if not PROGRESS_LINE.fullmatch(line)]


def run_cli(*args: str | Path, cwd: Path = REPO, env: Mapping[str, str] | None = None,
            timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """``python -m membench_gate ARGS`` in a real subprocess, in :func:`cli_env` plus ``env``."""
    return subprocess.run([sys.executable, "-m", "membench_gate", *map(str, args)], cwd=cwd,
                          env=cli_env(env), capture_output=True, text=True, timeout=timeout,
                          check=False)


def bless(repo: Path, *args: str) -> None:
    """``membench-gate bless ARGS`` in ``repo`` as a developer runs it, then commit the baseline."""
    done = run_cli("bless", *args, cwd=repo)
    assert done.returncode == 0, done.stdout + done.stderr
    commit(repo, "bless baseline", {})


def seed_repo(path: Path, files: Mapping[str, str], setup: Callable[[Path], None] | None = None,
              blessed: bool = True) -> Path:
    """A memory repository on ``main``: a README and ``files`` (the gate config among them) in one
    commit, then a blessed baseline unless ``blessed`` is false. ``setup`` may add more to the work
    tree before the first commit. Every repository factory of the tests starts here."""
    repo = init(path)
    if setup is not None:
        setup(repo)
    commit(repo, "memory repo", {"README.md": "memory\n", **files})
    if blessed:
        bless(repo)
    return repo


@pytest.fixture
def work(origin: Path, tmp_path: Path) -> Path:
    """A pull request's clone of the module's ``origin`` fixture (a bare repository), on ``pr``."""
    return pr_clone(origin, tmp_path / "work")


def write_json(path: Path, data: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    return path


def write_config(folder: Path, suites: str, adapter: str | None = None,
                 options: str = "") -> Path:
    """A membench.toml in ``folder`` with the test adapters module next to it (the loader puts the
    config's folder on sys.path)."""
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copy(TESTS / "adapters_for_tests.py", folder / "adapters_for_tests.py")
    head = f'[adapter]\npython = "{adapter}"\n' if adapter else ""
    if options:
        head += f"[adapter.options]\n{options}\n"
    path = folder / "membench.toml"
    path.write_text(head + suites, encoding="utf-8")
    return path


def write_adapter_config(folder: Path, target: str, options: dict[str, Any] | None = None) -> Path:
    """A membench.toml running every built-in suite on ``target``, with the test adapters module
    next to it."""
    suites = "\n".join(['[suites.veto]', 'fixtures = ["builtin"]', 'k = 5',
                        '[suites.abstention]', 'fixtures = ["builtin"]', 'k = 5',
                        'lambdas = [1, 2, 5, 10]', '[suites.push]', 'fixtures = ["builtin"]',
                        'budget = 3']) + "\n"
    lines = [f"{key} = {json.dumps(value)}" for key, value in (options or {}).items()]
    return write_config(folder, "[adapter.options]\n" + "".join(f"{line}\n" for line in lines)
                        + suites, adapter=target)


def veto_results(failed: list[str]) -> Results:
    """A results file with one cell, ``veto/files_known`` (recall 0.9 over 10 items, ``failed``
    failing): two of them make a verdict to post as a comment."""
    return Results(
        schema_version=1, fixtures_hash="f" * 64, config={"suites": {}}, digests={},
        cells={"veto/files_known": Cell(metrics={"veto_recall_at_k": 0.9}, gold_total=10,
                                        failed=failed)},
        receipt={"tool_version": "0", "started_at": "x", "duration_s": 1, "adapter": "a"},
        items={})


SMALL_FACTS = [{"id": "f1", "text": "The billing API listens on port 8443."},
               {"id": "f2", "text": "Deploys are frozen on Fridays after 3pm."}]
SMALL_PROBES = [{"id": "p1", "question": "Which port does the billing API listen on?",
                 "gold_fact_id": "f1"},
                {"id": "p2", "question": "When are deploys frozen?", "gold_fact_id": "f2"},
                {"id": "p3", "question": "Who owns the search cluster?", "gold_fact_id": None}]


@pytest.fixture
def make_repo(tmp_path: Path) -> Callable[..., Path]:
    """A factory of memory repositories: ``make_repo(config_dir=".")`` commits a two-fact abstention
    suite (``fx/``) and its membench.toml (reference adapter, k = 1) on ``main``, in ``config_dir``."""

    def make(config_dir: str = ".", name: str = "repo") -> Path:
        folder = Path(config_dir)
        return seed_repo(tmp_path / name, {
            str(folder / "fx/facts.json"): json.dumps(SMALL_FACTS),
            str(folder / "fx/probes.json"): json.dumps(SMALL_PROBES),
            str(folder / "membench.toml"):
                '[adapter.options]\ntau = 0.3\n[suites.abstention]\nfixtures = ["fx"]\nk = 1\n',
        }, blessed=False)

    return make


GITHUB_REPOSITORY = "acme/memory"


@pytest.fixture(autouse=True)
def _no_proxy(monkeypatch: pytest.MonkeyPatch) -> None:
    # A proxy from the environment would swallow requests meant for the loopback fake GitHub.
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    monkeypatch.setenv("no_proxy", "127.0.0.1,localhost")


@pytest.fixture
def fake_github() -> Iterator[Callable[..., FakeGitHub]]:
    """A factory of loopback fake GitHub servers for ``acme/memory``, each stopped after the test:
    ``fake_github(token=…, login=…)``; add pull requests with ``add_pull``."""
    with_servers: list[FakeGitHub] = []

    def start(**kwargs: Any) -> FakeGitHub:
        server = FakeGitHub(repository=GITHUB_REPOSITORY, **kwargs)
        server.__enter__()
        with_servers.append(server)
        return server

    yield start
    for server in reversed(with_servers):
        server.__exit__(None, None, None)


# -- act, with the fake GitHub in its own process (see actkit) -----------------------------------
# actkit is imported where it is used: it builds on modules that import this one.

@pytest.fixture(scope="session", autouse=True)
def _no_sandbox_user_left() -> Iterator[None]:
    """A workflow run under act as root may seal, creating its sandbox user: removed at the end."""
    yield
    if "actkit" in sys.modules:
        from sealkit import remove_sandboxes_named, remove_user

        remove_user(sys.modules["actkit"].SANDBOX_USER)
        remove_sandboxes_named(sys.modules["actkit"].SANDBOX_USER)


@pytest.fixture(scope="module")
def act(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from actkit import act_binary

    return act_binary(tmp_path_factory)


@pytest.fixture(scope="module")
def fake_api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FakeServer]:
    """The fake GitHub API serving in its own process, for workflows run under act."""
    from actkit import fake_github_process

    with fake_github_process(tmp_path_factory.mktemp("fake") / "state.json") as server:
        yield server


def assert_error_verdict(path: Path) -> None:
    """A failed command's output file holds the error verdict: never an earlier run's file, and
    nothing that could be read as results."""
    data = json.loads(path.read_text(encoding="utf-8"))
    assert (data["verdict"], data["exit_code"]) == ("error", 4), data
    assert "cells" not in data and data["notes"], data
