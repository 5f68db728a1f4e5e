"""Short plain-text summaries for the terminal (the Markdown report lives in report.py).

The terminal says what the scoreboard says, in the same order (see :mod:`membench_gate.report.findings`):
the verdict and its headline, the breaches most severe first, why the first newly failed items
failed, then commands that work as printed.
"""

from __future__ import annotations

from pathlib import Path

from membench_gate.errors import visible
from membench_gate.model import cells as cell_names
from membench_gate.model.canonical import round4
from membench_gate.model.metrics import gate_kind
from membench_gate.model.results import Results
from membench_gate.model.verdict import StochasticCell, Verdict
from membench_gate.report import findings


def metric_text(value: float | None) -> str:
    """A metric value as shown to people: rounded half-up to 4 decimals."""
    if value is None:
        return "—"
    return str(round4(value))


def _cell_line(name: str, results: Results) -> str:
    cell = results.cells[name]
    passed = cell.gold_total - len(cell.failed)
    if cell_names.parse(name).condition.startswith("control"):
        # A control's one gold item is "the control fails": say that, not "1/1 passed".
        state = "fails as designed" if not cell.failed else \
            "does NOT fail: the suite cannot tell a broken memory from a working one"
        return f"  {name}: control {state}"
    shown = [f"{m}={metric_text(v)}" for m, v in sorted(cell.metrics.items(),
                                                 key=lambda mv: findings.metric_order(name, mv[0]))
             if gate_kind(name, m) != "report"]
    return f"  {name}: {passed}/{cell.gold_total} gold items pass" + \
        (f"  {' '.join(shown)}" if shown else "")


def run_summary(results: Results, out: Path | None) -> str:
    merged = results.receipt.merged_shards
    # A merge measured nothing: it says how many shards it put together (their longest run).
    what = (f"merged from {merged} shards (the longest ran {results.receipt.duration or 0:.1f}s)"
            if merged else f"measured in {results.receipt.duration or 0:.1f}s")
    lines = [f"{len(results.cells)} cells {what} (fixtures hash {results.fixtures_hash[:12]})"]
    lines += [_cell_line(name, results) for name in sorted(results.cells)]
    if out is not None:
        lines.append(f"results written to {out}")
    return "\n".join(visible(line) for line in lines)


_TITLES = {"pass": "PASS", "regression": "REGRESSION", "bless-required": "BLESS REQUIRED",
           "inconclusive": "INCONCLUSIVE", "error": "ERROR"}
_SHOWN = 10
_EXPLAINED = 3
_MODE = {"same-hash": "same fixtures and options as the base: items compared one to one",
         "corpus-bless": "fixtures or suite options changed since the base: a bless is needed",
         "bootstrap": "no baseline at the base commit"}
_MODE_STOCHASTIC = "same fixtures and options as the base"
# A corpus-bless that passed is blessed already.
_BLESSED_CORPUS = "fixtures or suite options changed since the base: blessed in the committed " \
    "baseline"

def stochastic_words(tested: StochasticCell) -> str:
    """``127/145 → 112/145 passes, p 0.0452 (Holm): a significant drop``."""
    adjusted = "< 0.0001" if tested.adjusted_p < 0.0001 else f"{tested.adjusted_p:.4f}"
    words = "a significant drop" if tested.significant else "within the noise" \
        if tested.head_rate < tested.base_rate else "not lower"
    if not tested.gated:
        words += " (reported, not gated)"
    return (f"{tested.base_passes}/{tested.base_trials} → {tested.head_passes}/"
            f"{tested.head_trials} passes, p {adjusted} (Holm): {words}")


