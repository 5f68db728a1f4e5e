"""Rule 1's second half: an invariant the base measured cannot be unmeasured.

A zero-gated metric (``source_isolation_violations``, ``controls_passing``) is never blessable.
A pull request that stops measuring it — drops ``[suites.push]``, changes the fixtures so the
cell carrying it is gone, or holds out, removes or rewrites just the items that violate it —
would otherwise turn a violation into a blessable change of the measurement. So a suite that
carries an invariant at the base and whose measurement this pull request changed (its table,
the holdout flag, a gold or corpus item) or dropped is also run on the base commit's suite
table (as the base baseline records it) and the base commit's fixtures (read with git), against
this pull request's memory; a violation there is a REGRESSION like any other.

The base's fixtures are read before the adapter starts (:func:`prepare`); the suites run after
this run's own (:meth:`BaseSuites.measure`).
"""

from __future__ import annotations

import posixpath
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from membench_gate.config import Config, parse_suite_options
from membench_gate.defaults import BUILTIN
from membench_gate.errors import GateError
from membench_gate.model import cells as cell_names
from membench_gate.model import metrics

if TYPE_CHECKING:
    from membench_gate.base.side import BaseSide
    from membench_gate.model.results import Baseline, Cell
    from membench_gate.suites.common.fixtures import SuiteFixtures
    from membench_gate.suites.common.options import SuiteOptions
    from membench_gate.suites.common.suite import Progress


class BaseSuites(NamedTuple):
    """Suites of the base that carry invariants, ready to run on this pull request's memory.

    ``config`` is the working tree's config with the base's tables for these suites (and the
    base's holdout flag); ``preloaded`` their fixtures as the base commit has them; ``cells``
    the base cells that carry a zero-gated metric."""

    config: Config
    preloaded: tuple[str, dict[str, SuiteFixtures]]
    cells: tuple[str, ...]

    def measure(self, progress: Progress | None = None) -> dict[str, Cell]:
        """Run the suites on this pull request's memory; their invariant cells (in each seam of
        this run: a seam the base did not have is measured too)."""
        from membench_gate.run.runner import run

        results = run(self.config, progress, preloaded=self.preloaded)
        wanted = {cell_names.local(cell) for cell in self.cells}
        return {cell: measured for cell, measured in results.cells.items()
                if cell_names.local(cell) in wanted}


class Measured(NamedTuple):
    """What this run measures of one suite, as its fixtures (or its results file) say, to tell
    whether the pull request changed the measurement of the base's suite."""

    table: dict[str, Any] | None  # the recorded options; None: the suite is not run
    include_holdout: bool
    digests: dict[str, str]  # gold item -> content digest
    corpus: dict[str, str]


def measured_by(config: Config, fixtures: Mapping[str, SuiteFixtures]) -> dict[str, Measured]:
    """What a run of ``config`` on ``fixtures`` measures, suite by suite."""
    return {name: Measured(config.suite_record(name), config.include_holdout, fx.digests,
                           fx.corpus) for name, fx in fixtures.items()}


def measured_in(baseline: Baseline) -> dict[str, Measured]:
    """What a baseline (or results file) measured, suite by suite."""
    suites = baseline.config.get("suites") or {}
    holdout = bool(baseline.config.get("include_holdout", False))
    out: dict[str, Measured] = {}
    for name, table in suites.items():
        digests: dict[str, str] = {}
        for cell, items in baseline.digests.items():
            # (every seam measures the same items: their digests are the same)
            if cell_names.suite_of(cell) == name \
                    and cell_names.local(cell) not in metrics.DERIVED_CELLS:
                digests.update(items)
        out[name] = Measured(table, holdout, digests, baseline.corpus.get(name, {}))
    return out


def invariant_cells(cells: dict[str, Cell]) -> list[str]:
    """The cells that carry a zero-gated metric."""
    return sorted(name for name, cell in cells.items()
                  if any(metrics.gate_kind(name, m) == "zero" for m in cell.metrics))


def prepare(config: Config, base: BaseSide, head_hash: str,
            head: Mapping[str, Measured]) -> BaseSuites | None:
    """The base's invariant-carrying suites whose measurement ``head`` (what this run measures)
    changed or dropped, with their fixtures read from the base commit; None when there is none
    (no base baseline, the same measurement, or no such suite changed)."""
    baseline = base.baseline
    if baseline is None or baseline.fixtures_hash == head_hash or base.info.sha is None:
        return None
    cells = invariant_cells(baseline.cells)
    at_base = measured_in(baseline)
    names = sorted(name for name in {cell_names.suite_of(cell) for cell in cells} & set(at_base)
                   if head.get(name) != at_base[name])
    if not names:
        return None
    label = f"the base baseline's config at {base.info.sha[:12]}"
    suites = {name: parse_suite_options(name, at_base[name].table, f"{label} (suites.{name})")
              for name in names}
    include_holdout = bool(baseline.config.get("include_holdout", False))
    from membench_gate.run.measure import hash_of
    from membench_gate.suites.common.fixtures import load_suite

    with tempfile.TemporaryDirectory(prefix="membench-base-fixtures-") as tmp:
        folder = _base_fixtures(config, base, suites, Path(tmp))
        loaded = {name: load_suite(name, options.fixtures, folder, include_holdout)
                  for name, options in suites.items()}  # (read into memory: tmp may go)
    base_config = config._replace(suites=suites, include_holdout=include_holdout)
    digest = hash_of(base_config, {name: fx.files for name, fx in loaded.items()})
    return BaseSuites(base_config, (digest, loaded),
                      tuple(c for c in cells if cell_names.suite_of(c) in suites))


def _base_fixtures(config: Config, base: BaseSide, suites: dict[str, SuiteOptions],
                   root: Path) -> Path:
    """A folder under ``root`` standing for the base config's folder, holding the fixture
    folders the base's suites name, as the base commit has them ("builtin" is the gate's
    own)."""
    from membench_gate.base import git as gitbase
    from membench_gate.base.side import beside

    config_rel = base.config_rel or "membench.toml"
    assert base.info.sha is not None
    with gitbase.open_repo(config.base_dir) as repo:
        for name, options in suites.items():
            for entry in options.fixtures:
                if entry == BUILTIN:
                    continue
                rel = beside(config_rel, entry, f"suites.{name}.fixtures")
                files = repo.read_tree(base.info.sha, rel)
                if not files:
                    raise GateError(f"suites.{name}.fixtures: folder {entry!r} not found at the "
                                    f"base commit {base.info.sha[:12]} (needed to measure the "
                                    "base's invariants)")
                for path, data in files.items():
                    target = root / rel / path
                    target.parent.mkdir(parents=True, exist_ok=True)
                    target.write_bytes(data)
    return root / posixpath.dirname(config_rel)
