"""``membench-gate show CELL#ID``: one item, as an engineer debugging it needs it.

What was asked, the gold, what came back (ranked hits with scores, or the injected ids, and whether
the system abstained), and the item's outcome at the base commit and now. The detail comes from a
results file (``--results``) or from running the item's suite; the base outcome from the baseline
at the base commit (baselines keep failed ids, not hits, so the base side is pass or fail).
"""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from rapidfuzz import process

from membench_gate.config import Config, load_config
from membench_gate.errors import ExitCode, GateError, visible
from membench_gate.files import read_file
from membench_gate.model import cells as cell_names
from membench_gate.model.canonical import round4
from membench_gate.model.results import Results, parse_results
from membench_gate.report import findings


@dataclass(frozen=True)
class BaseOutcome:
    """The item at the base commit: ``pass``/``fail``/``absent``, or why it is unknown."""

    outcome: str | None
    where: str


def parse_target(target: str) -> tuple[str, str]:
    """``suite/condition#id`` or ``seam/suite/condition#id`` → (cell, id); the id may itself
    contain ``#``."""
    cell, sep, item = target.partition("#")
    if not sep or cell.count("/") not in (1, 2) or not item:
        raise GateError(f"show: {target!r} is not of the form SUITE/CONDITION#ID or "
                        "SEAM/SUITE/CONDITION#ID (e.g. veto/files_known#scn-003)")
    return cell, item


def _suggest(wanted: str, choices: list[str]) -> str:
    match = process.extractOne(wanted, choices, score_cutoff=60) if choices else None
    return f" (did you mean {match[0]!r}?)" if match else ""


def _results(config: Config, results_path: Path | None, cell: str) -> Results:
    if results_path is not None:
        return parse_results(read_file(results_path), str(results_path))
    from membench_gate.run.runner import progress_reporter, run

    seam, suite, _ = cell_names.parse(cell)
    if suite not in config.suites:
        raise GateError(f"show: suite {suite!r} is not enabled in {config.path.name}"
                        f"{_suggest(suite, list(config.suites))}")
    if seam or config.seams:
        if seam not in config.seams:
            raise GateError(f"show: {cell!r}: no seam {seam!r} in {config.path.name} (seams: "
                            f"{', '.join(config.seams) or 'none: cells are SUITE/CONDITION'})"
                            f"{_suggest(seam, list(config.seams))}")
        config = config.with_seams([seam])  # only the asked seam's adapter runs
    return run(config.with_suites([suite]), progress_reporter())


def base_outcome(config: Config, base_ref: str | None, cell: str, item: str) -> BaseOutcome:
    """The item's outcome in the baseline at the base commit (read with git)."""
    from membench_gate.base.side import read_base_in_repository
    from membench_gate.ci.settings import Context

    # show reads, it does not gate: the base is found as in this run's event, without CI's
    # fail-closed refusals (those guard a verdict).
    side = read_base_in_repository(config, base_ref, replace(Context.from_env(), ci=False))
    if side is None:
        return BaseOutcome(None, "not a git repository")
    if side.info.sha is None:
        return BaseOutcome(None, "no base commit")
    where = f"base {side.info.sha[:12]}" + (f" ({side.info.ref})" if side.info.ref else "")
    if side.baseline is None:
        return BaseOutcome(None, f"{where} has no baseline")
    before = side.baseline.cells.get(cell)
    if before is None:
        return BaseOutcome("absent", f"{where}: the cell is not in its baseline")
    digests = side.baseline.digests.get(cell)
    if digests is not None and item not in digests:
        held = config.include_holdout and side.baseline.config.get("include_holdout") is not True
        return BaseOutcome("absent", f"{where}: the item is not in its measurement"
                           + (" (blessed without the holdout items)" if held else ""))
    if before.repeats is not None and before.passes is not None:  # a stochastic cell
        return BaseOutcome(f"{before.passes.get(item, 0)}/{before.repeats} passes", where)
    return BaseOutcome("fail" if item in before.failed else "pass", where)


def _hits_lines(detail: dict[str, Any], gold: set[str]) -> list[str]:
    hits = detail.get("hits")
    if isinstance(hits, list):
        if not hits:
            return ["  (no hits)"]
        lines = []
        for rank, hit in enumerate(hits, 1):
            if not isinstance(hit, dict):
                continue
            score = hit.get("score")
            shown = findings.metrics.format_number(float(round4(score))) \
                if isinstance(score, (int, float)) and not isinstance(score, bool) else "—"
            mark = "  ← gold" if hit.get("id") in gold else ""
            lines.append(f"  {rank:>2}. {hit.get('id')}  {shown}{mark}")
        return lines
    injected = detail.get("injected")
    if isinstance(injected, list):
        return [f"  - {i}" + ("  ← gold" if i in gold else "") for i in injected] or \
            ["  (nothing injected)"]
    return ["  (not recorded in these results)"]