def verdict_summary(verdict: Verdict, results: Results, base: object = None,
                    results_path: str | None = None) -> str:
    """The concise terminal report of ``check``: the same order as the scoreboard — verdict,
    headline, next step first. ``results_path``: where the check saved its results."""
    from membench_gate.model.results import Baseline

    base_line = base if isinstance(base, Baseline) else None
    ranked = findings.ranked_breaches(verdict, results, base_line)
    info = verdict.base
    how = findings.base_words(info)
    where = f"base {info.sha[:12]}" + (f" ({info.ref}, {how})" if info.ref else "") \
        if info.sha else "no base commit"
    step = findings.next_step(verdict, results, base_line, ranked, results_path)
    mode = _BLESSED_CORPUS if verdict.mode == "corpus-bless" and verdict.verdict == "pass" \
        else _MODE.get(verdict.mode or "")
    if verdict.mode == "same-hash" and verdict.stochastic \
            and set(results.cells) <= {t.cell for t in verdict.stochastic}:
        mode = _MODE_STOCHASTIC  # every cell stochastic: no item is compared one to one
    compared = verdict.verdict not in ("inconclusive", "error")  # else nothing was compared
    lines = [f"membench-gate: {_TITLES[verdict.verdict]} (exit {verdict.exit_code})",
             f"  {findings.headline(verdict, ranked, results, base_line)}",
             f"  next step: {step.words}"]
    lines += [f"    {command}" for command in step.commands]
    lines.append(f"  {where}" + (f"; {mode}" if mode and compared else ""))
    if verdict.stochastic and compared:
        lines.append(f"  stochastic cells, compared by their pooled counts (one-sided exact test, "
                     f"Holm-corrected, alpha {verdict.stochastic[0].alpha:g}), not item by item:")
        lines += [f"    {t.cell}: {stochastic_words(t)}" for t in verdict.stochastic]
    if verdict.allowed_regression:
        lines.append(f"  regression allowed locally: {verdict.allowed_regression}")
    if ranked:
        lines.append(f"  breaches ({len(verdict.breaches)}), most severe first:")
        width = max(len(r.what) for r in ranked[:_SHOWN])
        for row in ranked[:_SHOWN]:
            if row.group == findings.ITEMS:
                lines.append(f"    {row.what}: {row.detail}")
            elif row.group == findings.FLOOR and row.head is not None:
                # (the floor is no base value: "0.5 → 0.41" would be a move that never happened)
                lines.append(f"    {row.what:<{width}}  {row.head_text} past its floor "
                             f"{row.base_text}  {row.delta}")
            elif row.kind == "option":
                lines.append(f"    {row.what}")  # (its words hold both values already)
            else:
                lines.append(f"    {row.what:<{width}}  {row.base_text} → {row.head_text}  "
                             f"{row.delta}")
                lines += [f"      {line}" for line in row.offenders[:_SHOWN]]
                if len(row.offenders) > _SHOWN:
                    lines.append(f"      … and {len(row.offenders) - _SHOWN} more items "
                                 "(--json has them all)")
        if len(ranked) > _SHOWN:
            lines.append(f"    … and {len(ranked) - _SHOWN} more rows (--json or --report has "
                         "them all)")
    flat = [(cell, i) for cell, ids in sorted(verdict.newly_failed.items()) for i in ids]
    if flat:
        lines.append(f"  why the first newly failing items fail ({len(flat)} in all):")
        for cell, item in flat[:_EXPLAINED]:
            story = findings.item_story(results, cell, item)
            why = story.why(findings.option_k(results, cell),
                            findings.option_k(base_line, cell)) if story else "no detail recorded"
            lines.append(f"    {cell}#{item}: {why}")
    gains = findings.improvement_rows(verdict, results, base_line)
    for gain in gains[:_SHOWN]:
        lines.append(f"  improved: {gain.what} {metric_text(gain.base)} → {metric_text(gain.head)} "
                     f"{gain.delta}")
    for cell, ids in sorted(verdict.fixed.items()):
        lines.append(f"  fixed on {cell}: {len(ids)} item{'s' if len(ids) != 1 else ''}")
    check = verdict.justification_check
    if findings.inherited_justification(verdict, base_line):
        if findings.asks_for_bless(verdict):  # the base's, not this change's: no failure of it
            lines.append("  justification: none from this change yet (the committed one blessed "
                         "the base); a bless writes one")
    elif check.status == "missing" and findings.asks_for_bless(verdict):
        lines.append("  justification: none yet; the bless of the next step writes one")
    elif check.status in ("failed", "missing"):
        lines.append(f"  justification: {check.failed_check or 'missing'}")
    said = {lines[1].strip()}
    lines += [f"  note: {note}" for note in verdict.notes
              if note not in said and note != "breaches blessed by the committed justification"]
    steps = findings.alternatives(verdict, results)
    if flat and not any(c.startswith("membench-gate show ") for c in step.commands):
        steps = ["# what was asked, the gold and what came back for one item:",
                 findings.show_command(verdict, *flat[0], info.sha, results), *steps]
    if steps:
        lines.append("  more:")
        lines += [f"    {line}" for line in steps]
    return "\n".join(visible(line) for line in lines)
