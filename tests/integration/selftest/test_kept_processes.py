"""A selftest's runs go on in the adapter processes of their worker numbers: one process per
slot serves the unmutated run and every mutant's after it (each suite resets as always), with
the same report as a process per run; a run that fails leaves no process behind for the next,
and a terminated selftest leaves no process at all."""

from __future__ import annotations

import json
from functools import partial
from pathlib import Path

import pytest

from membench_gate.config import load_config
from membench_gate.defaults import DEFAULT_ALPHA
from membench_gate.run.runner import load_fixtures, run
from membench_gate.selftest import sensitivity
from tests.integration.adapter.test_timeout import gone
from tests.support.cli import run_cli, start_cli, terminate
from tests.support.configs import write_config

pytestmark = pytest.mark.slow

RECALL = '[suites.recall]\nfixtures = ["builtin"]\nk = 10\n'
MUTANTS = ("drop-best-hit", "reverse-ranking", "always-abstain", "never-abstain", "wrong-ids")


def _starts(folder: Path) -> list[dict[str, str]]:
    path = folder / "starts.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def _mutants() -> list[str]:
    return [arg for name in MUTANTS for arg in ("--mutant", name)]


@pytest.mark.parametrize("jobs", [1, 2])
def test_one_adapter_process_per_slot_serves_every_run_with_the_same_report(
        tmp_path: Path, jobs: int) -> None:
    kept, fresh = tmp_path / "kept", tmp_path / "fresh"
    write_config(kept, RECALL, "adapters_for_tests:StartLog", options=f'log = "{kept}"')
    done = run_cli("selftest", *_mutants(), "--jobs", str(jobs), "--json", "st.json", cwd=kept)
    assert done.returncode in (0, 1), done.stderr
    starts = _starts(kept)
    # Six runs (the unmutated one and five mutants'): a process per run would be six starts.
    assert len(starts) == jobs, starts
    assert sorted(s["worker"] for s in starts) == [str(n) for n in range(1, jobs + 1)]
    # The report is the one of a process per run: the same runs, each in a new process.
    write_config(fresh, RECALL, "adapters_for_tests:StartLog", options=f'log = "{fresh}"')
    config = load_config(fresh / "membench.toml")
    loaded = load_fixtures(config)
    chosen = [m for m in sensitivity.MUTANTS if m.name in MUTANTS]
    outcomes = [partial(lambda wrap: run(config, wrap=wrap, preloaded=loaded).to_baseline(), wrap)
                for wrap in (None, *chosen)]
    alone = sensitivity._judged(outcomes, chosen, DEFAULT_ALPHA).model_dump(mode="json")
    assert len(_starts(fresh)) == 1 + len(MUTANTS)
    together = json.loads((kept / "st.json").read_text())
    assert together["mutants"] == alone["mutants"]
    assert together["covered"] == alone["covered"] and together["blind"] == alone["blind"]


def test_a_run_that_fails_leaves_its_process_behind_and_the_next_starts_a_new_one(
        tmp_path: Path) -> None:
    write_config(tmp_path, RECALL, "adapters_for_tests:DiesInItsSecondRun",
                 options=f'log = "{tmp_path}"\nsearches = 0')
    config = load_config(tmp_path / "membench.toml")
    searches = len(load_fixtures(config)[1]["recall"].digests)  # one run's searches
    (tmp_path / "membench.toml").write_text((tmp_path / "membench.toml").read_text().replace(
        "searches = 0", f"searches = {searches}"))
    done = run_cli("selftest", *_mutants(), "--json", "st.json", cwd=tmp_path)
    report = json.loads((tmp_path / "st.json").read_text())["mutants"]
    # Process A: the unmutated run, then mutant 1 dies in it; B: mutant 2, then 3 dies; C: 4, 5.
    errors = [name for name in MUTANTS if report[name].get("error")]
    assert errors == ["drop-best-hit", "always-abstain", "wrong-ids"], (report, done.stderr)
    assert all("ended without answering (exit code 3)" in report[name]["error"]
               for name in errors), report
    assert len(_starts(tmp_path)) == 3
    assert all(gone(s["pid"]) for s in _starts(tmp_path))


@pytest.mark.parametrize("after", ["mutant 2/", "mutant 3/"])  # handing out runs; awaiting them
def test_a_terminated_selftest_stops_every_kept_process_at_once(tmp_path: Path, after: str
                                                                 ) -> None:
    # Each search takes 0.1 s more: a mutant's run, some 4 s; the runs in flight are stopped,
    # not waited for.
    write_config(tmp_path, RECALL, "adapters_for_tests:StartLog",
                 options=f'log = "{tmp_path}"\npause = 0.1')
    gate = start_cli("selftest", "--jobs", "2", "--json", "st.json", cwd=tmp_path)
    assert gate.stderr is not None
    for line in gate.stderr:  # the mutants are running, in both slots' kept processes
        if after in line:
            break
    terminate(gate, within=2.5)
    starts = _starts(tmp_path)
    assert len(starts) == 2
    assert all(gone(s["pid"]) for s in starts)


