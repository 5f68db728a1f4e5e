"""The public interface stays put: the ``--help`` of ``membench-gate`` and of every subcommand (against
committed snapshots), and the entry points configs, workflows and adapters name.

The snapshots in tests/e2e/snapshots/help are argparse's layout at 100 columns. After a deliberate
change to a flag or its help, rewrite them and review the diff:

    MEMBENCH_UPDATE_SNAPSHOTS=1 python -m pytest tests/e2e/test_public_interface.py
"""

from __future__ import annotations

import difflib
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.cli import cli_env
from tests.support.paths import REPO, TESTS

SNAPSHOTS = TESTS / "e2e" / "snapshots" / "help"
UPDATE = "MEMBENCH_UPDATE_SNAPSHOTS"
COMMANDS = ["run", "merge", "check", "bless", "show", "comment", "explain", "init", "doctor",
            "selftest", "import", "history"]

# Python 3.13 changed how argparse lays out an option with a value ("-o, --out FILE"): the snapshots
# are the layout of 3.10 to 3.12.
ARGPARSE_LAYOUT = sys.version_info < (3, 13)


def help_text(*command: str) -> str:
    done = subprocess.run([sys.executable, "-m", "membench_gate", *command, "--help"], cwd=REPO,
                          env=cli_env({"COLUMNS": "100", "NO_COLOR": "1"}), capture_output=True,
                          text=True, timeout=60, check=False)
    assert done.returncode == 0 and not done.stderr, done.stderr
    return done.stdout


@pytest.mark.skipif(not ARGPARSE_LAYOUT, reason="the snapshots are argparse's layout before 3.13")
@pytest.mark.parametrize("command", [[], *([name] for name in COMMANDS)],
                         ids=["membench-gate", *COMMANDS])
def test_help_is_the_snapshot(command: list[str]) -> None:
    path = SNAPSHOTS / ("-".join(["membench-gate", *command]) + ".txt")
    text = help_text(*command)
    if os.environ.get(UPDATE) == "1":
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    expected = path.read_text(encoding="utf-8") if path.is_file() else ""
    diff = "".join(difflib.unified_diff(expected.splitlines(keepends=True),
                                        text.splitlines(keepends=True), str(path), "--help now"))
    assert text == expected, (
        f"`membench-gate {' '.join(command)} --help` is not {path.relative_to(REPO)}. If the change "
        f"is meant, rewrite the snapshots with {UPDATE}=1 python -m pytest "
        f"tests/e2e/test_public_interface.py and commit the diff.\n{diff}")


def test_every_subcommand_has_a_snapshot() -> None:
    usage = re.search(r"\{([a-z,]+)\}", help_text())
    assert usage is not None
    assert sorted(usage.group(1).split(",")) == sorted(COMMANDS)


def test_python_m_membench_gate_host_serves_the_reference_memory() -> None:
    requests = [{"jsonrpc": "2.0", "id": 1, "method": "initialize",
                 "params": {"protocol": 1, "options": {}}},
                {"jsonrpc": "2.0", "id": 2, "method": "shutdown", "params": {}}]
    done = subprocess.run(
        [sys.executable, "-m", "membench_gate.host", "membench_gate.reference:ReferenceMemory"],
        input="".join(json.dumps(r) + "\n" for r in requests), cwd=REPO, env=cli_env(),
        capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    first = json.loads(done.stdout.splitlines()[0])
    assert first["id"] == 1 and first["result"]["protocol"] == 1, first


def test_python_m_membench_gate_action_runs_the_gate_step(tmp_path: Path) -> None:
    # Outside a pull request run with no config: the step answers with an ERROR annotation naming the
    # missing file (the action's own exit code is decided by its later steps).
    done = subprocess.run([sys.executable, "-m", "membench_gate.action"], cwd=tmp_path,
                          env=cli_env(), capture_output=True, text=True, timeout=120, check=False)
    assert "::error title=membench-gate error::membench.toml: config file not found" in done.stdout, (
        done.stdout + done.stderr)


def test_python_m_membench_gate_action_says_what_it_is_instead_of_running(tmp_path: Path) -> None:
    # Asked for help (or given any argument), the step does not run: no suite, no files written.
    asked = subprocess.run([sys.executable, "-m", "membench_gate.action", "--help"], cwd=tmp_path,
                           env=cli_env(), capture_output=True, text=True, timeout=60, check=False)
    assert asked.returncode == 0 and asked.stdout.startswith("usage: python -m membench_gate.action")
    assert "takes no arguments" in asked.stdout and "::error" not in asked.stdout
    wrong = subprocess.run([sys.executable, "-m", "membench_gate.action", "check"], cwd=tmp_path,
                           env=cli_env(), capture_output=True, text=True, timeout=60, check=False)
    assert wrong.returncode == 4
    assert wrong.stderr.splitlines()[-1] == ("membench-gate: error: python -m membench_gate.action "
                                             "takes no arguments, got 'check'")
    assert list(tmp_path.iterdir()) == []


def test_the_console_entry_and_the_python_names_are_importable() -> None:
    code = ("from membench_gate import Answer, Hit, Query, Record, Session, Turn\n"
            "from membench_gate.cli import console\n"
            "from membench_gate.reference import ReferenceMemory\n"
            "assert callable(console) and callable(ReferenceMemory)\n"
            "print(sorted(t.__name__ for t in (Answer, Hit, Query, Record, Session, Turn)))\n")
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=cli_env(),
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["['Answer',", "'Hit',", "'Query',", "'Record',", "'Session',",
                                   "'Turn']"]