def render_item(results: Results, cell: str, item: str, base: BaseOutcome | None) -> str:
    """The plain-text page of one item, a line per field: every line :func:`visible`, since
    all of it may come from an artifact (ids, the question, the hits, suite fields)."""
    cells = results.items.get(cell)
    if cells is None:
        raise GateError(f"show: no cell {cell!r} in these results"
                        f"{_suggest(cell, sorted(results.items))}")
    detail = cells.get(item)
    if detail is None:
        raise GateError(f"show: no item {item!r} in {cell}{_suggest(item, sorted(cells))}")
    runs, passes = detail.get("runs"), detail.get("passes")
    stochastic = isinstance(runs, list) and bool(runs) and isinstance(passes, int)
    if stochastic:  # a suite with repeats: the pass shown is its first failing one, else pass 1
        shown_pass = next((n for n, r in enumerate(runs)
                           if isinstance(r, dict) and r.get("outcome") == "fail"), 0)
        detail = runs[shown_pass] if isinstance(runs[shown_pass], dict) else {}
        results = results.model_copy(update={"items": {
            **results.items, cell: {**cells, item: detail}}})
    story = findings.item_story(results, cell, item)
    assert story is not None
    options = findings.suite_options(results, cell)
    k = options.get("k")
    budget = options.get("budget")
    lines = [f"{cell}#{item}" + (f"  (k = {k})" if k is not None else "")
             + (f"  (budget = {budget})" if budget is not None else "")]
    if stochastic:
        lines.append(f"passes:     {passes}/{len(runs)} (stochastic: the cell is gated on its pooled "
                     "counts, not item by item)")
        lines.append(f"pass shown: {shown_pass + 1} of {len(runs)}"
                     + (" (its first failing one)" if detail.get("outcome") == "fail" else ""))
    if story.asked:
        lines.append(f"asked:      {story.asked}")
    if detail.get("files"):
        lines.append(f"files:      {', '.join(map(str, detail['files']))}")
    gold = set(story.gold) | {str(a) for a in detail.get("acceptable") or []}
    if story.gold:
        lines.append(f"gold:       {', '.join(story.gold)}")
    elif "gold" in detail:
        lines.append("gold:       none (nothing stored answers it: abstaining is right)")
    if detail.get("acceptable"):
        lines.append(f"acceptable: {', '.join(map(str, detail['acceptable']))}")
    if "hits" in detail or "injected" in detail:
        lines.append("came back:")
        lines += _hits_lines(detail, gold)
    if story.abstained is not None:
        lines.append(f"abstained:  {'yes' if story.abstained else 'no'}")
    # (``shuffled``: the answer of the shuffled-ids control, kept for re-deriving that cell; it
    # is the control's, not this item's.)
    shown = {"asked", "files", "gold", "acceptable", "hits", "injected", "abstained", "outcome",
             "score", "top", "rank", "shuffled"}
    for key, value in sorted(detail.items()):
        if key not in shown and value is not None:
            text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
            lines.append(f"{key + ':':<11} {text}")
    head = (story.outcome or "?").upper()
    why = story.why(findings.option_k(results, cell))
    lines.append(f"head:       {head} — {why}")
    if base is not None:
        state = (base.outcome if "/" in base.outcome else base.outcome.upper()) \
            if base.outcome else "unknown"
        lines.append(f"base:       {state} ({base.where})")
    return "\n".join(visible(line) for line in lines)


def _held_out(config: Config | None, results: Results, cell: str, item: str) -> bool:
    """Whether ``item`` is missing from ``results`` because it is a holdout item those results
    did not score (its suite's fixtures, read with the holdout, have it; without, they do not)."""
    if results.config.get("include_holdout") is True or cell not in results.items \
            or item in results.items[cell]:
        return False
    _, suite, _ = cell_names.parse(cell)
    if config is None or suite not in config.suites:
        return False
    from membench_gate.suites.common.fixtures import load_suite

    options = config.suites[suite]
    try:
        every = load_suite(suite, options.fixtures, config.base_dir, True)
    except GateError:
        return False
    return item in every.digests or item in every.corpus


def _render(config: Config | None, results: Results, cell: str, item: str,
            base: BaseOutcome | None, results_path: Path | None) -> str:
    try:
        return render_item(results, cell, item, base)
    except GateError as exc:
        if not _held_out(config, results, cell, item):
            raise
        how = "run it with --include-holdout" if results_path is None else \
            "these results were measured without it: show it from a run with --include-holdout"
        raise GateError(f"show: {item!r} is a holdout item of {cell.rpartition('/')[0] or cell}"
                        f" ({how})") from exc


def show(target: str, *, config_path: Path, results_path: Path | None = None,
         base_ref: str | None = None, include_holdout: bool = False,
         jobs: int | None = None) -> int:
    """The ``show`` command: item ``target`` (``CELL#ID``) of ``results_path``, or of a run of its
    suite under ``config_path`` (with the holdout items too when ``include_holdout``, in ``jobs``
    adapter processes), next to its outcome at the base commit."""
    cell, item = parse_target(target)
    if results_path is not None and not config_path.exists() and base_ref is None:
        # A results file on its own (an artifact from CI): no config, so no base to read.
        results = parse_results(read_file(results_path), str(results_path))
        print(render_item(results, cell, item, None))
        return ExitCode.PASS
    config = load_config(config_path).with_holdout(include_holdout).with_workers(jobs)
    base = base_outcome(config, base_ref, cell, item)  # read before the adapter starts
    results = _results(config, results_path, cell)
    print(_render(config, results, cell, item, base, results_path))
    return ExitCode.PASS


def cmd_show(args: argparse.Namespace) -> int:
    from membench_gate.adapter import seal

    seal.establish(required=args.seal)  # before any adapter starts (docs/gate.md, "Sealed")
    return show(args.target, config_path=args.config, results_path=args.results,
                base_ref=args.base_ref, include_holdout=args.include_holdout, jobs=args.jobs)
