"""Repeats end to end: a seeded stochastic memory (``Flaky``) on the veto suite with
``repeats = 5``, run in its own process, pooled, re-derived, merged and gated statistically."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any, ClassVar

import pytest

from membench_gate.config import load_config
from membench_gate.errors import GateError
from membench_gate.gate.rules import decide
from membench_gate.model.results import dumps_results, parse_results
from membench_gate.run.merge import merge
from membench_gate.run.rederive import rederive
from membench_gate.run.runner import run
from membench_gate.run.shard import Shard
from membench_gate.selftest.mutants import by_name
from membench_gate.selftest.sensitivity import selftest
from tests.support.configs import write_config
from tests.support.paths import REPO

pytestmark = pytest.mark.slow  # real adapter processes, five passes each

SUITE = '[suites.veto]\nk = 5\nrepeats = 5\n'


def flaky(folder: Path, keep: float, seed: int) -> Path:
    return write_config(folder, SUITE, adapter="adapters_for_tests:Flaky",
                        options=f"keep = {keep}\nseed = {seed}")


def without_receipt(text: str) -> dict[str, Any]:
    data = json.loads(text)
    data.pop("receipt")
    return data


def test_passes_are_pooled_per_item_and_the_run_is_reproducible(tmp_path: Path) -> None:
    config = load_config(flaky(tmp_path, keep=0.8, seed=3))
    first, second = run(config), run(config)
    assert without_receipt(dumps_results(first)) == without_receipt(dumps_results(second))
    cell = first.cells["veto/files_known"]
    assert cell.repeats == 5 and cell.passes is not None
    assert set(cell.passes.values()) - {0, 5}, "a flaky memory passes some items some times"
    record = first.items["veto/files_known"]["scn-001"]
    assert record["passes"] == sum(r["outcome"] == "pass" for r in record["runs"])
    assert len(record["runs"]) == 5
    assert first.config["suites"]["veto"]["repeats"] == 5
    other = run(load_config(flaky(tmp_path / "other", keep=0.8, seed=4)))
    assert other.cells["veto/files_known"].passes != cell.passes  # the seed matters


class SeesRepeat:
    """A session wrapper noting the ``repeat`` the runner set when each search came."""

    seen: ClassVar[list[int]] = []

    def __init__(self, inner: Any) -> None:
        self.inner, self.capabilities, self.repeat = inner, inner.capabilities, -1

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def search(self, query: Any, item: str) -> Any:
        SeesRepeat.seen.append(self.repeat)
        return self.inner.search(query, item)


def test_each_pass_is_told_its_repeat(tmp_path: Path) -> None:
    SeesRepeat.seen = []
    run(load_config(flaky(tmp_path, keep=1.0, seed=0)), wrap=SeesRepeat)
    per_pass = len(SeesRepeat.seen) // 5
    assert SeesRepeat.seen == [r for r in range(5) for _ in range(per_pass)]


def test_a_results_file_is_re_derived_pass_by_pass(tmp_path: Path) -> None:
    config = load_config(flaky(tmp_path, keep=0.8, seed=3))
    results = run(config)
    text = dumps_results(results)
    rederive("r.json", parse_results(text, "r.json"), config)
    data = json.loads(text)
    cell = data["cells"]["veto/files_known"]
    item = next(i for i, n in cell["passes"].items() if 0 < n < 5)
    cell["passes"][item] += 1  # a count the records do not give
    with pytest.raises(GateError, match=r"cells.veto/files_known: does not follow from its items"):
        rederive("r.json", parse_results(json.dumps(data), "r.json"), config)
    data = json.loads(text)
    del data["items"]["veto/files_known"]["scn-001"]["runs"][0]
    with pytest.raises(GateError, match=r"scn-001.runs: expected the records of 5 passes"):
        rederive("r.json", parse_results(json.dumps(data), "r.json"), config)


def test_shards_merge_to_the_unsharded_run(tmp_path: Path) -> None:
    config = load_config(flaky(tmp_path, keep=1.0, seed=0))  # keep=1: shards call alike
    whole = run(config)
    parts = [(f"p{i}", parse_results(dumps_results(run(config, shard=Shard(i, 2))), f"p{i}"))
             for i in (1, 2)]
    merged = merge(parts)
    assert without_receipt(dumps_results(merged)) == without_receipt(dumps_results(whole))


def test_a_real_regression_is_caught_and_an_a_a_run_is_not(tmp_path: Path) -> None:
    base = run(load_config(flaky(tmp_path / "base", keep=0.95, seed=1))).to_baseline()
    same = run(load_config(flaky(tmp_path / "same", keep=0.95, seed=2)))
    worse = run(load_config(flaky(tmp_path / "worse", keep=0.6, seed=2)))
    regressed = decide(base, base, worse)
    assert regressed.verdict == "regression"
    kinds = {b.key: b.kind for b in regressed.breaches}
    assert kinds["veto/files_known"] == "stochastic-regression"
    assert set(kinds.values()) == {"stochastic-regression"}
    a_a = decide(base, base, same)
    assert a_a.verdict == "pass", [b.detail for b in a_a.breaches]
    assert {t.cell for t in a_a.stochastic} == set(base.cells)
    # The A/A run differs item by item: the per-item rule would have flagged it.
    assert any(set(same.cells[c].failed) - set(base.cells[c].failed) for c in base.cells)


def test_selftest_measures_false_alarms_and_power(tmp_path: Path) -> None:
    config = load_config(flaky(tmp_path, keep=0.9, seed=5))
    mutants = by_name()
    report = selftest(config, [mutants["drop-best-hit"], mutants["reverse-ranking"]], log=False)
    assert report.null is not None and report.null.comparisons >= 200
    assert report.null.rate <= 0.05 + 2 * (0.05 * 0.95 / report.null.comparisons) ** 0.5
    assert report.null.ok and report.ok
    assert report.null.power["drop-best-hit"] >= 0.9
    # The stochastic breach covers the cell's gated metrics.
    assert "veto/files_known:veto_recall_at_k" in report.mutants["drop-best-hit"].breached


def test_a_deterministic_check_never_imports_scipy(tmp_path: Path) -> None:
    probe = ("import sys, atexit\n"
             "atexit.register(lambda: print('scipy' in sys.modules))\n"
             "sys.argv = ['membench-gate'] + sys.argv[1:]\n"
             "from membench_gate.cli import console\n"
             "console()\n")
    for argv in (["--help"], ["check"]):
        done = subprocess.run([sys.executable, "-c", probe, *argv], cwd=REPO,
                              capture_output=True, text=True, check=False)
        assert done.returncode == 0, done.stderr
        assert done.stdout.splitlines()[-1] == "False", argv


def test_show_reads_a_stochastic_item_as_passes_out_of_repeats(tmp_path: Path) -> None:
    from membench_gate.commands.show import BaseOutcome, render_item

    results = run(load_config(flaky(tmp_path, keep=0.6, seed=5)))
    cell = results.cells["veto/files_known"]
    assert cell.passes is not None
    item = next(i for i, n in sorted(cell.passes.items()) if 0 < n < 5)
    runs = results.items["veto/files_known"][item]["runs"]
    first_fail = next(n for n, r in enumerate(runs) if r["outcome"] == "fail")
    page = render_item(results, "veto/files_known", item,
                       BaseOutcome(f"{cell.passes[item]}/5 passes", "base abc"))
    assert f"passes:     {cell.passes[item]}/5 (stochastic" in page
    assert f"pass shown: {first_fail + 1} of 5 (its first failing one)" in page
    assert "head:       FAIL" in page and "no detail recorded" not in page
    hits = runs[first_fail]["hits"]
    assert "came back:" in page  # the pass's own answer
    assert (hits[0]["id"] in page) if hits else "(no hits)" in page
    assert f"base:       {cell.passes[item]}/5 passes (base abc)" in page
