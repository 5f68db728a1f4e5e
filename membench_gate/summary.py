"""Short plain-text summaries for the terminal (the Markdown report lives in report.py)."""

from __future__ import annotations

import shlex
from pathlib import Path

from membench_gate.gate import HARD_KINDS, Verdict, breach_keys
from membench_gate.metrics import gate_kind
from membench_gate.results import Results, round4


def fmt(value: float | None) -> str:
    """A metric value as shown to people: rounded half-up to 4 decimals."""
    if value is None:
        return "—"
    return str(round4(value))


def run_summary(results: Results, out: Path | None) -> str:
    lines = [f"fixtures_hash {results.fixtures_hash[:12]}  ({len(results.cells)} cells, "
             f"{results.receipt.duration_s or 0:.1f}s)"]
    for name, cell in sorted(results.cells.items()):
        shown = [f"{m}={fmt(v)}" for m, v in sorted(cell.metrics.items())
                 if gate_kind(name, m) != "report"]
        lines.append(f"  {name}: {cell.gold_total - len(cell.failed)}/{cell.gold_total} passed"
                     + (f"  {' '.join(shown)}" if shown else ""))
    if out is not None:
        lines.append(f"results written to {out}")
    return "\n".join(lines)


_TITLES = {"pass": "PASS", "regression": "REGRESSION", "bless-required": "BLESS REQUIRED",
           "inconclusive": "INCONCLUSIVE", "error": "ERROR"}
_SHOWN = 10


def config_flag(verdict: Verdict) -> str:
    """`` --config PATH`` when the check did not use the default config."""
    config = verdict.config or "membench.toml"
    if config in ("membench.toml", "./membench.toml"):
        return ""
    return " --config " + (shlex.quote(config) if config else "")


def _named(keys: list[str]) -> str:
    """The metrics or cells a justification must name, briefly."""
    named = sorted({k.partition("#")[0] for k in keys})
    return ", ".join(named[:3]) + (f" and {len(named) - 3} more" if len(named) > 3 else "")


def next_steps(verdict: Verdict) -> list[str]:
    """What to do about this verdict, as commands a person can paste."""
    cfg = config_flag(verdict)
    keys = breach_keys(verdict)
    hard = breach_keys(verdict, HARD_KINDS)
    if verdict.verdict == "bless-required":
        why = f' --justification "<why {_named(keys)} changed, naming it>"' if keys else ""
        return ["# the measurement changed or the committed baseline does not match this run:",
                f"membench-gate bless{cfg}{why}",
                "# then commit the baseline file"]
    if verdict.verdict == "regression" and hard:
        return ["# fix the code: zero-gated invariants and floors cannot be blessed or waived"]
    if verdict.verdict == "regression" and keys:
        named = _named(keys)
        return [
            "# fix the regression, or accept it on purpose with a justification that names it:",
            f'membench-gate bless{cfg} --justification "<why {named} got worse>"',
            "# or, locally only, try it out without a baseline change:",
            f'membench-gate check{cfg} --allow-regression "<reason>"',
        ]
    if verdict.verdict == "inconclusive":
        return ["# nothing was compared: fix the reason above (or rerun without --results)"]
    return []


def verdict_summary(verdict: Verdict, results: Results) -> str:
    """The concise terminal report of ``check``."""
    base = verdict.base
    where = f"base {base.sha[:12]} ({base.ref}, found by {base.how})" if base.sha else "no base commit"
    lines = [f"membench-gate: {_TITLES[verdict.verdict]} (exit {verdict.exit_code})"
             + (f" — mode {verdict.mode}" if verdict.mode else ""),
             f"  {where}; head fixtures_hash {results.fixtures_hash[:12]}"]
    if verdict.blessed:
        lines.append("  breaches blessed by the committed justification")
    if verdict.allowed_regression:
        lines.append(f"  regression allowed locally: {verdict.allowed_regression}")
    if verdict.breaches:
        lines.append(f"  breaches ({len(verdict.breaches)}):")
        for breach in verdict.breaches[:_SHOWN]:
            lines.append(f"    {breach.key} [{breach.kind}] {breach.detail}")
        if len(verdict.breaches) > _SHOWN:
            lines.append(f"    … and {len(verdict.breaches) - _SHOWN} more (see --json)")
    for cell, ids in sorted(verdict.newly_failed.items()):
        shown = ", ".join(ids[:_SHOWN]) + (f", … (+{len(ids) - _SHOWN})" if len(ids) > _SHOWN
                                           else "")
        lines.append(f"  newly failed in {cell}: {shown}")
    for cell, ids in sorted(verdict.fixed.items()):
        lines.append(f"  fixed in {cell}: {len(ids)} item{'s' if len(ids) != 1 else ''}")
    check = verdict.justification_check
    if check.status in ("failed", "missing"):
        lines.append(f"  justification: {check.failed_check or 'missing'}")
    lines += [f"  note: {note}" for note in verdict.notes]
    steps = next_steps(verdict)
    if steps:
        lines.append("  next:")
        lines += [f"    {step}" for step in steps]
    return "\n".join(lines)
