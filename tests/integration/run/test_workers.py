"""Adapter workers: N adapter processes give the bytes of one (receipt aside), each with its own
number and temp folder; an adapter with one shared store runs as one; a failing worker stops the
others and the run is one ERROR line.

The property test runs every suite in the gate's own process (one reference memory per worker,
as each worker process holds one) over random options, worker counts and shards, split and put
back together as the runner does; the CLI tests run real adapter processes.
"""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from membench_gate.adapter.types import Answer, Pushed, Query, Record, Session
from membench_gate.config import load_config
from membench_gate.model.canonical import canonical_dumps
from membench_gate.reference import ReferenceMemory
from membench_gate.run.runner import load_fixtures
from membench_gate.run.shard import Shard
from membench_gate.run.workers import combine, shares
from membench_gate.suites import get
from membench_gate.suites.common.repeats import as_cell
from membench_gate.suites.common.suite import SuiteRun
from tests.support.cli import cli_env, run_cli
from tests.support.configs import write_config
from tests.support.paths import REPO

pytestmark = pytest.mark.slow


class Direct:
    """A suite's view of a memory in this process: what a worker's adapter process answers."""

    def __init__(self, memory: ReferenceMemory) -> None:
        from membench_gate.adapter.rpc import Capabilities

        self.memory, self.capabilities = memory, Capabilities(push=True, write=True)

    def reset(self, item: str | None = None) -> None:
        self.memory.reset()

    def ingest(self, records: list[Record], item: str | None = None) -> None:
        self.memory.ingest(list(records))

    def search(self, query: Query, item: str) -> Answer:
        return self.memory.search(query)

    def push(self, query: Query, item: str) -> list[str]:
        return self.memory.push(query)

    def push_answer(self, query: Query, item: str) -> Pushed:
        return Pushed(self.memory.push(query))

    def write(self, session: Session, item: str | None = None) -> None:
        self.memory.write(session)


CONFIG = load_config(REPO / "membench.toml")
_, LOADED = load_fixtures(CONFIG)


def _dumped(run: SuiteRun) -> str:
    return canonical_dumps({"cells": {n: as_cell(c).model_dump(mode="json")
                                      for n, c in run.cells.items()},
                            "items": run.items})


