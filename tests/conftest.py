"""The fixtures many test files share: the factory of memory repositories (seeded, cloned for a
pull request), the loopback fake GitHub in this process, act with the fake GitHub in its own
process, and the sandbox users of sealed runs. The plain helpers they build on are in
tests/support; the suite's layers (unit, integration, e2e) and the ``slow`` marker are applied here.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from tests.support.cli import seed_repo
from tests.support.configs import SMALL_FACTS, SMALL_PROBES
from tests.support.fakegithub import FakeGitHub
from tests.support.gitrepos import pr_clone
from tests.support.sealkit import plain_user, runner_user, sandbox_name, shared  # noqa: F401  (fixtures)

if TYPE_CHECKING:
    from tests.support.actkit import FakeServer

E2E = Path(__file__).resolve().parent / "e2e"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    # Every end-to-end test runs the CLI, the action or a wheel as a user does: whole processes on
    # real repositories, seconds each, so none of them belongs in the inner loop.
    for item in items:
        if item.path.is_relative_to(E2E):
            item.add_marker(pytest.mark.slow)


@pytest.fixture
def work(origin: Path, tmp_path: Path) -> Path:
    """A pull request's clone of the module's ``origin`` fixture (a bare repository), on ``pr``."""
    return pr_clone(origin, tmp_path / "work")


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


# -- act, with the fake GitHub in its own process (see tests/support/actkit.py) ------------------
# actkit is imported where it is used: it builds on the memory repositories of gaterepo.

ACTKIT = "tests.support.actkit"


@pytest.fixture(scope="session", autouse=True)
def _no_sandbox_user_left() -> Iterator[None]:
    """A workflow run under act as root may seal, creating its sandbox user: removed at the end."""
    yield
    if ACTKIT in sys.modules:
        from tests.support.sealkit import remove_sandboxes_named, remove_user

        remove_user(sys.modules[ACTKIT].SANDBOX_USER)
        remove_sandboxes_named(sys.modules[ACTKIT].SANDBOX_USER)


@pytest.fixture(scope="module")
def act(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from tests.support.actkit import act_binary

    return act_binary(tmp_path_factory)


@pytest.fixture(scope="module")
def fake_api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FakeServer]:
    """The fake GitHub API serving in its own process, for workflows run under act."""
    from tests.support.actkit import fake_github_process

    with fake_github_process(tmp_path_factory.mktemp("fake") / "state.json") as server:
        yield server
