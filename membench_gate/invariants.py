"""Rule 1's second half: an invariant the base measured cannot be unmeasured.

A zero-gated metric (``source_isolation_violations``, ``controls_passing``) is never blessable.
A pull request that stops measuring it — drops ``[suites.push]``, or changes the fixtures so the
cell carrying it is gone — would otherwise turn a violation into a blessable missing cell. So
such a suite is still run for its invariants, on the base commit's suite table (as the base
baseline records it) and the base commit's fixtures (read with git), against this pull
request's memory; a violation there is a REGRESSION like any other.

The base's fixtures are read before the adapter starts (:func:`prepare`); the suites are run
only when this run turns out not to measure a cell the base measured an invariant in
(:meth:`BaseSuites.measure`).
"""

from __future__ import annotations

import posixpath
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from membench_gate import metrics
from membench_gate.config import Config, SuiteOptions, parse_suite_options
from membench_gate.errors import GateError
from membench_gate.measurement import BUILTIN

if TYPE_CHECKING:
    from membench_gate.baseside import BaseSide
    from membench_gate.fixtures import SuiteFixtures
    from membench_gate.results import Cell
    from membench_gate.suites import Progress


class BaseSuites(NamedTuple):
    """Suites of the base that carry invariants, ready to run on this pull request's memory.

    ``config`` is the working tree's config with the base's tables for these suites (and the
    base's holdout flag); ``preloaded`` their fixtures as the base commit has them; ``cells``
    the base cells that carry a zero-gated metric."""

    config: Config
    preloaded: tuple[str, dict[str, SuiteFixtures]]
    cells: tuple[str, ...]

    def missing(self, measured: set[str]) -> list[str]:
        """The invariant cells of the base this run does not measure."""
        return [cell for cell in self.cells if cell not in measured]

    def measure(self, measured: set[str], progress: Progress | None = None) -> dict[str, Cell]:
        """Run the suites of the invariant cells ``measured`` lacks; their cells (only those),
        or nothing when this run measures every one."""
        missing = self.missing(measured)
        if not missing:
            return {}
        from membench_gate.runner import run

        suites = {cell.partition("/")[0] for cell in missing}
        digest, loaded = self.preloaded
        config = self.config._replace(
            suites={name: self.config.suites[name] for name in sorted(suites)})
        results = run(config, progress, preloaded=(digest, {n: loaded[n] for n in sorted(suites)}))
        return {cell: results.cells[cell] for cell in missing if cell in results.cells}


def invariant_cells(cells: dict[str, Cell]) -> list[str]:
    """The cells that carry a zero-gated metric."""
    return sorted(name for name, cell in cells.items()
                  if any(metrics.gate_kind(name, m) == "zero" for m in cell.metrics))


def prepare(config: Config, base: BaseSide, head_hash: str) -> BaseSuites | None:
    """The base's invariant-carrying suites with their fixtures read from the base commit, or
    None when nothing can go unmeasured (no base baseline, or the same measurement)."""
    baseline = base.baseline
    if baseline is None or baseline.fixtures_hash == head_hash or base.info.sha is None:
        return None
    cells = invariant_cells(baseline.cells)
    if not cells:
        return None
    recorded = baseline.config.get("suites") or {}
    label = f"the base baseline's config at {base.info.sha[:12]}"
    names = sorted({cell.partition("/")[0] for cell in cells} & set(recorded))
    if not names:
        return None
    suites = {name: parse_suite_options(name, recorded[name], f"{label} (suites.{name})")
              for name in names}
    include_holdout = bool(baseline.config.get("include_holdout", False))
    from membench_gate.fixtures import load_suite
    from membench_gate.measurement import hash_of

    with tempfile.TemporaryDirectory(prefix="membench-base-fixtures-") as tmp:
        folder = _base_fixtures(config, base, suites, Path(tmp))
        loaded = {name: load_suite(name, options.fixtures, folder, include_holdout)
                  for name, options in suites.items()}  # (read into memory: tmp may go)
    base_config = config._replace(suites=suites, include_holdout=include_holdout)
    digest = hash_of(base_config, {name: fx.files for name, fx in loaded.items()})
    return BaseSuites(base_config, (digest, loaded),
                      tuple(c for c in cells if c.partition("/")[0] in suites))


def _base_fixtures(config: Config, base: BaseSide, suites: dict[str, SuiteOptions],
                   root: Path) -> Path:
    """A folder under ``root`` standing for the base config's folder, holding the fixture
    folders the base's suites name, as the base commit has them ("builtin" is the gate's
    own)."""
    from membench_gate import gitbase
    from membench_gate.baseside import beside

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
