"""``membench-gate selftest``: is every gated metric able to fail?

The enabled suites run once unmutated, then once per mutant (:mod:`membench_gate.selftest.mutants`) with the
mutant between each suite and the adapter. Each mutated run is compared with the unmutated one by
the gate itself (:func:`membench_gate.gate.rules.decide`, the unmutated run as base and committed
baseline): a metric is *covered* when at least one mutant breaches it — a gated metric moved
adversely or went missing, a zero-gated one rose above 0. A metric no mutant can breach is *blind*:
the gate would wave through any regression of it. Exit 0 when every gated and zero-gated metric of
every enabled cell is covered, 1 otherwise (the blind metrics are named), 4 on an error.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from membench_gate.budget import OutOfTime
from membench_gate.config import Config
from membench_gate.errors import GateError, visible
from membench_gate.files import read_file
from membench_gate.gate.rules import decide
from membench_gate.model import metrics
from membench_gate.model.results import Baseline, validation_message
from membench_gate.run.runner import run
from membench_gate.selftest.mutants import MUTANTS, Mutant

_BREACHING = ("metric", "metric-missing", "zero")


class MutantResult(BaseModel):
    """What one mutant did: the metric keys (``cell:metric``) it breached, or why it could not run."""

    model_config = ConfigDict(extra="forbid", defer_build=True)
    description: str
    breached: list[str] = []
    error: str | None = None


class SelftestReport(BaseModel):
    """The selftest's data (``selftest --json``), which the action's comment reads."""

    model_config = ConfigDict(extra="forbid", defer_build=True)
    covered: int = Field(ge=0)
    total: int = Field(ge=0)
    blind: list[str]
    # The blind metrics the unmutated run already scores at their worst value: no run can do
    # worse, so no mutant can breach them until the memory scores above it.
    at_worst: list[str] = []
    metrics: dict[str, list[str]]  # cell:metric -> mutants that breach it
    kinds: dict[str, str]  # cell:metric -> gated | zero
    unmutated_breaches: list[str] = []
    mutants: dict[str, MutantResult]

    @property
    def ok(self) -> bool:
        return not self.blind


def targets(baseline: Baseline) -> dict[str, str]:
    """Every gated and zero-gated metric of every cell of a run: ``cell:metric`` → kind."""
    return {f"{cell}:{name}": kind for cell, data in sorted(baseline.cells.items())
            for name in sorted(data.metrics)
            if (kind := metrics.gate_kind(cell, name)) in ("gated", "zero")}


def _breached(base: Baseline, actual: Baseline) -> set[str]:
    verdict = decide(base, base, actual)
    return {b.key for b in verdict.breaches if b.kind in _BREACHING}


def selftest(config: Config, mutants: Sequence[type[Mutant]] = MUTANTS,
             log: bool = True) -> SelftestReport:
    """Run the unmutated suites and every mutant; judge each mutated run with the gate."""
    base = run(config).to_baseline()
    wanted = targets(base)
    # A zero-gated metric the unmutated run already breaks proves nothing when a mutant does too.
    already = sorted(_breached(base, base) & set(wanted))
    results: dict[str, MutantResult] = {}
    for number, mutant in enumerate(mutants, 1):
        if log:
            print(f"selftest: mutant {number}/{len(mutants)} {mutant.name}", file=sys.stderr,
                  flush=True)
        try:
            actual = run(config, wrap=mutant).to_baseline()
        except OutOfTime:
            raise  # no mutant's fault: the selftest is an ERROR
        except GateError as exc:
            results[mutant.name] = MutantResult(description=mutant.description, error=str(exc))
            continue
        hit = sorted((_breached(base, actual) & set(wanted)) - set(already))
        results[mutant.name] = MutantResult(description=mutant.description, breached=hit)
    by_metric = {key: [name for name, r in results.items() if key in r.breached]
                 for key in wanted}
    blind = [key for key, names in by_metric.items() if not names]
    worst = [key for key in blind if metrics.at_worst(*_metric_value(base, key))]
    return SelftestReport(covered=len(wanted) - len(blind), total=len(wanted), blind=blind,
                          at_worst=worst, metrics=by_metric, kinds=wanted,
                          unmutated_breaches=already, mutants=results)


def _metric_value(baseline: Baseline, key: str) -> tuple[str, float]:
    cell, _, name = key.rpartition(":")
    return name, baseline.cells[cell].metrics[name]


def render_table(report: SelftestReport) -> str:
    """The terminal table: mutant → metrics breached, then metric → covered or blind. A
    mutant's error quotes the adapter: every line is :func:`visible`."""
    lines = []
    width = max((len(n) for n in report.mutants), default=6)
    lines.append(f"{'mutant':<{width}}  breached")
    for name, result in report.mutants.items():
        what = f"ERROR: {result.error}" if result.error else \
            (", ".join(result.breached) if result.breached else "nothing")
        lines.append(f"{name:<{width}}  {what}")
    lines.append("")
    key_width = max((len(k) for k in report.metrics), default=6)
    lines.append(f"{'metric':<{key_width}}  {'gate':<5}  breached by")
    for key, names in report.metrics.items():
        shown = ", ".join(names) if names else (
            "BLIND — already at its worst value in the unmutated run: no run can score worse"
            if key in report.at_worst else "BLIND — no mutant breaches it")
        lines.append(f"{key:<{key_width}}  {report.kinds[key]:<5}  {shown}")
    if report.unmutated_breaches:
        lines.append("")
        lines.append("already breached by the unmutated run (not credited to any mutant): "
                     + ", ".join(report.unmutated_breaches))
    lines.append("")
    lines.append(f"gate sensitivity {report.covered}/{report.total} metrics")
    if report.blind:
        lines.append("blind metrics: " + ", ".join(report.blind))
    if report.at_worst:
        lines.append("at their worst already (the memory fails them entirely; the gate's "
                     "sensitivity shows once it scores above that): " + ", ".join(report.at_worst))
    return "\n".join(visible(line) for line in lines)


def read_report(path: Path) -> SelftestReport:
    """A ``selftest --json`` file, validated."""
    try:
        return SelftestReport.model_validate_json(read_file(path))
    except ValidationError as exc:
        raise GateError(validation_message(str(path), exc)) from exc


def sensitivity_markdown(report: SelftestReport, listed: bool = True) -> str:
    """The scoreboard's one-line piece: ``gate sensitivity N/N``, naming blind metrics (or, not
    ``listed``, counting them: where the names would not fit)."""
    from jinja2 import Environment, FileSystemLoader, StrictUndefined

    from membench_gate.files import data_dir
    from membench_gate.report.render import escape_md

    env = Environment(loader=FileSystemLoader(str(data_dir() / "templates")),
                      undefined=StrictUndefined, autoescape=False, keep_trailing_newline=True,
                      trim_blocks=True, lstrip_blocks=True)
    return env.get_template("selftest.md.j2").render(
        covered=report.covered, total=report.total, mutants=len(report.mutants), listed=listed,
        blind=[escape_md(key) for key in report.blind],
        at_worst=[escape_md(key) for key in report.at_worst])
