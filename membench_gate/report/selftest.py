"""The selftest's report in words: the terminal table and the scoreboard's sensitivity line."""

from __future__ import annotations

from pathlib import Path

from pydantic import ValidationError

from membench_gate.errors import GateError, visible
from membench_gate.files import read_file
from membench_gate.model.results import validation_message
from membench_gate.model.selftest import SelftestReport


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
            if key in report.at_worst else
            "BLIND — its fixtures seed nothing of another source: no answer can break "
            "isolation (a page of another source in them measures it)"
            if key in report.nothing_foreign else "BLIND — no mutant breaches it")
        lines.append(f"{key:<{key_width}}  {report.kinds[key]:<5}  {shown}")
    if report.unmutated_breaches:
        lines.append("")
        lines.append("already breached by the unmutated run (not credited to any mutant): "
                     + ", ".join(report.unmutated_breaches))
    lines.append("")
    lines.append(f"gate sensitivity {report.covered}/{report.total} metrics")
    if report.blind:
        lines.append("blind metrics: " + ", ".join(report.blind))
    if report.null is not None:
        lines += ["", *null_lines(report)]
    if report.at_worst:
        lines.append("at their worst already (the memory fails them entirely; the gate's "
                     "sensitivity shows once it scores above that): " + ", ".join(report.at_worst))
    return "\n".join(visible(line) for line in lines)


def null_lines(report: SelftestReport) -> list[str]:
    """The null comparisons in words: the false-alarm rate next to alpha, then the power."""
    null = report.null
    assert null is not None
    low, high = null.interval
    verdict = "within alpha" if null.ok else "ABOVE alpha beyond its sampling error"
    lines = [f"null comparisons (A/A, resampled from the unmutated run's per-item rates, seed "
             f"{null.seed}): {null.false_alarms}/{null.comparisons} false alarms, rate "
             f"{null.rate:.3f} (Wilson 95% [{low:.3f}, {high:.3f}]) vs alpha {null.alpha:g}: "
             f"{verdict}"]
    if null.power:
        width = max(len(name) for name in null.power)
        lines.append(f"{'power against':<{width}}  flagged in {null.comparisons} resampled "
                     "comparisons")
        lines += [f"{name:<{width}}  {rate:.0%}" for name, rate in null.power.items()]
    return lines


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
        at_worst=[escape_md(key) for key in report.at_worst],
        nothing_foreign=[escape_md(key) for key in report.nothing_foreign])