@settings(max_examples=12, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(suite=st.sampled_from(sorted(LOADED)), workers=st.integers(2, 5),
       shard_count=st.integers(1, 3), data=st.data())
def test_workers_give_the_cells_and_items_of_one_worker(suite: str, workers: int,
                                                        shard_count: int,
                                                        data: st.DataObject) -> None:
    options = CONFIG.suites[suite]
    if "k" in type(options).model_fields:
        options = options.model_copy(update={"k": data.draw(st.integers(1, 10), label="k")})
    tau = data.draw(st.sampled_from([0.0, 0.35, 0.6]), label="tau")
    fixtures = LOADED[suite]
    index = data.draw(st.integers(1, shard_count), label="shard")
    scored = Shard(index, shard_count).restrict(suite, fixtures) if shard_count > 1 else fixtures
    whole = get(suite).run(scored, Direct(ReferenceMemory(tau=tau)), options)
    parts = [get(suite).run(share, Direct(ReferenceMemory(tau=tau)), options)
             for share in shares(suite, scored, workers) if share is not None]
    assert len(parts) > 1 or len(scored.digests) < 2  # the items were really split
    assert _dumped(combine(suite, options, parts)) == _dumped(whole)


def _without_receipt(path: Path) -> dict[str, Any]:
    data = json.loads(path.read_text(encoding="utf-8"))
    data.pop("receipt")
    return data


def test_run_with_jobs_writes_the_bytes_of_one_worker_with_shards_too(tmp_path: Path) -> None:
    one = run_cli("run", "--out", tmp_path / "one.json", "--shard", "2/3")
    three = run_cli("run", "--out", tmp_path / "three.json", "--shard", "2/3", "--jobs", "3")
    assert one.returncode == three.returncode == 0, three.stderr
    assert _without_receipt(tmp_path / "one.json") == _without_receipt(tmp_path / "three.json")
    # Progress lines name their worker; the one-worker run's do not.
    assert "worker 3: veto:" in three.stderr and "worker" not in one.stderr


SMALL = ('[suites.veto]\nfixtures = ["builtin"]\nk = 5\n'
         '[suites.recall]\nfixtures = ["builtin"]\nk = 10\n')


def test_each_worker_has_its_number_and_a_temp_folder_of_its_own(tmp_path: Path) -> None:
    write_config(tmp_path, SMALL)
    (tmp_path / "membench.toml").write_text(
        f'[adapter]\npython = "adapters_for_tests:WorkerProbe"\nworkers = 3\n'
        f'[adapter.options]\nlog = "{tmp_path}"\n{SMALL}', encoding="utf-8")
    done = run_cli("run", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    seen = [json.loads((tmp_path / f"worker-{n}.json").read_text()) for n in (1, 2, 3)]
    assert [s["worker"] for s in seen] == ["1", "2", "3"]
    folders = {s["tmpdir"] for s in seen}
    assert len(folders) == 3 and all(s["tmp_exists"] for s in seen)
    assert not any(os.path.exists(folder) for folder in folders)  # removed after the run
    # --jobs overrides the table: one worker — still numbered, still with a folder of its own
    # (not the gate's: two commands at once on one machine must not share a store).
    for path in tmp_path.glob("worker-*.json"):
        path.unlink()
    env = {"TMPDIR": str(tmp_path / "gate-tmp")}
    (tmp_path / "gate-tmp").mkdir()
    done = run_cli("run", "--jobs", "1", cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in tmp_path.glob("worker-*.json")) == ["worker-1.json"]
    alone = json.loads((tmp_path / "worker-1.json").read_text())
    assert alone["worker"] == "1" and alone["tmp_exists"], alone
    assert alone["tmpdir"] not in folders and Path(alone["tmpdir"]).parent == tmp_path / "gate-tmp"
    assert not os.path.exists(alone["tmpdir"])
    # doctor's own processes (the handshake, the determinism check's) are worker 1 as well.
    for path in tmp_path.glob("worker-*.json"):
        path.unlink()
    done = run_cli("doctor", "--jobs", "1", cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert sorted(p.name for p in tmp_path.glob("worker-*.json")) == ["worker-1.json", "worker-2.json"]
    probe = json.loads((tmp_path / "worker-1.json").read_text())
    assert probe["tmp_exists"] and not os.path.exists(probe["tmpdir"])
    assert list((tmp_path / "gate-tmp").iterdir()) == []  # every folder went with its process


def test_workers_share_the_cpus_between_their_thread_pools(tmp_path: Path) -> None:
    from membench_gate.run.workers import THREAD_VARIABLES
    from tests.support import adapters_for_tests

    assert adapters_for_tests.THREAD_VARIABLES == THREAD_VARIABLES
    write_config(tmp_path, SMALL, "adapters_for_tests:WorkerProbe", options=f'log = "{tmp_path}"')

    def seen(jobs: str, **env: str) -> list[dict[str, str | None]]:
        for path in tmp_path.glob("worker-*.json"):
            path.unlink()
        environ = {k: v for k, v in cli_env(env).items()
                   if k not in THREAD_VARIABLES or k in env}
        done = subprocess.run([sys.executable, "-m", "membench_gate", "run", "--jobs", jobs],
                              cwd=tmp_path, env=environ, capture_output=True, text=True,
                              timeout=300, check=False)
        assert done.returncode == 0, done.stderr
        return [json.loads(path.read_text())["threads"]
                for path in sorted(tmp_path.glob("worker-*.json"))]

    # Three workers: each its share of the CPUs, at least one; a variable the gate's environment
    # sets is left as it is.
    share = str(max(1, len(os.sched_getaffinity(0)) // 3))
    three = seen("3", MKL_NUM_THREADS="7")
    assert len(three) == 3
    for threads in three:
        assert threads == {**dict.fromkeys(THREAD_VARIABLES, share), "MKL_NUM_THREADS": "7"}
    # One worker: nothing added.
    assert seen("1") == [dict.fromkeys(THREAD_VARIABLES)]


def test_an_adapter_declaring_one_store_runs_as_one_worker_and_is_told_once(
        tmp_path: Path) -> None:
    write_config(tmp_path, SMALL, "adapters_for_tests:SingleStore", options=f'log = "{tmp_path}"')
    done = run_cli("run", "--jobs", "3", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stderr.count("declares capabilities.workers false") == 1, done.stderr
    assert "1 worker instead of 3" in done.stderr
    assert sorted(p.name for p in tmp_path.glob("worker-*.json")) == ["worker-1.json"]


STARTUP_PROBE = """
import json, os, time
from pathlib import Path
from membench_gate.reference import ReferenceMemory

LOG = Path(__file__).resolve().parent
NUMBER = os.environ["MEMBENCH_WORKER"]
(LOG / f"imported-{NUMBER}").write_text(str(os.getpid()))


class Probe(ReferenceMemory):
    def __init__(self, workers=3, **options):
        super().__init__(**options)
        seen = True
        if NUMBER == "1":  # waits for the other hosts' imports: they must run meanwhile
            until = time.monotonic() + 20
            while not (seen := all((LOG / f"imported-{n}").exists()
                                   for n in range(2, workers + 1))):
                if time.monotonic() > until:
                    break
                time.sleep(0.02)
        (LOG / f"built-{NUMBER}").write_text("together" if seen else "alone")


class OneStore(Probe):
    workers = False
"""


@pytest.mark.parametrize("target", ["Probe", "OneStore"])
def test_a_python_adapters_hosts_start_together_and_build_only_when_allowed(
        tmp_path: Path, target: str) -> None:
    (tmp_path / "startup_probe.py").write_text(STARTUP_PROBE, encoding="utf-8")
    (tmp_path / "membench.toml").write_text(
        f'[adapter]\npython = "startup_probe:{target}"\nworkers = 3\n{SMALL}', encoding="utf-8")
    done = run_cli("run", "--out", "r.json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    # Every worker's host imported the module while worker 1 was still building its object
    # (worker 1 waits for them, at most 20 s: started one after the other, it would wait it out).
    assert sorted(p.name for p in tmp_path.glob("imported-*")) == \
        ["imported-1", "imported-2", "imported-3"]
    assert (tmp_path / "built-1").read_text() == "together"
    built = sorted(p.name for p in tmp_path.glob("built-*"))
    if target == "Probe":
        assert built == ["built-1", "built-2", "built-3"]
    else:  # one shared store: no second object is ever built
        assert built == ["built-1"], built
        assert "1 worker instead of 3" in done.stderr
        for number in (2, 3):  # their hosts are gone
            assert not _alive(int((tmp_path / f"imported-{number}").read_text()))


LINGERING = """
import atexit, json, os, time
from pathlib import Path
from membench_gate.reference import ReferenceMemory

LOG = Path(__file__).resolve().parent / "log"
LOG.mkdir(exist_ok=True)
(LOG / f"start-{os.getpid()}").write_text(json.dumps(time.time()))


def _linger():  # tidies up after it answered shutdown: allowed, within the grace period
    time.sleep(0.5)
    (LOG / f"end-{os.getpid()}").write_text(json.dumps(time.time()))


atexit.register(_linger)


class Memory(ReferenceMemory):
    pass
"""


def test_a_worker_number_is_never_two_live_processes_at_once(tmp_path: Path) -> None:
    (tmp_path / "lingering.py").write_text(LINGERING, encoding="utf-8")
    table = '[adapters.{0}]\npython = "lingering:Memory"\n'
    (tmp_path / "membench.toml").write_text(
        table.format("a") + table.format("b") + table.format("c") + SMALL, encoding="utf-8")
    done = run_cli("run", "--out", "r.json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    log = tmp_path / "log"
    spans = sorted((json.loads((log / f"start-{pid}").read_text()),
                    json.loads((log / f"end-{pid}").read_text()))
                   for pid in {p.name.split("-")[1] for p in log.iterdir()})
    assert len(spans) == 3  # every process ended (after its grace), within the command
    for (_, ended), (started, _) in itertools.pairwise(spans):
        assert ended <= started, spans  # the next seam's worker 1 started after the last ended


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return Path(f"/proc/{pid}/stat").exists() and \
        Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"


def test_a_worker_that_crashes_stops_the_others_and_the_run_is_one_error(tmp_path: Path) -> None:
    write_config(tmp_path, SMALL, "adapters_for_tests:CrashInWorkerOne",
                 options=f'log = "{tmp_path}"\nhang = 60')
    started = time.monotonic()
    done = run_cli("run", "--jobs", "2", "--out", "r.json", cwd=tmp_path)
    took = time.monotonic() - started
    assert done.returncode == 4, done.stderr
    errors = [line for line in done.stderr.splitlines() if "error:" in line]
    assert len(errors) == 1, done.stderr
    assert errors[0].startswith("membench-gate: error: worker 1: ") and "search" in errors[0]
    # The adapter's stderr tail says whose it is.
    assert "  | worker 1: worker one: the index file is gone" in done.stderr
    assert took < 40  # worker 2 was killed mid-search, not waited for (60 s a search)
    other = json.loads((tmp_path / "worker-2.json").read_text())
    assert not _alive(other["pid"])
    assert json.loads((tmp_path / "r.json").read_text())["verdict"] == "error"  # fail closed


def test_doctor_checks_that_two_workers_do_not_share_a_store(tmp_path: Path) -> None:
    reference = run_cli("doctor")
    assert "ok    two workers do not see each other's records" in reference.stdout, \
        reference.stdout
    write_config(tmp_path, SMALL, "adapters_for_tests:SharedFileStore")
    shared = run_cli("doctor", "--jobs", "2", cwd=tmp_path)
    assert shared.returncode == 1, shared.stdout + shared.stderr
    line = next(line for line in shared.stdout.splitlines() if "two workers" in line)
    assert line.lstrip().startswith("FAIL") and "workers = 1 is required" in line, line
    three = run_cli("doctor", "--jobs", "3", cwd=tmp_path)  # the row says how many it started
    line = next(line for line in three.stdout.splitlines() if "do not see each other" in line)
    assert "3 workers do not see each other's records" in line and "two" not in line, line
    single = tmp_path / "single"
    write_config(single, SMALL, "adapters_for_tests:SingleStore", options=f'log = "{single}"')
    told = run_cli("doctor", cwd=single)
    line = next(line for line in told.stdout.splitlines() if "two workers" in line)
    assert line.lstrip().startswith("n/a") and "capabilities.workers: false" in line, line


def test_bad_jobs_values_exit_4() -> None:
    for value in ("0", "x", "65"):
        done = run_cli("run", "--jobs", value)
        assert done.returncode == 4, done.stderr
        assert "--jobs" in done.stderr


def test_selftest_and_the_determinism_check_give_the_same_answers_with_workers(
        tmp_path: Path) -> None:
    write_config(tmp_path, SMALL, "membench_gate.reference:ReferenceMemory")
    mutants = ("--mutant", "drop-best-hit", "--mutant", "reverse-ranking",
               "--mutant", "always-abstain")
    one = run_cli("selftest", *mutants, "--json", "one.json", cwd=tmp_path)
    two = run_cli("selftest", *mutants, "--jobs", "2", "--json", "two.json", cwd=tmp_path)
    assert (one.returncode, one.stdout) == (two.returncode, two.stdout), two.stderr
    assert json.loads((tmp_path / "one.json").read_text()) == \
        json.loads((tmp_path / "two.json").read_text())
    assert "(worker 2)" in two.stderr and "(worker" not in one.stderr


def test_the_determinism_check_runs_its_two_passes_side_by_side(tmp_path: Path) -> None:
    from membench_gate.run.determinism import first_difference, run_twice

    write_config(tmp_path, SMALL, "adapters_for_tests:WorkerProbe", options=f'log = "{tmp_path}"')
    config = load_config(tmp_path / "membench.toml").with_workers(3)
    preloaded = load_fixtures(config)
    first, second = run_twice(config, None, preloaded)
    assert first_difference(first, second) is None
    # Two workers for the first pass, one for the second, numbered apart: 3 processes at once.
    logged = [json.loads((tmp_path / f"worker-{n}.json").read_text()) for n in (1, 2, 3)]
    assert len({entry["tmpdir"] for entry in logged}) == 3
    assert canonical_dumps(first.model_dump(mode="json", exclude={"receipt"})) == \
        canonical_dumps(second.model_dump(mode="json", exclude={"receipt"}))


def test_a_terminated_determinism_check_stops_its_second_pass_at_once(tmp_path: Path) -> None:
    # Each search takes 0.2 s more: a pass is some 7 s. The signal comes once both passes' adapters
    # have started; the second pass is stopped with the first, not waited for (it once was: the
    # main thread's wait for it let no signal in).
    from tests.integration.adapter.test_timeout import gone
    from tests.support.cli import start_cli, terminate
    from tests.support.gitrepos import commit, init

    repo = init(tmp_path / "repo")
    write_config(repo, '[suites.recall]\nfixtures = ["builtin"]\nk = 10\n',
                 "adapters_for_tests:StartLog", options=f'log = "{tmp_path}"\npause = 0.2')
    commit(repo, "the gate", {})
    starts = tmp_path / "starts.jsonl"
    gate = start_cli("check", "--verify-determinism", "--jobs", "2", "--json", "v.json", cwd=repo)
    deadline = time.monotonic() + 60
    while not (starts.exists() and len(starts.read_text().splitlines()) == 2):
        assert gate.poll() is None and time.monotonic() < deadline, gate.communicate()
        time.sleep(0.05)
    time.sleep(0.5)  # both passes are searching
    terminate(gate, within=3)
    logged = [json.loads(line) for line in starts.read_text().splitlines()]
    assert sorted(entry["worker"] for entry in logged) == ["1", "2"]
    assert all(gone(entry["pid"]) for entry in logged)
    assert json.loads((repo / "v.json").read_text())["verdict"] == "error"


def test_an_adapter_with_one_store_has_its_selftest_mutants_run_one_after_the_other(
        tmp_path: Path) -> None:
    write_config(tmp_path, SMALL, "adapters_for_tests:SingleStore", options=f'log = "{tmp_path}"')
    done = run_cli("selftest", "--mutant", "drop-best-hit", "--mutant", "reverse-ranking",
                   "--jobs", "2", cwd=tmp_path)
    assert done.returncode in (0, 1), done.stderr
    assert "(worker" not in done.stderr  # not side by side
    assert done.stderr.count("declares capabilities.workers false") == 1, done.stderr
    assert sorted(p.name for p in tmp_path.glob("worker-*.json")) == ["worker-1.json"]


@pytest.mark.parametrize("suite", ["push", "writeback"])
def test_a_conversation_session_or_pair_is_replayed_by_one_worker_only(suite: str) -> None:
    class Counting(Direct):
        def __init__(self, memory: ReferenceMemory) -> None:
            super().__init__(memory)
            self.resets: list[str | None] = []

        def reset(self, item: str | None = None) -> None:
            self.resets.append(item)
            super().reset(item)

    options, fixtures = CONFIG.suites[suite], LOADED[suite]
    one = Counting(ReferenceMemory())
    whole = get(suite).run(fixtures, one, options)
    sessions = [Counting(ReferenceMemory()) for _ in range(3)]
    parts = [get(suite).run(share, direct, options)
             for share, direct in zip(shares(suite, fixtures, 3), sessions, strict=True)
             if share is not None]
    assert _dumped(combine(suite, options, parts)) == _dumped(whole)
    replayed = [item for direct in sessions for item in direct.resets]
    # Every unit the one worker replayed is replayed once in all, by one of the three.
    assert sorted(replayed) == sorted(one.resets) and len(set(replayed)) == len(replayed)
    assert all(direct.resets for direct in sessions)  # and the work is really spread


def test_doctor_names_the_worker_and_does_not_blame_sharing_for_an_unknown_id(
        tmp_path: Path) -> None:
    write_config(tmp_path, SMALL, "adapters_for_tests:FaultInWorkerTwo", options='fault = "unknown"')
    done = run_cli("doctor", "--jobs", "2", cwd=tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    line = next(line for line in done.stdout.splitlines() if "two workers" in line)
    assert line.lstrip().startswith("FAIL") and "'made-up-id', which no worker ingested" in line
    assert "workers = 1 is required" not in line and "only worker 1 ingested" not in line, line
    crash = tmp_path / "crash"
    write_config(crash, SMALL, "adapters_for_tests:FaultInWorkerTwo", options='fault = "crash"')
    done = run_cli("doctor", "--jobs", "2", cwd=crash)
    assert done.returncode == 1, done.stdout + done.stderr
    line = next(line for line in done.stdout.splitlines() if "two workers" in line)
    assert line.lstrip().startswith("FAIL") and "worker 2: adapter search() failed" in line, line
    assert "worker two: out of memory" in line  # the stderr line, and whose
    assert line.count("worker 2: ") == 1, line  # said once, not again before the stderr line


def test_a_score_a_results_file_cannot_hold_is_the_search_calls_error(tmp_path: Path) -> None:
    write_config(tmp_path, SMALL, "adapters_for_tests:FaultInWorkerTwo", options='fault = "huge"')
    done = run_cli("run", "--jobs", "2", "--out", "r.json", cwd=tmp_path)
    assert done.returncode == 4, done.stderr
    errors = [line for line in done.stderr.splitlines() if "error:" in line]
    assert len(errors) == 1 and errors[0].startswith("membench-gate: error: worker 2: "), errors
    assert "search()" in errors[0] and "score out of range: 1e+300" in errors[0], errors
    assert json.loads((tmp_path / "r.json").read_text())["verdict"] == "error"
    # doctor's workers row reads worker 2's answers too (its own row of checks is worker 1's).
    doctor = run_cli("doctor", "--jobs", "2", cwd=tmp_path)
    assert doctor.returncode == 1, doctor.stdout
    line = next(line for line in doctor.stdout.splitlines() if "two workers" in line)
    assert line.lstrip().startswith("FAIL") and "worker 2: " in line and "1e15" in line, line
    assert sum(line.lstrip().startswith("FAIL") for line in doctor.stdout.splitlines()) == 1


def test_a_worker_answering_initialize_unlike_the_first_is_an_error(tmp_path: Path) -> None:
    write_config(tmp_path, SMALL, "adapters_for_tests:FaultInWorkerTwo", options='fault = "alone"')
    done = run_cli("run", "--jobs", "2", "--out", "r.json", cwd=tmp_path)
    assert done.returncode == 4, done.stderr
    errors = [line for line in done.stderr.splitlines() if "error:" in line]
    assert len(errors) == 1, errors
    assert errors[0].startswith("membench-gate: error: worker 2: adapter initialize() broke "
                                "the protocol"), errors
    assert '"workers": false' in errors[0] and '"workers": true' in errors[0], errors
    assert errors[0].endswith("(docs/adapters.md: every worker is the same adapter: it answers "
                              "the capabilities worker 1 answered)"), errors
    assert json.loads((tmp_path / "r.json").read_text())["verdict"] == "error"
    doctor = run_cli("doctor", "--jobs", "2", cwd=tmp_path)
    assert doctor.returncode == 1, doctor.stdout
    line = next(line for line in doctor.stdout.splitlines() if "two workers" in line)
    assert line.lstrip().startswith("FAIL") and "worker 2: " in line and "worker 1 answered" in line, line
    # The control: the same adapter with worker 2 like worker 1.
    write_config(tmp_path / "ok", SMALL, "adapters_for_tests:FaultInWorkerTwo",
                 options='fault = "none"')
    assert run_cli("run", "--jobs", "2", cwd=tmp_path / "ok").returncode == 0


def test_the_determinism_checks_passes_and_selftests_slots_name_their_worker(
        tmp_path: Path) -> None:
    from membench_gate.errors import GateError
    from membench_gate.run.determinism import run_twice

    write_config(tmp_path, SMALL, "adapters_for_tests:FaultInWorkerTwo", options='fault = "crash"')
    config = load_config(tmp_path / "membench.toml").with_workers(2)
    with pytest.raises(GateError) as raised:  # the second pass is worker 2's
        run_twice(config, None, load_fixtures(config))
    assert str(raised.value).startswith("worker 2: adapter search() failed"), raised.value
    assert any(line.startswith("worker 2: ") and "out of memory" in line
               for line in raised.value.detail), raised.value.detail
    # A selftest's slots: two runs at once, each line of their progress whole on a line of its own.
    write_config(tmp_path / "ok", SMALL)
    selftest = run_cli("selftest", "--jobs", "2", cwd=tmp_path / "ok")
    assert selftest.returncode in (0, 1), selftest.stdout + selftest.stderr  # (blind: 1)
    progress = [line for line in selftest.stderr.splitlines() if "selftest: mutant" in line]
    assert len(progress) >= 2 and all(line.startswith("selftest: mutant") and
                                      line.count("selftest:") == 1 for line in progress), progress
    assert {line.rsplit("(", 1)[-1] for line in progress} == {"worker 1)", "worker 2)"}, progress


def test_a_worker_that_fails_to_stop_does_not_keep_the_others_running(tmp_path: Path) -> None:
    """Stopping the workers goes on past one whose stop fails: every other process is stopped
    and every temp folder removed, then the failure is raised."""
    from membench_gate.run.workers import Workers

    write_config(tmp_path, SMALL, "membench_gate.reference:ReferenceMemory")
    config = load_config(tmp_path / "membench.toml")
    workers = Workers(config, [1, 2, 3], True)
    workers.start_others()
    first, *others = workers.started
    folders = [w.tmp for w in workers.started]
    assert all(folder is not None and folder.is_dir() for folder in folders)
    stop = first.process.kill

    def failing() -> None:
        raise OSError("the first worker's stop failed")

    first.process.kill = failing  # type: ignore[method-assign]
    try:
        with pytest.raises(OSError, match="first worker's stop failed"):
            workers.kill()
        assert [w.process.proc.poll() is not None for w in others] == [True, True]
        assert first.process.proc.poll() is None  # (its stop did fail)
        assert not any(folder.exists() for folder in folders)
    finally:
        stop()


def test_doctor_does_not_blame_sharing_when_worker_one_never_found_its_records(
        tmp_path: Path) -> None:
    """A memory that finds nothing (here: no hits at all) fails the row that says so; the
    workers row cannot tell sharing from that, and says it did not check."""
    write_config(tmp_path, SMALL, "adapters_for_tests:Abstainer")
    done = run_cli("doctor", "--jobs", "2", cwd=tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    rows = done.stdout.splitlines()
    own = next(line for line in rows if "found by its own text" in line)
    assert own.lstrip().startswith("FAIL"), own
    line = next(line for line in rows if "two workers" in line)
    assert line.lstrip().startswith("n/a") and "not checked" in line, line
    assert "workers = 1 is required" not in line, line
    summary = next(line for line in rows if "checks conform" in line)
    assert "not applicable" in summary, summary


def test_worker_ones_failing_initialize_is_named_when_several_started(tmp_path: Path) -> None:
    write_config(tmp_path, SMALL, "adapters_for_tests:broken_factory")
    several = run_cli("run", "--jobs", "2", cwd=tmp_path)
    one = run_cli("run", cwd=tmp_path)
    errors = [[line for line in done.stderr.splitlines() if "error:" in line]
              for done in (several, one)]
    assert several.returncode == one.returncode == 4
    assert errors[0][0].startswith("membench-gate: error: worker 1: adapter "), several.stderr
    assert errors[0][0].replace("worker 1: ", "", 1) == errors[1][0], (several.stderr, one.stderr)


def test_the_determinism_check_says_an_adapter_with_one_store_runs_its_passes_in_turn(
        tmp_path: Path) -> None:
    from tests.support.gitrepos import commit, init

    repo = init(tmp_path / "repo")
    write_config(repo, SMALL, "adapters_for_tests:SingleStore", options=f'log = "{tmp_path}"')
    commit(repo, "the gate", {})
    done = run_cli("check", "--verify-determinism", "--jobs", "2", cwd=repo)
    assert done.returncode == 2 and "runs' results are identical" in done.stdout, done.stderr
    assert done.stderr.count("declares capabilities.workers false") == 1, done.stderr
    assert "1 worker instead of 2" in done.stderr
