"""A suite with ``repeats = R``: R passes pooled into one :class:`SuiteRun` (docs/gate.md,
"Stochastic cells").

A suite's ``run`` and ``score`` do one pass, as for any suite; the runner, ``merge`` and the
re-derivation of a results file pool the passes here, so all three give the same bytes. Per
cell and gold item the pooled record is ``{"outcome", "passes", "runs"}``: the passes out of R,
``outcome`` ``pass`` only when every pass passed, and ``runs`` the R records of the passes in
order (what the re-derivation replays, pass by pass). A pooled metric is the mean of its values
over the passes, except a zero-gated one, which is its largest: an invariant broken in any pass
is broken (rule 1 holds for every repeat).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from membench_gate.model import metrics
from membench_gate.model.results import Cell
from membench_gate.suites.common.suite import CellResult, Records, SuiteRun


def pool(passes: Sequence[SuiteRun]) -> SuiteRun:
    """The R passes of one suite, in pass order, as one run with counts per item."""
    repeats = len(passes)
    pooled = SuiteRun()
    for cell in passes[0].cells:
        runs = [one.items[cell] for one in passes]
        counts = {item: sum(run[item]["outcome"] == "pass" for run in runs)
                  for item in sorted(runs[0])}
        pooled.items[cell] = {
            item: {"outcome": "pass" if count == repeats else "fail", "passes": count,
                   "runs": [run[item] for run in runs]}
            for item, count in counts.items()
        }
        pooled.cells[cell] = CellResult(
            metrics=_pooled_metrics(cell, [one.cells[cell].metrics for one in passes]),
            gold_total=len(counts),
            failed=sorted(item for item, count in counts.items() if count < repeats),
            repeats=repeats, passes=counts)
    return pooled


def as_cell(cell: CellResult) -> Cell:
    """A suite's cell as results and baselines hold it (counts only when it has repeats)."""
    return Cell(metrics=cell.metrics, gold_total=cell.gold_total, failed=cell.failed,
                repeats=cell.repeats, passes=cell.passes)


def _pooled_metrics(cell: str, per_pass: list[dict[str, float]]) -> dict[str, float]:
    out: dict[str, float] = {}
    for name in sorted({name for values in per_pass for name in values}):
        values = [values[name] for values in per_pass if name in values]
        out[name] = max(values) if metrics.gate_kind(cell, name) == "zero" \
            else sum(values) / len(values)
    return out


def split(records: Records, repeats: int) -> list[Records]:
    """Pooled item records as the R passes' own records (what ``score`` reads, one pass at a
    time). A record without R runs raises ``ValueError`` naming it."""
    out: list[Records] = [{} for _ in range(repeats)]
    for cell, items in records.items():
        for item, record in items.items():
            runs = _runs(record, repeats, f"items.{cell}.{item}")
            for number, run in enumerate(runs):
                out[number].setdefault(cell, {})[item] = run
    return out


def _runs(record: Any, repeats: int, where: str) -> list[dict[str, Any]]:
    runs = record.get("runs") if isinstance(record, dict) else None
    if not isinstance(runs, list) or len(runs) != repeats \
            or not all(isinstance(run, dict) for run in runs):
        raise ValueError(f"{where}.runs: expected the records of {repeats} passes")
    return runs
