"""A SIGTERM that lands while the main thread takes a lock in Python code (the import system's,
``threading.Condition``'s) is raised a moment later, once it is out of that step: raised there,
it left the lock held, and every other thread waiting for it waited forever — a terminated
selftest hung in CI, its pool thread stuck on the global import lock."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support.cli import cli_env

pytestmark = pytest.mark.slow

# Both threads import in a loop (a module that does not exist: each import takes the global
# import lock), and the main thread ends on the gate's SIGTERM, then waits for the other.
CHILD = '''
import importlib.util, threading, time
from membench_gate.cli import runtime
from membench_gate.errors import Terminated

runtime.stop_on_signals()
stop_at = time.monotonic() + 0.4

def other():
    while time.monotonic() < stop_at:
        importlib.util.find_spec("no_such_module_other")

thread = threading.Thread(target=other)
thread.start()
print("ready", flush=True)
try:
    while True:
        importlib.util.find_spec("no_such_module_main")
except Terminated:
    pass
thread.join(5)
print("hung" if thread.is_alive() else "ended", flush=True)
import os
os._exit(0)
'''


def test_a_sigterm_amid_imports_leaves_no_lock_held(tmp_path: Path) -> None:
    # Without the step check, about half of these hung (the other thread never got the lock).
    script = tmp_path / "child.py"
    script.write_text(CHILD, encoding="utf-8")
    outcomes = []
    for trial in range(12):
        child = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE,
                                 text=True, env=cli_env())
        assert child.stdout is not None and child.stdout.readline().strip() == "ready"
        time.sleep(0.03 + (trial % 6) * 0.04)
        child.send_signal(signal.SIGTERM)
        outcomes.append(child.communicate(timeout=30)[0].strip())
    assert outcomes == ["ended"] * 12, outcomes
