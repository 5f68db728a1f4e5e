"""A hanging adapter becomes one ERROR line naming the call, and no results file is written."""

from __future__ import annotations

from pathlib import Path

from conftest import assert_error_verdict, run_cli

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
    (tmp_path / "pouring.py").write_text(POURING)
    (tmp_path / "membench.toml").write_text(
        '[adapter]\ncommand = ["python3", "pouring.py"]\ntimeout = 1\n'
        '[suites.veto]\nfixtures = ["builtin"]\n')
    out = tmp_path / "results.json"
    done = run_cli("run", "--out", out, cwd=tmp_path, timeout=60)
    assert done.returncode == 4, done.stderr
    assert "no answer within 1s" in done.stderr
    assert_error_verdict(out)
