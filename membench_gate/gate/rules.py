"""``decide()``: the gate rules of docs/gate.md, as a pure function.

Inputs in, :class:`Verdict` out: no git, no GitHub, no files, no clock. Everything the edges found
(floors of both configs, reasons a comparison is impossible) arrives as arguments, so every rule is
unit-tested without a repository.

Precedence when several rules fire: INCONCLUSIVE, then ERROR (``--allow-regression`` in CI), then a
REGRESSION from a zero-gated invariant or a floor (never waivable), then BLESS REQUIRED, then a
REGRESSION from the comparison (blessable by a justification, waivable locally), then PASS.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from membench_gate.defaults import DEFAULT_ALPHA
from membench_gate.errors import ExitCode
from membench_gate.model import cells as cell_names
from membench_gate.model import metrics
from membench_gate.model.canonical import round4
from membench_gate.model.results import Baseline, Cell, Results
from membench_gate.model.verdict import (
    Breach,
    Breaches,
    FixtureDiff,
    Improvement,
    ItemBreaches,
    JustificationResult,
    Mode,
    Offender,
    StochasticCell,
    Verdict,
    VerdictName,
    not_needed,
)

# Rule 10's refusal in CI, which a bless in the pull request cannot fix (findings reads it).
NO_BASE_BASELINE = "the base commit has a gate config but no baseline"
UNBANKED = ("the justification blesses these breaches, but the committed baseline keeps the base's "
            "numbers: merged as it is, every later pull request meets the same breaches, and a "
            "copy of this justification cannot bless them (near-copies of the base's are refused); "
            "membench-gate bless commits this run's numbers with the justification")
EXIT_CODES = {"pass": ExitCode.PASS, "regression": ExitCode.REGRESSION,
              "bless-required": ExitCode.BLESS_REQUIRED, "inconclusive": ExitCode.INCONCLUSIVE,
              "error": ExitCode.ERROR}
HARD_KINDS = ("zero", "floor")
EMPTY_CELLS: Mapping[str, Cell] = {}


class Floor(NamedTuple):
    """A ``[floors]`` entry and the config it came from (``base`` or ``head``)."""

    key: str
    value: float
    origin: str


@dataclass
class _Comparison:
    breaches: list[Breach | ItemBreaches] = field(default_factory=list)
    newly_failed: dict[str, list[str]] = field(default_factory=dict)
    fixed: dict[str, list[str]] = field(default_factory=dict)
    improvements: list[Improvement] = field(default_factory=list)
    diff: FixtureDiff = field(default_factory=FixtureDiff.model_construct)
    notes: list[str] = field(default_factory=list)
    stochastic: list[StochasticCell] = field(default_factory=list)


def _rounded(value: float | None) -> float | None:
    """A metric as the gate compares it: rounded to 4 decimals, as stored in a baseline."""
    return None if value is None else float(round4(value))


def floors_of(base: Mapping[str, float], head: Mapping[str, float]) -> list[Floor]:
    """Both configs' floors apply: a pull request can add floors, never remove them."""
    return [Floor(k, v, "base") for k, v in sorted(base.items())] + \
           [Floor(k, v, "head") for k, v in sorted(head.items())]


def _invariants(actual: Baseline, base: Baseline | None,
                base_invariants: Mapping[str, Cell] = EMPTY_CELLS) -> list[Breach]:
    """Rule 1: zero-gated metrics must be 0 in every cell of this run, and in every invariant
    cell of the base's suites this run changed or dropped (``base_invariants``: measured on the
    base's suite tables and fixtures)."""
    found: dict[str, Breach] = {}
    runs = [(name, cell, "") for name, cell in sorted(actual.cells.items())] + [
        (name, cell, " — measured with the base's suite table and fixtures, which this run "
                     "changed or dropped") for name, cell in sorted(base_invariants.items())]
    for cell_name, cell, where in runs:
        for name, value in sorted(cell.metrics.items()):
            key = f"{cell_name}:{name}"
            if metrics.gate_kind(cell_name, name) == "zero" and _rounded(value) > 0 \
                    and key not in found:
                before = base.cells.get(cell_name) if base else None
                offenders = _offenders(actual, cell_name, name) if not where else []
                found[key] = Breach(
                    key=key, kind="zero",
                    base=_rounded(before.metrics.get(name)) if before else None, head=_rounded(value),
                    detail=f"{name} must be 0 in every run; it is {round4(value)} "
                           f"(never waivable or blessable){where}" + (
                               f"; {len(offenders)} item{'s' if len(offenders) != 1 else ''} "
                               "offend" + ("s" if len(offenders) == 1 else "")
                               if offenders else ""),
                    offenders=offenders,
                )
    return list(found.values())


