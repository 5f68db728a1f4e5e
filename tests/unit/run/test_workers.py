"""``membench_gate/run/workers.py``: how the items are split between adapter workers, and the
``[adapter] workers`` / ``--jobs`` setting that is never part of what is measured."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from membench_gate.config import parse_config
from membench_gate.errors import GateError
from membench_gate.run.workers import shares, units, useful
from membench_gate.suites.common.fixtures import SuiteFixtures
from membench_gate.suites.recall.fixtures import Fixtures as RecallFixtures
from membench_gate.suites.recall.fixtures import RecallQuery

SUITES = '[suites.veto]\nfixtures = ["builtin"]\n'


def _config(adapter: str) -> str:
    return f'{adapter}\n{SUITES}'


def test_items_go_round_robin_in_fixture_order_and_cover_everything_once() -> None:
    fixtures = SuiteFixtures(suite="veto", files=[],
                             digests={f"scn-{i}": f"d{i}" for i in range(7)})
    split = shares("veto", fixtures, 3)
    assert [list(s.digests) if s else None for s in split] == [
        ["scn-0", "scn-3", "scn-6"], ["scn-1", "scn-4"], ["scn-2", "scn-5"]]
    assert shares("veto", fixtures, 1) == [fixtures]
    # More workers than items: the extra ones get nothing (and no process starts for them).
    few = replace(fixtures, digests={"a": "1", "b": "2"})
    assert [s.digests if s else None for s in shares("veto", few, 4)] == [
        {"a": "1"}, {"b": "2"}, None, None]
    assert useful({"veto": few}, 4) == 2
    # Nothing to score at all (a shard without items of the suite): worker 1 runs it, as one
    # worker would.
    empty = replace(fixtures, digests={})
    assert shares("veto", empty, 3) == [empty, None, None]


def _query(ident: str, haystack: list[str] | None) -> RecallQuery:
    return RecallQuery.model_validate({"id": ident, "question": f"q {ident}", "gold": [],
                                       "haystack": haystack})


def test_a_recall_haystack_is_one_unit_so_its_reset_goes_to_one_worker() -> None:
    queries = [_query("q1", ["s1"]), _query("q2", ["s2"]), _query("q3", ["s1"]),
               _query("q4", None), _query("q5", None), _query("q6", ["s2", "s3"])]
    fixtures = RecallFixtures(suite="recall", files=[], queries=queries,
                              digests={q.id: q.id for q in queries if q.id != "q3"} | {"q3": "x"})
    assert units("recall", fixtures) == [["q1", "q3"], ["q2"], ["q4"], ["q5"], ["q6"]]
    split = shares("recall", fixtures, 2)
    assert [sorted(s.digests) if s else None for s in split] == [["q1", "q3", "q4", "q6"],
                                                                 ["q2", "q5"]]
    # A unit none of whose items this run scores is no unit (a shard without it).
    shard = replace(fixtures, digests={"q2": "q2", "q5": "q5"})
    assert units("recall", shard) == [["q2"], ["q5"]]


def test_workers_are_read_from_adapter_tables_and_never_recorded(tmp_path: Path) -> None:
    path = tmp_path / "membench.toml"
    one = parse_config(_config('[adapter]\npython = "m:A"'), path)
    four = parse_config(_config('[adapter]\npython = "m:A"\nworkers = 4'), path)
    assert (one.workers, four.workers) == (1, 4)
    assert one.record() == four.record()  # not part of the measurement
    seams = parse_config(_config('[adapters.a]\npython = "m:A"\nworkers = 3\n'
                                 '[adapters.b]\npython = "m:B"'), path)
    assert [adapter.workers for _, adapter in seams.by_seam()] == [3, 1]
    # --jobs overrides every table.
    assert [adapter.workers for _, adapter in seams.with_workers(2).by_seam()] == [2, 2]
    assert seams.with_workers(None) is seams
    assert four.with_workers(1).workers == 1


@pytest.mark.parametrize("value", ["0", "65", "2.5", '"2"', "true"])
def test_a_bad_workers_value_is_a_one_line_error(tmp_path: Path, value: str) -> None:
    with pytest.raises(GateError, match=r"adapter\.workers"):
        parse_config(_config(f'[adapter]\npython = "m:A"\nworkers = {value}'),
                     tmp_path / "membench.toml")


def test_a_sealed_worker_keeps_its_own_temp_folder_inside_the_sandboxs(tmp_path: Path) -> None:
    import sys

    from membench_gate.adapter import seal

    sandbox = seal.Sandbox(tmp_path, True, "", Path("/ws/repo"), tmp_path / "venv",
                           tmp_path / "work", tmp_path / "home", tmp_path / "tmp", "sbx", 990,
                           990, interpreter=Path(sys.executable))
    own = tmp_path / "tmp" / "worker-2-abc"
    env = sandbox.environment({"PATH": "/bin", "TMPDIR": str(own), "MEMBENCH_WORKER": "2"})
    assert (env["TMPDIR"], env["TMP"], env["TEMP"]) == (str(own),) * 3
    assert env["MEMBENCH_WORKER"] == "2"
    # Anywhere else (the gate's own temp folder) is replaced by the sandbox's.
    env = sandbox.environment({"PATH": "/bin", "TMPDIR": "/tmp/elsewhere"})
    assert env["TMPDIR"] == str(tmp_path / "tmp")


def test_thread_pools_get_the_cpus_divided_between_the_processes_at_once(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from membench_gate.run import workers

    monkeypatch.setattr(workers, "usable_cpus", lambda: 8)
    for name in workers.THREAD_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    assert workers.thread_limits(1) == {}
    assert workers.thread_limits(3) == dict.fromkeys(workers.THREAD_VARIABLES, "2")
    assert workers.thread_limits(16) == dict.fromkeys(workers.THREAD_VARIABLES, "1")
    monkeypatch.setenv("OMP_NUM_THREADS", "5")  # the gate's own setting is the adapter's
    assert "OMP_NUM_THREADS" not in workers.thread_limits(2)
    # A selftest's slots (one worker each, several at once) share the CPUs as workers do; the
    # count is restored when the selftest ends, nested or not.
    import sys
    import threading

    switching = sys.getswitchinterval()
    with workers.sharing(4):
        assert sys.getswitchinterval() == min(switching, workers.SWITCH_S)
        with workers.sharing(2):
            assert workers._SHARING.at_once == 4
        assert workers._SHARING.at_once == 4
    assert workers._SHARING.at_once == 1 and sys.getswitchinterval() == switching
    with workers.sharing(1):
        assert sys.getswitchinterval() == switching  # one process: nothing changes
    # Ended in another order, from other threads (the determinism check's second pass): what
    # is left is what is still active, and nothing at all once every one has ended.
    first, second = threading.Event(), threading.Event()

    def beside() -> None:
        with workers.sharing(3):
            first.set()
            second.wait(10)

    thread = threading.Thread(target=beside)
    with workers.sharing(2):
        thread.start()
        first.wait(10)
        assert workers._SHARING.at_once == 3
    assert workers._SHARING.at_once == 3 and sys.getswitchinterval() < switching
    second.set()
    thread.join()
    assert workers._SHARING.at_once == 1 and sys.getswitchinterval() == switching
    env = workers.worker_env(2, None, 4)
    assert env["MEMBENCH_WORKER"] == "2" and env["OPENBLAS_NUM_THREADS"] == "2"


def test_the_gate_polls_only_while_one_of_its_threads_drives_an_adapter() -> None:
    import threading
    from types import SimpleNamespace

    from membench_gate.adapter import rpc
    from membench_gate.run.workers import Workers

    seen: list[int] = []
    both = threading.Barrier(2, timeout=10)

    def task(worker: SimpleNamespace) -> int:
        if len(pool.started) > 1:
            both.wait()  # both threads are in their task at once
        seen.append(rpc._driving.count)
        if len(pool.started) > 1:
            both.wait()
        return worker.number

    pool = object.__new__(Workers)
    pool._failed, pool._lock = None, threading.Lock()
    pool.started = [SimpleNamespace(number=1)]
    assert pool.each(task) == [1] and seen == [1]
    pool.started = [SimpleNamespace(number=1), SimpleNamespace(number=2)]
    seen.clear()
    assert pool.each(task) == [1, 2] and seen == [2, 2]
    assert rpc._driving.count == 0
