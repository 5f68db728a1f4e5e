"""What a suite is (:class:`Suite`) and what its run gives (:class:`SuiteRun`)."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol, cast, runtime_checkable

if TYPE_CHECKING:
    from membench_gate.suites.common.fixtures import SuiteFixtures
    from membench_gate.suites.common.folders import FixtureFile
    from membench_gate.suites.common.options import SuiteOptions

Progress = Callable[[str, int, int], None]
Records = dict[str, dict[str, dict[str, Any]]]  # cell -> item id -> what the item recorded


@dataclass
class CellResult:
    """One ``suite/condition`` of a run."""

    metrics: dict[str, float]
    gold_total: int
    failed: list[str]
    repeats: int | None = None  # a suite with repeats: R, and per item its passes out of R
    passes: dict[str, int] | None = None


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


@runtime_checkable
class FixturesModule(Protocol):
    """A suite's ``fixtures`` module: its fixture schema, read into a ``Fixtures`` object."""

    Fixtures: type[SuiteFixtures]

    def load(self, fixtures: SuiteFixtures, files: list[FixtureFile]) -> None:
        """Add the items of one fixture folder's files (in the suite's order) to ``fixtures``."""

    def validate(self, fixtures: SuiteFixtures, include_holdout: bool) -> None:
        """Check every reference of the merged items; fill ``digests`` and ``corpus``."""


@runtime_checkable
class ScoringModule(Protocol):
    """A suite's ``scoring`` module: ask the adapter, then score the records.

    ``run`` asks only about the items of ``fixtures.digests`` (a shard's, a worker's) and skips
    a unit — what one ``reset`` serves: a haystack, a conversation, a session — none of whose
    items it scores. A suite that resets per unit also defines ``units(fixtures) -> list[list[str]]``
    (optional): the scored items grouped by unit, in fixture order, so the workers split it by
    unit and each reset goes to one worker (:mod:`membench_gate.run.workers`); without it each
    item is a unit of its own."""

    def run(self, fixtures: Any, session: Any, options: Any,
            progress: Progress | None = None) -> SuiteRun:
        """Ask the adapter about every scored item; the cells :func:`score` gives its records."""

    def score(self, records: Records, options: Any) -> SuiteRun:
        """Every metric, outcome and cell from the records and the options alone (pure)."""


class Suite(NamedTuple):
    """One suite, as the registry (:mod:`membench_gate.suites`) hands it out.

    A small immutable record of values, not a ``Protocol`` a module implements: the registry must
    hand out what every command reads of a suite — its options model, the files it reads and its
    scorer version — without importing its fixture schema or its scorer, which only a run or a
    re-derivation needs. So the cheap values are fields, set in the suite package's
    ``__init__``, and the two heavy parts are modules of that package imported on first use:
    ``fixtures`` (a :class:`FixturesModule`) and ``scoring`` (a :class:`ScoringModule`). A
    ``NamedTuple``, as ``Metric`` and ``Config`` are: every command that reads a config defines
    this class, and defining it takes ~0.2 ms where a frozen dataclass takes ~1.5 ms.
    """

    name: str
    package: str  # the suite's package (its ``__name__``): where ``fixtures`` and ``scoring`` are
    options: type[SuiteOptions]  # its ``[suites.<name>]`` table of ``membench.toml``
    # Bumped when scoring changes (which makes the next run a corpus change): part of every
    # fixtures hash.
    scorer_version: int
    # The files it reads from one fixture folder: these JSON files, in this order, then every
    # ``*.json`` of ``subfolder`` (one conversation or session each) in name order, then those of
    # each of ``subfolders`` (more kinds of documents, such as continuity pairs). With
    # ``subfolders``, a folder needs any one of them all, not each.
    files: tuple[str, ...] = ()
    subfolder: str | None = None
    subfolders: tuple[str, ...] = ()
    # An answer asked again for a derived cell (cell -> the key of the item record holding it),
    # so a results file re-derives that cell's judgement.
    answers: Mapping[str, str] = MappingProxyType({})
    # What the suite needs of the adapter beyond ``search`` (a write path): called by the runner
    # right after ``initialize``, before any suite runs; raises a ``GateError``.
    check_adapter: Callable[[Any], None] | None = None
    # A live suite asks an LLM (docs/live.md): it needs ``[live]``, and its session answers
    # ``complete`` (the runner's record/replay client) besides the adapter's methods.
    live: bool = False

    @property
    def derived(self) -> frozenset[str]:
        """Cells this suite derives from its other cells' records (the abstention controls), as
        the metric registry lists them: a merge or a re-derivation recomputes them."""
        from membench_gate.model.metrics import DERIVED_CELLS

        return frozenset(c for c in DERIVED_CELLS if c.partition("/")[0] == self.name)

    @property
    def fixtures(self) -> FixturesModule:
        return cast("FixturesModule", importlib.import_module(f"{self.package}.fixtures"))

    @property
    def scoring(self) -> ScoringModule:
        return cast("ScoringModule", importlib.import_module(f"{self.package}.scoring"))

    def run(self, fixtures: SuiteFixtures, session: Any, options: SuiteOptions,
            progress: Progress | None = None) -> SuiteRun:
        """Ask ``session`` about every scored item of ``fixtures``; the suite's cells."""
        return self.scoring.run(fixtures, session, options, progress)

    def score(self, records: Records, options: SuiteOptions) -> SuiteRun:
        """The suite's cells from item records alone (what ``merge`` and ``check`` recompute)."""
        return self.scoring.score(records, options)