def _offenders(actual: Baseline, cell: str, name: str) -> list[Offender]:
    """The items of ``cell``'s suite whose records show a violation of the zero-gated metric
    ``name`` (the registry says which record field, :class:`metrics.Violation`), read from the
    run's own records: every offender, whether or not it failed at base."""
    spec = metrics.spec(name)
    if spec.violation is None or not isinstance(actual, Results):
        return []
    scope, field_name = cell_names.scope_of(cell), spec.violation.field
    # The cell's own items when they record the field (each push cell counts its own leaks),
    # else every cell of its suite (a control's failure shows in the control cell's item).
    own = any(isinstance(r, dict) and field_name in r for r in actual.items.get(cell, {}).values())
    found = []
    for cell_name in sorted(actual.items):
        if (cell_name != cell) if own else (cell_names.scope_of(cell_name) != scope):
            continue
        for item, record in sorted(actual.items[cell_name].items()):
            value = _violating(record, field_name)
            if value is False or (isinstance(value, list) and value):
                found.append(Offender(cell=cell_name, id=item,
                                      ids=[str(v) for v in value] if value else []))
    return found


def _violating(record: Any, field_name: str) -> Any:
    """The record's ``field_name``; for a suite with repeats, the first pass's that violates
    (an invariant broken in any pass is broken)."""
    if not isinstance(record, dict):
        return None
    runs = record.get("runs")
    if "passes" in record and isinstance(runs, list):
        return next((value for run in runs if isinstance(run, dict)
                     and ((value := run.get(field_name)) is False
                          or (isinstance(value, list) and value))), None)
    return record.get(field_name)


def _floors(actual: Baseline, floors: Iterable[Floor]) -> list[Breach]:
    """Rule 2: floors from the base commit's and the working tree's config."""
    found: dict[str, Breach] = {}
    for floor in floors:
        cell_name, _, name = floor.key.partition(":")
        cell = actual.cells.get(cell_name)
        value = cell.metrics.get(name) if cell else None
        lower_better = metrics.spec(name).direction == "lower"
        sign = "<=" if lower_better else ">="
        if value is None:
            detail = f"floor {sign} {round4(floor.value)} ({floor.origin} config), but this run " \
                     f"does not measure {name} on {cell_name}: {unmeasured(actual, cell_name, name)}"
        elif (_rounded(value) > _rounded(floor.value)) if lower_better \
                else (_rounded(value) < _rounded(floor.value)):
            detail = f"{round4(value)} violates the floor {sign} {round4(floor.value)} " \
                     f"({floor.origin} config)"
        else:
            continue
        found.setdefault(floor.key, Breach(key=floor.key, kind="floor", base=_rounded(floor.value),
                                           head=_rounded(value), detail=detail))
    return list(found.values())


def unmeasured(actual: Baseline, cell: str, name: str) -> str:
    """Why a run has no value of metric ``name`` in ``cell``, in words: its suite (or seam) is
    not in the run, the cell is not (its fixtures hold no item of it), or the cell does not
    report the metric (a NET(λ) off the λ list, a rate over no items of its kind)."""
    seam, suite, _ = cell_names.parse(cell)
    if suite not in (actual.config.get("suites") or {}):
        return f"suite {suite} is not enabled"
    if seam and seam not in (actual.config.get("adapters") or {}):
        return f"there is no seam {seam}"
    if cell not in actual.cells:
        return f"there is no cell {cell} (no item of its fixtures scores in it)"
    return f"{cell} does not report {name}"


