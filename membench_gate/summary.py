"""Short plain-text summaries for the terminal (the Markdown report lives in report.py)."""

from __future__ import annotations

from pathlib import Path

from membench_gate.metrics import gate_kind
from membench_gate.results import Results, round4


def fmt(value: float | None) -> str:
    """A metric value as shown to people: rounded half-up to 4 decimals."""
    if value is None:
        return "—"
    return str(round4(value))


def run_summary(results: Results, out: Path | None) -> str:
    lines = [f"fixtures_hash {results.fixtures_hash[:12]}  ({len(results.cells)} cells, "
             f"{results.receipt.duration_s:.1f}s)"]
    for name, cell in sorted(results.cells.items()):
        shown = [f"{m}={fmt(v)}" for m, v in sorted(cell.metrics.items())
                 if gate_kind(name, m) != "report"]
        lines.append(f"  {name}: {cell.gold_total - len(cell.failed)}/{cell.gold_total} passed"
                     + (f"  {' '.join(shown)}" if shown else ""))
    if out is not None:
        lines.append(f"results written to {out}")
    return "\n".join(lines)
