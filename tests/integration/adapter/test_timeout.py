"""A hanging adapter becomes one ERROR line naming the call, and no results file is written."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support.cli import assert_error_verdict, cli_env, run_cli

# Each test waits for an adapter's timeout or signal: seconds per test.
pytestmark = pytest.mark.slow

HANGING = '''\
import time

from membench_gate.reference import ReferenceMemory


class Hanging(ReferenceMemory):
    def search(self, query):
        if "{trigger}" in query.text.lower():
            time.sleep(120)
        return super().search(query)
'''


def test_hanging_adapter_is_stopped_by_the_timeout(tmp_path: Path) -> None:
    (tmp_path / "hanging.py").write_text(HANGING.format(trigger=""))
    (tmp_path / "membench.toml").write_text(
        '[adapter]\npython = "hanging:Hanging"\ntimeout = 1\n'
        '[suites.abstention]\nfixtures = ["builtin"]\n')
    out = tmp_path / "results.json"
    done = run_cli("run", "--out", out, cwd=tmp_path, timeout=60)
    assert done.returncode == 4
    assert "adapter search() failed in suite abstention, item probe-" in done.stderr
    assert "no answer within 1s" in done.stderr
    assert "Traceback" not in done.stderr
    assert_error_verdict(out)


def test_timeout_must_be_a_number(tmp_path: Path) -> None:
    (tmp_path / "membench.toml").write_text(
        '[adapter]\ntimeout = "soon"\n[suites.veto]\nfixtures = ["builtin"]\n')
    done = run_cli("run", cwd=tmp_path)
    assert done.returncode == 4 and "adapter.timeout" in done.stderr


def command_adapter(tmp_path: Path, script: str, timeout: int) -> None:
    """``script`` as the config's adapter (``python3 adapter.py``), on the veto suite, in a git
    repository with no commit yet (check resolves its base before an adapter starts)."""
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / "adapter.py").write_text(script)
    (tmp_path / "membench.toml").write_text(
        f'[adapter]\ncommand = ["python3", "adapter.py"]\ntimeout = {timeout}\n'
        '[suites.veto]\nfixtures = ["builtin"]\n')


def gone(pid: int) -> bool:
    """Whether process ``pid`` has ended (waiting up to five seconds for it to be reaped)."""
    for _ in range(50):
        if not Path(f"/proc/{pid}").exists():
            return True
        time.sleep(0.1)
    return False


POURING = '''\
import sys
import time

for line in sys.stdin:  # answers initialize, then pours out a line that never ends
    if '"initialize"' in line:
        sys.stdout.write('{"jsonrpc": "2.0", "id": 1, "result": {"protocol": 1, "name": "t", '
                         '"capabilities": {"push": false, "write": false}}}\\n')
        sys.stdout.flush()
        continue
    while True:  # some 30 MB a second, far from the 256 MB a line may hold
        sys.stdout.write("x" * 65536)
        sys.stdout.flush()
        time.sleep(0.002)
'''


def test_an_answer_that_keeps_coming_is_late_all_the_same(tmp_path: Path) -> None:
    # Output that keeps arriving without ending its line does not hold the timeout off.
    command_adapter(tmp_path, POURING, timeout=1)
    out = tmp_path / "results.json"
    done = run_cli("run", "--out", out, cwd=tmp_path, timeout=60)
    assert done.returncode == 4, done.stderr
    assert "no answer within 1s" in done.stderr
    assert_error_verdict(out)


STUCK = '''\
import os
import sys
import time

open("adapter.pid", "w").write(str(os.getpid()))
for line in sys.stdin:  # answers initialize, then never answers again
    if '"initialize"' in line:
        sys.stdout.write('{"jsonrpc": "2.0", "id": 1, "result": {"protocol": 1, "name": "s", '
                         '"capabilities": {"push": false, "write": false}}}\\n')
        sys.stdout.flush()
    else:
        time.sleep(600)
'''


@pytest.mark.parametrize("signame", ["SIGTERM", "SIGHUP"])
@pytest.mark.parametrize("command", [["run", "--out", "out.json"],
                                     ["check", "--json", "out.json", "--report", "report.md"]])
def test_a_terminated_command_stops_its_adapter_and_replaces_its_outputs(
        tmp_path: Path, command: list[str], signame: str) -> None:
    # `timeout`, `docker stop` or a cancelled job end the command like Ctrl-C does.
    command_adapter(tmp_path, STUCK, timeout=300)
    for name in ("out.json", "report.md"):
        (tmp_path / name).write_text("from an earlier run\n")
    # Started as a terminal or a runner starts it: the signal at its default, even when this
    # test run itself ignores it (under nohup the gate keeps an ignored SIGHUP ignored, rightly).
    gate = subprocess.Popen([sys.executable, "-m", "membench_gate", *command], cwd=tmp_path,
                            env=cli_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, preexec_fn=lambda: signal.signal(
                                getattr(signal, signame), signal.SIG_DFL))
    pid_file = tmp_path / "adapter.pid"
    for _ in range(600):  # until the adapter runs (at most a minute)
        if pid_file.exists() and pid_file.read_text():
            break
        time.sleep(0.1)
    time.sleep(0.5)  # the gate is waiting for an answer now
    gate.send_signal(getattr(signal, signame))
    _, stderr = gate.communicate(timeout=60)

    assert gate.returncode == 4, stderr
    assert f"membench-gate: error: terminated ({signame})" in stderr
    assert "Traceback" not in stderr
    assert_error_verdict(tmp_path / "out.json")
    if "check" in command:
        assert "ERROR" in (tmp_path / "report.md").read_text().splitlines()[0]
    assert gone(int(pid_file.read_text()))


WITH_A_CHILD = '''\
import subprocess
import sys

# A helper process that inherits stdout and outlives the adapter (a server, a worker).
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
open("child.pid", "w").write(str(child.pid))
for line in sys.stdin:
    if '"initialize"' in line:
        sys.stdout.write('{"jsonrpc": "2.0", "id": 1, "result": {"protocol": 1, "name": "c", '
                         '"capabilities": {"push": false, "write": false}}}\\n')
        sys.stdout.flush()
    else:
        sys.exit(EXIT_CODE)
'''


@pytest.mark.parametrize("exit_code", [0, 101])
def test_an_adapter_that_ends_is_reported_as_ended_and_its_children_are_stopped(
        tmp_path: Path, exit_code: int) -> None:
    # Its child still holds the adapter's stdout open: the gate does not wait out the timeout
    # (an hour here), it reports the end and the exit code, and stops the child too.
    command_adapter(tmp_path, WITH_A_CHILD.replace("EXIT_CODE", str(exit_code)), timeout=3600)
    out = tmp_path / "results.json"
    done = run_cli("run", "--out", out, cwd=tmp_path, timeout=120)
    assert done.returncode == 4, done.stderr
    assert f"the adapter process ended without answering (exit code {exit_code})" in done.stderr
    assert_error_verdict(out)
    assert gone(int((tmp_path / "child.pid").read_text()))


# The gate stopped by a signal at a given moment: the code below patches the gate in a fresh
# interpreter so that the signal arrives exactly there, then runs the console entry point.
SIGNAL_AT = '''\
import os
import signal
import sys

from membench_gate.commands import outputs as check
from membench_gate.cli import main as cli
from membench_gate.adapter import rpc

where = sys.argv.pop(1)


def stop_here(*args, **kwargs):
    os.kill(os.getpid(), signal.SIGTERM)
    raise AssertionError("the signal did not stop the command")


if where == "parse":
    cli.build_parser = stop_here
elif where == "launch":
    rpc.launch = stop_here
elif where == "clean-up":  # a second signal while the files are being replaced
    replace = check._replace
    def again(path, text):
        os.kill(os.getpid(), signal.SIGTERM)
        replace(path, text)
    rpc.launch = stop_here
    check._replace = again
cli.console()
'''


@pytest.mark.parametrize("where", ["parse", "launch", "clean-up"])
def test_a_signal_at_any_moment_is_one_line_and_leaves_no_stale_file(
        tmp_path: Path, where: str) -> None:
    command_adapter(tmp_path, STUCK, timeout=300)
    for name in ("v.json", "r.md"):
        (tmp_path / name).write_text("from an earlier run\n")
    done = subprocess.run([sys.executable, "-c", SIGNAL_AT, where, "check", "--json", "v.json",
                           "--report", "r.md"], cwd=tmp_path, env=cli_env(),
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 4, done.stderr
    assert done.stderr.splitlines() == ["membench-gate: error: terminated (SIGTERM)"]
    if where != "parse":  # (stopped before a file was named: nothing to replace)
        assert_error_verdict(tmp_path / "v.json")
        assert "ERROR" in (tmp_path / "r.md").read_text().splitlines()[0]


def test_doctor_stops_at_the_first_call_a_hanging_adapter_does_not_answer(tmp_path: Path) -> None:
    # Each later check would wait out its own timeout to fail the same way (minutes at the
    # default): they are said not run, and the one that hung is the one to fix.
    (tmp_path / "hanging.py").write_text(HANGING.format(trigger=""))
    (tmp_path / "membench.toml").write_text(
        '[adapter]\npython = "hanging:Hanging"\ntimeout = 1\n'
        '[suites.abstention]\nfixtures = ["builtin"]\n')
    started = time.monotonic()
    done = run_cli("doctor", cwd=tmp_path, timeout=120)
    assert done.returncode == 1, done.stdout + done.stderr
    rows = [line.strip() for line in done.stdout.splitlines()
            if line.startswith("  ") and line.split()[:1] in (["ok"], ["FAIL"], ["n/a"])]
    failed = [row for row in rows if row.startswith("FAIL")]
    assert len(failed) == 1 and "no answer within 1s" in failed[0], rows
    hung = failed[0].removeprefix("FAIL").strip().split("  ")[0]
    after = rows[rows.index(failed[0]) + 1:]
    assert len(after) >= 5 and all(
        row.startswith("n/a") and f"not run: the adapter did not answer in {hung!r}" in row
        for row in after), rows
    assert f"{len(rows) - 1 - len(after)}/{len(rows)} checks conform, {len(after)} not run; " \
        f"fix: {hung}" in done.stdout, done.stdout
    assert time.monotonic() - started < 30