def _compare_cells(base: Baseline, actual: Baseline, same_hash: bool,
                   alpha: float = DEFAULT_ALPHA) -> _Comparison:
    """Rules 5 and 7: every base cell against this run; a stochastic cell (a suite with repeats,
    on either side) by the statistical test of its pooled counts instead of item by item and
    metric by metric (:func:`_stochastic`)."""
    out = _Comparison()
    stochastic: list[tuple[str, tuple[int, int], tuple[int, int]]] = []
    reported: list[tuple[str, tuple[int, int], tuple[int, int]]] = []
    for cell_name, before in sorted(base.cells.items()):
        now = actual.cells.get(cell_name)
        if now is None:
            out.breaches.append(Breach(key=cell_name, kind="cell-missing",
                                       base=before.gold_total, head=None,
                                       detail="cell is in the base baseline but not in this run"))
            continue
        comparable = _comparable_items(base, actual, cell_name, same_hash, out)
        if same_hash and before.gold_total != now.gold_total:
            out.breaches.append(Breach(
                key=f"{cell_name}:gold_total", kind="gold-total", base=before.gold_total,
                head=now.gold_total, detail="gold_total changed under the same fixtures_hash"))
        if before.repeats is not None or now.repeats is not None:
            if any(metrics.gate_kind(cell_name, n) == "gated" for n in before.metrics):
                stochastic.append((cell_name, before.counts(), now.counts()))
            else:  # a yardstick (every metric reported): its move is shown, never a breach
                reported.append((cell_name, before.counts(), now.counts()))
            continue
        was_failed, is_failed = set(before.failed), set(now.failed)
        newly, fixed = is_failed - was_failed, was_failed - is_failed
        if comparable is not None:
            newly, fixed = newly & comparable, fixed & comparable
        newly, fixed = sorted(newly), sorted(fixed)
        if newly:
            out.newly_failed[cell_name] = newly
            out.breaches.append(ItemBreaches(cell_name, "newly-failed", tuple(newly), "pass",
                                             "fail", "passed in the base baseline, fails now"))
        if fixed:
            out.fixed[cell_name] = fixed
        for name, value in sorted(before.metrics.items()):
            if metrics.gate_kind(cell_name, name) != "gated":
                continue
            head = now.metrics.get(name)
            if head is None:
                out.breaches.append(Breach(key=f"{cell_name}:{name}", kind="metric-missing",
                                           base=_rounded(value), head=None,
                                           detail="gated metric missing from this run"))
            elif metrics.is_adverse(name, _rounded(value), _rounded(head)):
                out.breaches.append(Breach(
                    key=f"{cell_name}:{name}", kind="metric", base=_rounded(value), head=_rounded(head),
                    detail=f"{name} moved adversely: {round4(value)} → {round4(head)}"))
            elif _rounded(value) != _rounded(head):
                out.improvements.append(Improvement(key=f"{cell_name}:{name}", base=_rounded(value),
                                                    head=_rounded(head)))
    _stochastic(stochastic, reported, alpha, out)
    for cell_name in sorted(set(actual.cells) - set(base.cells)):
        out.notes.append(f"new cell: {cell_name} (reported, not gated)")
    if not same_hash:
        _easing(base, actual, out)
    return out


def _stochastic(cells: list[tuple[str, tuple[int, int], tuple[int, int]]],
                reported: list[tuple[str, tuple[int, int], tuple[int, int]]], alpha: float,
                out: _Comparison) -> None:
    """Rule 5 for stochastic cells: a one-sided exact test of the pooled counts, head against
    base, Holm-corrected across the run's stochastic cells with a gated metric; a significant
    adverse move is a ``stochastic-regression`` (blessable like a gated metric), any other move
    is reported. Cells whose metrics are all reported (the behaviour suite's yardstick
    conditions) are tested as a family of their own and only reported: they neither breach nor
    dilute the correction of the gated ones."""
    if not cells and not reported:
        return
    from membench_gate.gate.stochastic import compare  # (scipy: only a stochastic run needs it)

    out.stochastic = sorted([*compare(cells, alpha), *compare(reported, alpha, gated=False)],
                            key=lambda tested: tested.cell)
    for tested in out.stochastic:
        if tested.significant and tested.gated:
            out.breaches.append(Breach(
                key=tested.cell, kind="stochastic-regression", base=_rounded(tested.base_rate),
                head=_rounded(tested.head_rate), detail=stochastic_words(tested)))


