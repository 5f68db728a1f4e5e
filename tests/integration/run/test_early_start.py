"""The adapter starts while the fixtures are parsed (docs/gate.md, "Inputs before the pull
request's code"): the fixture files are read first — which files there are and their bytes — so
what the adapter does to them from its first instant changes nothing of the run; a fixture that
is not valid stops the adapter started beside it, and its error is the run's, as before.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest

from membench_gate.config import Config, load_config
from membench_gate.errors import GateError
from membench_gate.run.runner import load_fixtures, read_fixtures, run
from membench_gate.suites.common.folders import suite_files
from tests.support.cli import run_cli
from tests.support.configs import write_config, write_json

FACTS = [
    {"id": "f1", "text": "The billing service stores money as integer cents."},
    {"id": "f2", "text": "Staging deploys run every weekday at 14:00 UTC."},
    {"id": "f3", "text": "The on-call rotation hands over on Mondays at 10:00."},
]
PROBES = [
    {"id": "p1", "question": "How does billing store money?", "gold_fact_id": "f1"},
    {"id": "p2", "question": "When do staging deploys run?", "gold_fact_id": "f2"},
    {"id": "p3", "question": "Which CDN serves the docs site?", "gold_fact_id": None},
]
SUITES = '[suites.abstention]\nfixtures = ["fx"]\nk = 3\n'


def _fixtures(folder: Path) -> Path:
    write_json(folder / "fx" / "facts.json", FACTS)
    write_json(folder / "fx" / "probes.json", PROBES)
    return folder / "fx"


def _measured(results: Any) -> dict[str, Any]:
    data = results.model_dump(mode="json")
    return {key: data[key] for key in ("fixtures_hash", "cells", "digests", "corpus", "items")}


def _tamper(fx: Path) -> None:
    """What an adapter could do the moment it starts: every probe made the same easy question,
    a fact dropped, a fact file's bytes made invalid."""
    write_json(fx / "probes.json", [{**probe, "question": FACTS[0]["text"]} for probe in PROBES])
    (fx / "facts.json").write_text("{ not JSON", encoding="utf-8")