def test_a_terminated_selftest_of_a_memory_meant_to_be_random_stops_at_once(
        tmp_path: Path) -> None:
    # With repeats no process is kept from run to run, but the runs in flight are still
    # interrupted, not waited for (a veto run: 64 searches of 0.1 s more, twice).
    write_config(tmp_path, '[suites.veto]\nfixtures = ["builtin"]\nk = 5\nrepeats = 2\n',
                 "adapters_for_tests:StartLog", options=f'log = "{tmp_path}"\npause = 0.1')
    gate = start_cli("selftest", "--jobs", "2", "--mutant", "drop-best-hit", "--mutant",
                     "always-abstain", "--mutant", "wrong-ids", cwd=tmp_path)
    assert gate.stderr is not None
    for line in gate.stderr:
        if "mutant 2/" in line:
            break
    terminate(gate, within=2.5)
    assert all(gone(s["pid"]) for s in _starts(tmp_path))


def _live(pids: list[int]) -> list[int]:
    return [pid for pid in pids if Path(f"/proc/{pid}").exists()
            and "Z" not in Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[:1]]


@pytest.mark.parametrize(("workers_a", "workers_b", "jobs"), [(1, 2, None), (1, 2, 2), (2, 1, 2)])
def test_seams_with_their_own_workers_keep_one_process_per_number_and_leave_none(
        tmp_path: Path, workers_a: int, workers_b: int, jobs: int | None) -> None:
    seam = '[adapters.{name}]\npython = "adapters_for_tests:StartLog"\nworkers = {workers}\n' \
           '[adapters.{name}.options]\nlog = "{log}"\n'
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    config = (seam.format(name="a", workers=workers_a, log=tmp_path / "a")
              + seam.format(name="b", workers=workers_b, log=tmp_path / "b"))
    write_config(tmp_path, config + RECALL)
    jobs_flag = ("--jobs", str(jobs)) if jobs else ()
    done = run_cli("selftest", *_mutants()[:6], *jobs_flag, cwd=tmp_path)
    assert done.returncode in (0, 1), done.stderr
    for name, workers in (("a", workers_a), ("b", workers_b)):
        starts = _starts(tmp_path / name)
        # Never two live processes of one number, and each number started once (or, for a seam
        # whose runs need more numbers than a slot has, no more than once per run).
        # Each worker number started once for all four runs (a process per run and number
        # would be 4 or 8), and none left running.
        expected = jobs or workers
        assert sorted(s["worker"] for s in starts) == [str(n) for n in range(1, expected + 1)], \
            (name, starts)
        assert not _live([s["pid"] for s in starts]), (name, starts)
    assert not list(Path("/tmp").glob(f"membench-worker-*{tmp_path.name}*"))


def test_a_memory_meant_to_be_random_gets_a_new_process_per_run(tmp_path: Path) -> None:
    write_config(tmp_path, '[suites.veto]\nfixtures = ["builtin"]\nk = 5\nrepeats = 3\n',
                 "adapters_for_tests:StartLog", options=f'log = "{tmp_path}"')
    done = run_cli("selftest", "--mutant", "drop-best-hit", "--mutant", "always-abstain",
                   cwd=tmp_path)
    assert done.returncode in (0, 1), done.stderr
    assert len(_starts(tmp_path)) == 3  # the unmutated run and each mutant's: their own draws


def test_a_closed_keep_refuses_a_new_run_and_stops_what_it_is_given(tmp_path: Path) -> None:
    from membench_gate.errors import GateError
    from membench_gate.run.workers import Kept, Workers

    write_config(tmp_path, RECALL, "adapters_for_tests:StartLog", options=f'log = "{tmp_path}"')
    config = load_config(tmp_path / "membench.toml")
    kept = Kept()
    lent = Workers(config, [1], False)
    kept.lend(lent)
    assert lent.first.client.name  # initialized: a run is using it
    kept.close(ok=False)  # the selftest stopped: what a run is using is killed at once
    assert not lent.first.process.alive
    with pytest.raises(GateError, match="stopped: no further run starts"):
        kept.take(config, "", [1], False)
    late = Workers(config, [2], False)
    late.first.client  # noqa: B018 (a run that started just before the close)
    pid = _starts(tmp_path)[-1]["pid"]
    kept.give("", late)  # it ends after the close: stopped, never kept
    assert gone(pid)
    lent.kill()