def stochastic_words(tested: StochasticCell) -> str:
    """A stochastic comparison in one line: both counts with their intervals, the p-value."""
    def side(passes: int, trials: int, interval: tuple[float, float]) -> str:
        return f"{passes}/{trials} (Wilson {1 - tested.alpha:.0%} " \
               f"[{round4(interval[0])}, {round4(interval[1])}])"

    verdict = "significant" if tested.significant else "not significant"
    return (f"pass rate {side(tested.base_passes, tested.base_trials, tested.base_interval)} → "
            f"{side(tested.head_passes, tested.head_trials, tested.head_interval)}; one-sided "
            f"exact p {_p_is(tested.p_value)}, Holm-adjusted {_p(tested.adjusted_p)}: {verdict} "
            f"at alpha {tested.alpha:g}")


def _p(value: float) -> str:
    return "< 0.0001" if value < 0.0001 else f"{round4(value)}"


def _p_is(value: float) -> str:
    """``= 0.0123``, or ``< 0.0001`` (never ``= < 0.0001``)."""
    return _p(value) if value < 0.0001 else f"= {_p(value)}"


def _comparable_items(base: Baseline, actual: Baseline, cell: str, same_hash: bool,
                      out: _Comparison) -> set[str] | None:
    """Under a changed corpus, the items whose content digest is unchanged (compared by id).

    A gold item is its content: one whose digest changed is the removal of the old item and the
    addition of a new one, a breach whatever either scored (``item-changed``), so a newly
    failing item cannot be reworded until it passes, and a regression cannot hide behind a
    harder rewording. Removed items are breaches; added ones are reported. None: compare every
    id."""
    if same_hash:
        return None
    before, now = base.digests.get(cell, {}), actual.digests.get(cell, {})
    removed, added, changed = _diff(before, now)
    for bucket, ids in (("removed", removed), ("added", added), ("changed", changed)):
        if ids:
            getattr(out.diff, bucket)[cell] = ids
    if removed:
        out.breaches.append(ItemBreaches(cell, "item-removed", tuple(removed), "present", None,
                                         "gold item removed from the fixtures"))
    if changed and cell_names.local(cell) not in metrics.DERIVED_CELLS:
        was_failed, is_failed = set(base.cells[cell].failed), set(actual.cells[cell].failed)
        for before_outcome, now_outcome in (("fail", "pass"), ("pass", "fail"), ("fail", "fail"),
                                            ("pass", "pass")):
            ids = tuple(i for i in changed if _outcome(i in was_failed) == before_outcome
                        and _outcome(i in is_failed) == now_outcome)
            if ids:
                out.breaches.append(ItemBreaches(
                    cell, "item-changed", ids, before_outcome, now_outcome,
                    "gold item content changed: gated as the old item removed and a new one "
                    "added, whatever either scored"))
    # Easy items added lift the cell's metrics: said plainly.
    if added and len(added) * 5 >= max(1, len(before)):
        out.notes.append(f"{cell}: {len(added)} gold items added to {len(before)} "
                         "(the cell's metrics now measure a different mix) — reported, not a "
                         "breach")
    return {i for i in set(before) & set(now) if before[i] == now[i]}


def _outcome(failed: bool) -> str:
    return "fail" if failed else "pass"


def _diff(before: Mapping[str, str], now: Mapping[str, str]
          ) -> tuple[list[str], list[str], list[str]]:
    """(removed, added, changed) ids between two ``id -> content digest`` maps."""
    return (sorted(set(before) - set(now)), sorted(set(now) - set(before)),
            sorted(i for i in set(before) & set(now) if before[i] != now[i]))


def _label(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True)


def _preregistered(base: Baseline, alpha: float) -> float:
    """The significance level the base was blessed under (its recorded ``[live] alpha``), else
    ``alpha``: a pull request's own ``[live]`` table never chooses the level it is judged at (a
    changed level is also an easing breach, ``live:option:alpha``)."""
    recorded = (base.config.get("live") or {}).get("alpha")
    if isinstance(recorded, (int, float)) and not isinstance(recorded, bool) and 0 < recorded < 1:
        return float(recorded)
    return alpha


