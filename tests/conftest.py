"""What many test files share: the CLI in a real subprocess, a gate config next to the test adapters,
a small memory repository, and the loopback fake GitHub.

The helpers are plain functions (``from conftest import run_cli``) so module-level helpers and
module-scoped fixtures can call them; the stateful ones are fixtures.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
from fakegithub import FakeGitHub
from gitrepos import ISOLATED_ENV, LEAKY_VARS, commit, init

from membench_gate.results import Cell, Results

REPO = Path(__file__).resolve().parent.parent
TESTS = Path(__file__).resolve().parent
BUILTIN = REPO / "fixtures"  # the built-in fixtures


def cli_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment of a developer's shell: no CI variables, isolated git, this package first on
    ``PYTHONPATH``; ``extra`` on top (a test that plays CI sets ``CI`` or ``GITHUB_*`` there)."""
    env = {k: v for k, v in os.environ.items()
           if k not in LEAKY_VARS and k != "CI" and not k.startswith("GITHUB_")}
    env.update(ISOLATED_ENV)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), *filter(None, [os.environ.get("PYTHONPATH")])])
    env.update(extra or {})
    return env


def run_cli(*args: str | Path, cwd: Path = REPO, env: Mapping[str, str] | None = None,
            timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """``python -m membench_gate ARGS`` in a real subprocess, in :func:`cli_env` plus ``env``."""
    return subprocess.run([sys.executable, "-m", "membench_gate", *map(str, args)], cwd=cwd,
                          env=cli_env(env), capture_output=True, text=True, timeout=timeout,
                          check=False)


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
        repo = init(tmp_path / name)
        folder = repo / config_dir
        (folder / "fx").mkdir(parents=True)
        (folder / "fx/facts.json").write_text(json.dumps(SMALL_FACTS))
        (folder / "fx/probes.json").write_text(json.dumps(SMALL_PROBES))
        (folder / "membench.toml").write_text(
            '[adapter.options]\ntau = 0.3\n[suites.abstention]\nfixtures = ["fx"]\nk = 1\n')
        commit(repo, "memory", {})
        return repo

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
