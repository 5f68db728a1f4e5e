"""The suites: each turns fixtures + an adapter into cells (metrics, gold_total, failed ids).

Suites know nothing of baselines or the gate. A suite is one package, ``suites/<name>/``, behind
the :class:`~membench_gate.suites.common.suite.Suite` declaration its ``__init__`` makes
(``SUITE``); this module is the one registry of them, and every other module reaches a suite
through it (:func:`get`, :func:`registry`), never by importing the package. A package holds:

- ``__init__.py``: what the suite measures (its docstring) and ``SUITE``: its name, options
  model, scorer version (bumped when scoring changes, which makes the next run a corpus change),
  the files it reads from a fixture folder, and, where it has them, the ``answers`` of its derived
  cells and ``check_adapter`` (what it needs of the adapter beyond ``search``, checked right after
  ``initialize``, before any suite runs);
- ``options.py``: its table of ``membench.toml`` (``[suites.<name>]``), a
  :class:`~membench_gate.suites.common.options.SuiteOptions`; the config builds ``[suites]``
  from these;
- ``fixtures.py``: its fixture schema, ``Fixtures`` (the loaded items), ``load`` and ``validate``
  (references, holdout, item digests);
- ``scoring.py``: ``run(fixtures, session, options, progress)`` and ``score(records, options)``.

Each item records what was asked (``asked``), the gold ids (``gold``), what came back (``hits``:
ranked ``{id, score}``, or ``injected`` ids for push) and whether the system abstained, besides
its ``outcome``: enough to debug one item from the results file alone (``membench-gate show``).

Ask, then score: ``run`` asks the adapter and keeps one *record* per item (cell -> item id ->
detail), then hands the records to ``score``, a pure function that derives every metric, the
outcome of each item and the cells from the records and the suite's options alone. ``merge``
calls the same ``score`` on the records of several shards, so an exact merge needs no second
definition of any metric. Records hold what a metric is computed from as integers, booleans and
strings (a rank, not a reciprocal rank), never as floats the results file would round. Cells a
suite derives from other cells' records (the abstention controls) are listed in the metric
registry (``model.metrics.DERIVED_CELLS``).

Every record also keeps the answer it was scored on (``hits`` and ``abstained``, or ``injected``
for push; an answer asked again for a derived cell under the key the suite's ``answers`` names),
and ``run`` reads nothing of the adapter but those answers: a results file is re-derived by
replaying ``run`` with a session that gives each item its recorded answer
(:mod:`membench_gate.run.rederive`).

Adding a suite: add its package (the four modules above), one line to ``_PACKAGES`` below, its
cells and metrics to the one metric registry (:mod:`membench_gate.model.metrics`: ``CONDITIONS``
and a ``Metric`` per metric), its built-in fixtures under ``fixtures/<name>/`` and its section in
docs/suites.md and docs/config.md. No other module changes: the config, the runner, merge,
re-derivation and the fixtures hash all read the registry.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from membench_gate.suites.common.suite import Suite

# The one registry: suite name -> its package. A package is imported when its suite is first asked
# for, and importing it imports only its declaration and options model (not its fixture schema
# or scorer).
_PACKAGES = {
    "abstention": "membench_gate.suites.abstention",
    "behaviour": "membench_gate.suites.behaviour",
    "push": "membench_gate.suites.push",
    "recall": "membench_gate.suites.recall",
    "veto": "membench_gate.suites.veto",
    "writeback": "membench_gate.suites.writeback",
}
NAMES = tuple(sorted(_PACKAGES))


def get(name: str) -> Suite:
    """The suite called ``name`` (a ``KeyError`` for a name the registry does not hold)."""
    suite: Suite = importlib.import_module(_PACKAGES[name]).SUITE
    return suite


def registry() -> dict[str, Suite]:
    """Suite name -> suite, every registered one."""
    return {name: get(name) for name in NAMES}