def _changed_options(scope: str, what: str, before: dict[str, Any], now: dict[str, Any],
                     out: _Comparison) -> None:
    """A breach ``<scope>:option:<name>`` for each option of the measurement that changed."""
    for name in sorted(set(before) | set(now)):
        if before.get(name) != now.get(name):
            was, becomes = _label(before.get(name)), _label(now.get(name))
            out.breaches.append(Breach(
                key=f"{scope}:option:{name}", kind="option", base=was, head=becomes,
                detail=f"{what} {name} changed: {was} → {becomes} (the measurement changed)"))


def _easing(base: Baseline, actual: Baseline, out: _Comparison) -> None:
    """Rule 7's suite-wide easing: a changed option of a suite both runs measure, and corpus
    items (distractors included) removed from such a suite — each a breach, even when every
    metric improves."""
    before_suites = base.config.get("suites") or {}
    now_suites = actual.config.get("suites") or {}
    for suite in sorted(set(before_suites) & set(now_suites)):
        before = dict(before_suites[suite] or {})
        now = dict(now_suites[suite] or {})
        before["include_holdout"] = base.config.get("include_holdout", False)
        now["include_holdout"] = actual.config.get("include_holdout", False)
        _changed_options(suite, "suite option", before, now, out)
    # The LLM of the live suites and the statistical gate's level are the measurement too: a new
    # model, temperature or alpha is a changed measurement to justify, like a suite option.
    before_live, now_live = base.config.get("live"), actual.config.get("live")
    if isinstance(before_live, dict) and isinstance(now_live, dict):
        _changed_options("live", "[live]", before_live, now_live, out)
    for suite in sorted(set(base.corpus) & set(actual.corpus)):
        removed, added, changed = _diff(base.corpus[suite], actual.corpus[suite])
        key = f"{suite}:corpus"
        for bucket, ids in (("removed", removed), ("added", added), ("changed", changed)):
            if ids:
                getattr(out.diff, bucket)[key] = ids
        # A corpus item is its content too: a changed one is the old one removed (and a new one
        # added), so rewording the distractor that outranks a newly failing item is gated.
        gone = sorted({*removed, *changed})
        if gone:
            shown = ", ".join(gone[:3]) + (f" (and {len(gone) - 3} more)" if len(gone) > 3 else "")
            what = " and ".join(part for part in (
                f"{len(removed)} removed" if removed else "",
                f"{len(changed)} changed (the old content removed)" if changed else "") if part)
            out.breaches.append(Breach(
                key=f"{suite}:corpus-removed", kind="corpus-removed",
                base=len(base.corpus[suite]), head=len(actual.corpus[suite]),
                detail=f"corpus items {what}: fewer or other distractors can make retrieval "
                       f"easier: {shown}"))


INCONCLUSIVE_HARD = "the breaches listed are this run's invariants and floors"


