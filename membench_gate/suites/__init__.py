"""The suites: each turns fixtures + an adapter into cells (metrics, gold_total, failed ids).

Suites know nothing of baselines or the gate. Each item records what was asked (``asked``), the
gold ids (``gold``), what came back (``hits``: ranked ``{id, score}``, or ``injected`` ids for push)
and whether the system abstained, besides its ``outcome``: enough to debug one item from the results
file alone (``membench-gate show``). Each module exposes ``SCORER_VERSION`` (bumped when
scoring changes, which makes the next run a corpus change), ``run(fixtures, session, options,
progress)`` and ``score(records, options)``, where ``options`` is the suite's validated table of
``membench.toml`` (``config.VetoOptions``, …: ``options.k``). A suite that needs more of the
adapter than ``search`` (the writeback suite: its write path) also exposes
``check_adapter(capabilities)``, which the runner calls right after ``initialize``, before any
suite runs.

Ask, then score: ``run`` asks the adapter and keeps one *record* per item (cell -> item id ->
detail), then hands the records to ``score``, a pure function that derives every metric, the
outcome of each item and the cells from the records and the suite's options alone. ``merge``
calls the same ``score`` on the records of several shards, so an exact merge needs no second
definition of any metric. Records hold what a metric is computed from as integers, booleans and
strings (a rank, not a reciprocal rank), never as floats the results file would round. Cells a
suite derives from other cells' records (the abstention controls) are listed in ``DERIVED``.

Every record also keeps the answer it was scored on (``hits`` and ``abstained``, or ``injected``
for push; an answer asked again for a derived cell under the key the suite's ``ANSWERS`` names),
and ``run`` reads nothing of the adapter but those answers: a results file is re-derived by
replaying ``run`` with a session that gives each item its recorded answer
(:mod:`membench_gate.run.rederive`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from types import ModuleType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from membench_gate.adapter.types import Hit


Progress = Callable[[str, int, int], None]
Records = dict[str, dict[str, dict[str, Any]]]  # cell -> item id -> what the item recorded


@dataclass
class CellResult:
    """One ``suite/condition`` of a run."""

    metrics: dict[str, float]
    gold_total: int
    failed: list[str]


@dataclass
class SuiteRun:
    """Cells of one suite plus per-item detail (cell -> item id -> detail)."""

    cells: dict[str, CellResult] = field(default_factory=dict)
    items: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)

    def add(self, cell: str, metrics: dict[str, float], outcomes: dict[str, dict[str, Any]]) -> None:
        """Record a cell whose items carry an ``outcome`` of ``pass`` or ``fail``."""
        failed = sorted(i for i, d in outcomes.items() if d["outcome"] == "fail")
        self.cells[cell] = CellResult(metrics, len(outcomes), failed)
        self.items[cell] = dict(sorted(outcomes.items()))


def hit_list(hits: Sequence[Hit], k: int) -> list[dict[str, Any]]:
    """The ranked hits an item records (the top ``k``, best first), so ``membench-gate show``
    can say what came back instead of the gold."""
    return [{"id": hit.id, "score": hit.score} for hit in hits[:k]]


def outcome(passed: bool) -> str:
    return "pass" if passed else "fail"


def ratio(part: float, whole: float) -> float:
    return part / whole if whole else 0.0


def registry() -> dict[str, ModuleType]:
    """Suite name -> module (imported on demand)."""
    from membench_gate.suites import abstention, push, recall, veto, writeback

    return {"abstention": abstention, "push": push, "recall": recall, "veto": veto,
            "writeback": writeback}