def test_what_the_adapter_rewrites_the_moment_it_starts_was_read_before(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fx = _fixtures(tmp_path)
    config = load_config(write_config(tmp_path, SUITES))
    honest = _measured(run(config))

    launch = Config.launch

    def tampering_launch(self: Config, env: Any = None) -> Any:
        _tamper(fx)  # before the adapter's process exists: the earliest its code could
        return launch(self, env)

    monkeypatch.setattr(Config, "launch", tampering_launch)
    assert _measured(run(config)) == honest
    # The control: the adapter's start did rewrite them, and a run that read them now fails.
    assert (fx / "facts.json").read_text(encoding="utf-8") == "{ not JSON"
    monkeypatch.setattr(Config, "launch", launch)
    with pytest.raises(GateError, match=r"facts\.json"):
        run(config)


def test_the_files_read_are_parsed_as_they_were_read(tmp_path: Path) -> None:
    """Which files a folder holds is fixed when it is read: a file added to a subfolder later,
    or one removed, is not looked for again."""
    folder = tmp_path / "fx"
    write_json(folder / "conversations" / "c1.json", {
        "id": "c1", "source": "work",
        "pages": [{"slug": "ana-lima", "text": "Ana Lima runs the billing team.",
                   "aliases": ["Ana"], "source": "work"}],
        "turns": [{"id": "t1", "text": "Ask Ana about invoices.", "expect": "retrieve",
                   "gold": ["ana-lima"], "acceptable": []}],
    })
    config = load_config(write_config(tmp_path, '[suites.push]\nfixtures = ["fx"]\n'))
    expected = load_fixtures(config)
    read = read_fixtures(config)
    (folder / "conversations" / "c1.json").unlink()
    write_json(folder / "conversations" / "c0.json", {"id": "c0", "turns": []})
    assert load_fixtures(config, read)[0] == expected[0]
    assert [[f.label for f in files] for files in suite_files("push", ["fx"], tmp_path, None)] \
        == [["fx/conversations/c0.json"]]  # (the disk says otherwise now)


def test_a_file_read_is_decoded_as_a_text_file_is_read(tmp_path: Path) -> None:
    """Windows and old Mac line ends and a bad byte: the same text, and the same error, as
    reading the file as text gives."""
    fx = _fixtures(tmp_path)
    text = (fx / "probes.json").read_text(encoding="utf-8")
    (fx / "probes.json").write_bytes(text.replace("\n", "\r\n").encode("utf-8"))
    config = load_config(write_config(tmp_path, SUITES))
    assert load_fixtures(config, read_fixtures(config))[0] == load_fixtures(config)[0]
    (fx / "facts.json").write_bytes(b'[{"id": "f1", "text": "caf\xe9"}]')
    assert "fx/facts.json: cannot read fixture file" in _one_error(config)
    (fx / "facts.json").write_bytes(b'[\r  {"id": "f1" "text": "x"}\r]')
    assert "fx/facts.json:2:" in _one_error(config)


def _one_error(config: Config) -> str:
    """The error of loading the fixtures as read beforehand, which is the error of loading them
    from the files (as a text file is read)."""
    with pytest.raises(GateError) as from_disk:
        load_fixtures(config)
    with pytest.raises(GateError) as from_read:
        load_fixtures(config, read_fixtures(config))
    assert str(from_read.value) == str(from_disk.value)
    return str(from_read.value)


def _alive_with(token: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if token.encode() in argv and state != "Z":
            found.append(int(entry.name))
    return found


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads the process table in /proc")
def test_a_fixture_that_is_not_valid_stops_the_adapter_started_beside_it(tmp_path: Path) -> None:
    """A command adapter that starts, says so and never answers: the run is the fixture's one
    error line (as without the adapter), and no process of the adapter is left."""
    token = f"early-start-{os.getpid()}"
    started = tmp_path / "started"
    script = ("import pathlib, sys, time; pathlib.Path(sys.argv[1]).write_text('yes'); "
              "time.sleep(60)")
    adapter = json.dumps([sys.executable, "-c", script, str(started), token])
    fx = _fixtures(tmp_path)
    (fx / "probes.json").write_text('[\n  {"id": "p1" "question": "x"}\n]\n', encoding="utf-8")
    config = write_config(tmp_path, f"[adapter]\ncommand = {adapter}\ntimeout = 5\n" + SUITES)
    temp = tmp_path / "temp"
    temp.mkdir()
    proc = run_cli("run", "--config", config, cwd=tmp_path, env={"TMPDIR": str(temp)})
    assert proc.returncode == 4, proc.stderr
    assert proc.stderr.splitlines() == [
        "membench-gate: error: fx/probes.json:2:15: invalid JSON: Expecting ',' delimiter"], \
        proc.stderr
    assert _alive_with(token) == []
    assert list(temp.iterdir()) == []  # (its worker's temp folder went with it)
    # The same fixture error when the adapter cannot even start: the fixtures' comes first.
    missing = write_config(tmp_path, '[adapter]\ncommand = ["/nonexistent/memory"]\n' + SUITES)
    again = run_cli("run", "--config", missing, cwd=tmp_path)
    assert (again.returncode, again.stderr) == (proc.returncode, proc.stderr)


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads the process table in /proc")
def test_the_control_an_adapter_that_never_answers_did_start(tmp_path: Path) -> None:
    """With valid fixtures the same adapter is waited for until its timeout: it was started,
    so the test above saw a started adapter stopped, not one that never ran."""
    token = f"early-start-control-{os.getpid()}"
    started = tmp_path / "started"
    script = ("import pathlib, sys, time; pathlib.Path(sys.argv[1]).write_text('yes'); "
              "time.sleep(60)")
    adapter = json.dumps([sys.executable, "-c", script, str(started), token])
    _fixtures(tmp_path)
    config = write_config(tmp_path, f"[adapter]\ncommand = {adapter}\ntimeout = 2\n" + SUITES)
    proc = run_cli("run", "--config", config, cwd=tmp_path)
    assert proc.returncode == 4 and "no answer within 2s" in proc.stderr, proc.stderr
    assert started.read_text() == "yes"
    assert _alive_with(token) == []


COUNTED = '''\
import os
from pathlib import Path

from membench_gate.reference import ReferenceMemory


class Counted(ReferenceMemory):
    """The reference memory, noting each worker that builds one."""

    def __init__(self, **options):
        with Path(__file__).with_name("built.txt").open("a") as built:
            built.write(os.environ["MEMBENCH_WORKER"] + "\\n")
        super().__init__(**options)
'''


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads the process table in /proc")
def test_workers_started_before_the_fixtures_said_how_many_are_stopped_unbuilt(
        tmp_path: Path) -> None:
    """Four workers asked for, started before the fixtures are parsed; two probes give only two
    anything to score: the other two hosts are stopped without building a memory, and the
    results are one worker's."""
    (tmp_path / "counted.py").write_text(COUNTED, encoding="utf-8")
    write_json(tmp_path / "fx" / "facts.json", FACTS)
    write_json(tmp_path / "fx" / "probes.json", PROBES[:2])
    outs = []
    for jobs in ("1", "4"):
        (tmp_path / "built.txt").unlink(missing_ok=True)
        config = write_config(tmp_path, SUITES, adapter="counted:Counted")
        out = tmp_path / f"r{jobs}.json"
        proc = run_cli("run", "--config", config, "--jobs", jobs, "--out", out, cwd=tmp_path)
        assert proc.returncode == 0, proc.stderr
        outs.append({k: v for k, v in json.loads(out.read_text()).items() if k != "receipt"})
        assert _alive_with("counted:Counted") == []
    assert sorted((tmp_path / "built.txt").read_text().split()) == ["1", "2"]
    assert outs[0] == outs[1]


def test_with_several_broken_inputs_the_error_is_the_first_in_loading_order(
        tmp_path: Path) -> None:
    """A suite whose folder is missing, after one whose file is not JSON: the error is the
    first suite's, as when each suite was read and parsed in turn."""
    fx = _fixtures(tmp_path)
    (fx / "probes.json").write_text('[\n  {"id": "p1" "question": "x"}\n]\n', encoding="utf-8")
    config = load_config(write_config(
        tmp_path, SUITES + '[suites.veto]\nfixtures = ["no-such-folder"]\n'))
    assert next(iter(config.suites)) == "abstention"
    with pytest.raises(GateError) as in_turn:
        load_fixtures(config)
    with pytest.raises(GateError) as early:
        run(config)
    assert str(early.value) == str(in_turn.value)
    assert "fx/probes.json:2:15" in str(early.value)
    (fx / "probes.json").unlink()  # and a file that cannot be read, the same way
    write_json(fx / "probes.json", PROBES)
    (fx / "facts.json").unlink()
    with pytest.raises(GateError) as in_turn:
        load_fixtures(config)
    with pytest.raises(GateError) as early:
        run(config)
    assert str(early.value) == str(in_turn.value) == "fx/facts.json: fixture file not found"


def test_the_gates_code_that_reads_the_fixtures_is_imported_before_the_adapter_starts(
        tmp_path: Path) -> None:
    """What parses and validates the fixtures is the gate's own code: imported before the
    adapter starts (as when the adapter started after the parse), so an adapter that could
    rewrite the gate's files cannot change how they are read."""
    _fixtures(tmp_path)
    config = write_config(tmp_path, SUITES)
    code = f"""
import sys
from membench_gate.config import Config, load_config
from membench_gate.run.runner import run
launch = Config.launch
def recording(self, env=None):
    print(sorted(m for m in sys.modules if m.startswith("membench_gate.suites.abstention.")))
    return launch(self, env)
Config.launch = recording
run(load_config(__import__("pathlib").Path({str(config)!r})))
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True, cwd=tmp_path)
    seen = done.stdout.splitlines()[0]
    assert "membench_gate.suites.abstention.fixtures" in seen, seen


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads the process table in /proc")
@pytest.mark.parametrize("where", ["receipt", "plan"])
def test_an_interrupt_just_after_the_early_start_stops_every_worker_and_removes_its_folder(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, where: str) -> None:
    """Ctrl-C in the instant after the workers started: before the fixtures are parsed (the
    receipt's commit is asked for then), or once they are, while the run works out how many
    workers get anything (before it has taken the early workers as its own). Every process is
    stopped and every worker's temp folder removed, as an interrupt at any later point does."""
    from membench_gate.run import runner, workers

    token = f"early-interrupt-{os.getpid()}"
    started = tmp_path / "started"
    script = ("import os, pathlib, sys, time; "
              "pathlib.Path(sys.argv[1], os.environ['MEMBENCH_WORKER']).write_text('yes'); "
              "time.sleep(60)")
    started.mkdir()
    adapter = json.dumps([sys.executable, "-c", script, str(started), token])
    _fixtures(tmp_path)
    config = load_config(write_config(
        tmp_path, f"[adapter]\ncommand = {adapter}\ntimeout = 5\nworkers = 2\n" + SUITES))
    temp = tmp_path / "temp"
    temp.mkdir()
    monkeypatch.setenv("TMPDIR", str(temp))
    monkeypatch.setattr(tempfile, "tempdir", str(temp))

    def interrupted(config: Config) -> Any:
        for _ in range(200):  # until the first worker's process runs: the control
            if (started / "1").exists():
                break
            time.sleep(0.05)
        assert (started / "1").read_text() == "yes"
        assert len(list(temp.iterdir())) >= 1  # its temp folder exists
        raise KeyboardInterrupt

    if where == "receipt":
        monkeypatch.setattr(runner, "_receipt_sha", interrupted)
    else:
        monkeypatch.setattr(workers, "useful", lambda *args: interrupted(config))
    with pytest.raises(KeyboardInterrupt):
        run(config)
    assert _alive_with(token) == []
    assert list(temp.iterdir()) == []