def decide(
    base: Baseline | None,
    committed: Baseline | None,
    actual: Baseline,
    *,
    floors: Iterable[Floor] = (),
    allow_regression: str | None = None,
    ci: bool = False,
    inconclusive: Iterable[str] = (),
    committed_canonical: bool = True,
    base_breaches: Iterable[Breach] = (),
    base_config: bool = False,
    base_invariants: Mapping[str, Cell] = EMPTY_CELLS,
    alpha: float = DEFAULT_ALPHA,
) -> Verdict:
    """Apply the gate rules and return the verdict.

    ``base`` is the baseline at the base commit (None: none there), ``committed`` the one in the
    working tree (None: absent), ``actual`` this run. ``inconclusive`` carries reasons the edges
    found why the runs cannot be compared (unknown schema, foreign config, non-determinism);
    ``committed_canonical`` is False when the committed file's bytes are not the canonical form of
    what it holds (reformatted or edited by hand): the comparison is of canonical content, so this
    is only noted, with the advice to re-bless. ``base_breaches`` are what the edges found on
    the base side (the baseline path moved): blessable breaches like the comparison's.
    ``base_config`` says the base commit has a gate config: then, in CI, a missing base
    baseline is BLESS REQUIRED, not a bootstrap (rule 10: only a PR bringing the gate itself
    may introduce its first baseline). ``base_invariants`` are the base's cells with zero-gated
    metrics whose suite this run changed or dropped, measured with the base's suite table and
    fixtures (rule 1: an invariant cannot be unmeasured). ``alpha`` is the preregistered
    significance level of the statistical gate of stochastic cells.
    """
    reasons = list(inconclusive)
    hard = _invariants(actual, base, base_invariants) + _floors(actual, floors)
    if reasons:
        mode: Mode | None = None
        if base is None:
            mode = "bootstrap"
        elif base.fixtures_hash == actual.fixtures_hash:
            mode = "same-hash"
        else:
            mode = "corpus-bless"
        # No comparison rests on these runs, but an invariant or a floor is this run's alone:
        # one broken is said (and listed) however the comparison would have gone. A floor on
        # a metric the run does not measure is not: that may be the config it was made under.
        hard = [b for b in hard if not (b.kind == "floor" and b.head is None)]
        said = [f"{INCONCLUSIVE_HARD}: broken whatever the comparison would say"] if hard else []
        return _finish("inconclusive", mode, breaches=hard, notes=reasons + said)

    if allow_regression is not None and ci:
        return _finish("error", None, breaches=hard, notes=[
            "--allow-regression is local only and is refused when CI or GITHUB_ACTIONS is set"])

    if base is None and ci and base_config:
        return _finish("regression" if hard else "bless-required", "bootstrap", breaches=hard,
                       notes=[f"{NO_BASE_BASELINE}: in CI only a pull request that introduces "
                              "the gate may bring the first baseline; bless and commit the "
                              "baseline on the base branch"])
    verdict = _compare(base, committed, actual, hard, allow_regression, list(base_breaches),
                       alpha)
    for name, cell in sorted(base_invariants.items()):
        held = [f"{m} {round4(v)}" for m, v in sorted(cell.metrics.items())
                if metrics.gate_kind(name, m) == "zero" and not _rounded(v) > 0]
        if held:
            verdict.notes.append(f"{name}: its invariants were measured with the base's suite "
                                 f"table and fixtures, which this run "
                                 f"{'changed' if name in actual.cells else 'dropped'}, and "
                                 f"hold ({', '.join(held)})")
    if committed is not None and not committed_canonical:
        # Compared as canonical content, so a reformatted file is only worth a note.
        verdict.notes.append("the committed baseline is not in canonical form (reformatted or "
                             "edited by hand?); membench-gate bless rewrites it")
    return verdict


