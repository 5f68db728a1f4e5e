"""The gate config through the CLI: a mistake in a repository's membench.toml is one line, exit 4."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tests.support.cli import run_cli

# Each test runs the CLI or real git in subprocesses: seconds per test.
pytestmark = pytest.mark.slow


def test_a_floor_on_an_unknown_cell_is_a_config_error(make_repo: Callable[..., Path]) -> None:
    repo = make_repo()
    (repo / "membench.toml").write_text(
        '[suites.abstention]\nfixtures = ["fx"]\n'
        '[floors]\n"veto/files_knwn:veto_recall_at_k" = 0.5\n')
    done = run_cli("run", cwd=repo)
    assert done.returncode == 4 and "did you mean 'veto/files_known'" in done.stderr
