"""The CLI in a real subprocess, as a developer runs it, and the memory repositories it runs in."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path

from tests.support.gitrepos import clean_env, commit, init
from tests.support.paths import REPO


def cli_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """:func:`gitrepos.clean_env` (a developer's shell, isolated git) with this package first on
    ``PYTHONPATH``; ``extra`` on top."""
    path = os.pathsep.join([str(REPO), *filter(None, [os.environ.get("PYTHONPATH")])])
    return clean_env({"PYTHONPATH": path, **(extra or {})})


# A progress line of a run outside a terminal (docs/gate.md, "Progress"): one per suite when it
# ends, and periodic ones while a suite runs for more than a few seconds. How many periodic lines a
# run prints depends on the machine's load, so a test that reads stderr leaves them out. With
# several adapter workers each line names its worker first.
PROGRESS_LINE = re.compile(r"(?:worker \d+: )?[a-z]+: \d+/\d+ adapter calls"
                           r"(?:, about \d+(?:s| min) left)?")


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


def assert_error_verdict(path: Path) -> None:
    """A failed command's output file holds the error verdict: never an earlier run's file, and
    nothing that could be read as results."""
    data = json.loads(path.read_text(encoding="utf-8"))
    assert (data["verdict"], data["exit_code"]) == ("error", 4), data
    assert "cells" not in data and data["notes"], data


def start_cli(*args: str, cwd: Path) -> subprocess.Popen[str]:
    """The CLI in the background, its output piped, SIGTERM at its default (as a runner's).
    Python's fault handler is on, so a gate that hangs can be made to show where (:func:`terminate`)."""
    return subprocess.Popen([sys.executable, "-m", "membench_gate", *args], cwd=cwd,
                            env=cli_env({"PYTHONFAULTHANDLER": "1"}),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGTERM, signal.SIG_DFL))


def terminate(gate: subprocess.Popen[str], within: float) -> str:
    """SIGTERM ``gate``: it must end within ``within`` seconds, as a terminated command does
    (exit 4, the one error line). Its stderr."""
    started = time.monotonic()
    gate.send_signal(signal.SIGTERM)
    try:
        _, stderr = gate.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        # Hung: SIGABRT makes the fault handler print every thread's stack before it dies.
        gate.send_signal(signal.SIGABRT)
        _, stderr = gate.communicate(timeout=30)
        raise AssertionError(f"the gate did not end 60 s after SIGTERM:\n{stderr}") from None
    assert gate.returncode == 4, stderr
    assert "membench-gate: error: terminated (SIGTERM)" in stderr
    assert time.monotonic() - started < within
    return stderr