def _compare(base: Baseline | None, committed: Baseline | None, actual: Baseline,
             hard: list[Breach], allow_regression: str | None,
             base_breaches: list[Breach], alpha: float = DEFAULT_ALPHA) -> Verdict:
    """Rules 5–11 once invariants and floors are known (rules 1–2 still decide precedence)."""
    notes: list[str] = []
    if base is None:
        mode = "bootstrap"
        if committed is not None and committed.same_content(actual):
            notes.append("baseline introduced: no baseline at the base commit")
            return _finish("regression" if hard else "pass", mode, breaches=hard, notes=notes)
        notes.append("no baseline at the base commit and the committed baseline does not match "
                     f"this run{differing(committed, actual)}: run membench-gate bless and "
                     "commit the baseline"
                     if committed is not None else
                     "no baseline at the base commit and none in the working tree: run "
                     "membench-gate bless and commit the baseline")
        return _finish("regression" if hard else "bless-required", mode, breaches=hard,
                       notes=notes)

    same_hash = base.fixtures_hash == actual.fixtures_hash
    mode = "same-hash" if same_hash else "corpus-bless"
    comparison = _compare_cells(base, actual, same_hash, _preregistered(base, alpha))
    notes += comparison.notes
    bless_required = None
    matches_run = committed is not None and committed.same_content(actual)
    if committed is None:
        bless_required = "the baseline exists at the base commit but was deleted in the working tree"
    elif same_hash:
        if not matches_run and not committed.same_content(base):
            bless_required = "committed baseline does not match this run" \
                + differing(committed, actual)
    elif not matches_run:
        bless_required = ("the fixtures or suite options changed (fixtures_hash differs from the "
                          "base) and the committed baseline does not match this run"
                          + differing(committed, actual))

    soft = Breaches([*base_breaches, *comparison.breaches])
    keys = sorted(soft.iter_keys())
    justification = not_needed()
    blessed = False
    if soft and committed is not None:
        justification, blessed = _judge_justification(committed, base, keys)
    elif soft:
        justification = JustificationResult(status="missing", breaches=keys)
    elif committed is not None and committed.justification is not None \
            and committed.justification != base.justification:
        # Nothing to bless: a justification is never an error by itself (rule 8).
        notes.append("the committed justification has nothing to bless in this comparison "
                     "(no breaches); it is ignored")

    common = {
        "breaches": hard + soft,
        "newly_failed": comparison.newly_failed,
        "fixed": comparison.fixed,
        "improvements": comparison.improvements,
        "banked": matches_run,
        "fixture_diff": comparison.diff,
        "justification_check": justification,
        "blessed": blessed and not hard and not bless_required,
        "stochastic": comparison.stochastic,
    }
    if hard:
        return _finish("regression", mode, notes=notes, **common)
    if bless_required:
        return _finish("bless-required", mode, notes=[bless_required, *notes], **common)
    if soft and not blessed:
        if allow_regression is not None:
            notes.append(f"regression allowed locally: {allow_regression}")
            return _finish("pass", mode, notes=notes, allowed_regression=allow_regression,
                           **common)
        return _finish("regression", mode, notes=notes, **common)
    if blessed:
        notes.append("breaches blessed by the committed justification")
        if not matches_run:
            notes.append(UNBANKED)
    return _finish("pass", mode, notes=notes, **common)


def differing(committed: Baseline, actual: Baseline, shown: int = 5) -> str:
    """``": at X, Y and N more (committed → run)"``: where a committed baseline differs from
    the run, the first few cells or metrics by key, so the user sees what to bless or revert."""
    found = committed.differences(actual)
    if not found:
        return ""
    more = f" and {len(found) - shown} more" if len(found) > shown else ""
    return f" (committed → run): {'; '.join(found[:shown])}{more}"


def _judge_justification(committed: Baseline, base: Baseline,
                         keys: list[str]) -> tuple[JustificationResult, bool]:
    given = committed.justification
    if given is None:
        return JustificationResult(status="missing", breaches=keys,
                                   failed_check="no justification in the committed baseline"), False
    if sorted(set(given.breaches)) != keys:
        extra = sorted(set(given.breaches) - set(keys))
        lacking = sorted(set(keys) - set(given.breaches))
        parts = []
        if lacking:
            more = f" and {len(lacking) - 1} more" if len(lacking) > 1 else ""
            parts.append(f"lacks {lacking[0]!r}{more}")
        if extra:
            more = f" and {len(extra) - 1} more" if len(extra) > 1 else ""
            parts.append(f"lists {extra[0]!r}{more}, not a breach now")
        failed = "justification.breaches does not match this comparison: " + "; ".join(parts)
        return JustificationResult(status="failed", text=given.text, breaches=given.breaches,
                                   failed_check=failed), False
    from membench_gate.gate.justify import check_justification  # (only a justification needs it)

    base_text = base.justification.text if base.justification else None
    result = check_justification(given.text, keys, base_text)
    return JustificationResult(status="passed" if result.ok else "failed", text=given.text,
                               breaches=given.breaches, failed_check=result.failed), result.ok


def _finish(verdict: VerdictName, mode: Mode | None, **fields: Any) -> Verdict:
    return Verdict(verdict=verdict, exit_code=EXIT_CODES[verdict], mode=mode, **fields)


def breach_keys(verdict: Verdict, kinds: Iterable[str] | None = None) -> list[str]:
    """Sorted keys of the blessable breaches (or of the given kinds)."""
    wanted = set(kinds) if kinds is not None else None
    entries = Breaches.of(verdict.breaches).entries
    return sorted(key for entry in entries
                  if (entry.kind in wanted if wanted is not None else entry.kind not in HARD_KINDS)
                  for key in (entry.iter_keys() if isinstance(entry, ItemBreaches) else (entry.key,)))
