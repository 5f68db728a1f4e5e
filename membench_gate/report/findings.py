"""What a verdict means to a person: the headline, the breaches ranked by severity, the moves in
words, why an item failed, the commands that act on it.

Shared by the terminal summary (``summary.py``) and the Markdown scoreboard (``report.py``), so
both say the same thing in the same order. Everything here returns plain, unescaped data: escaping
is the renderer's job, done in one place there.
"""

from __future__ import annotations

import itertools
import math
import re
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from membench_gate.gate.justify import DRAFT_REASON
from membench_gate.gate.rules import HARD_KINDS, NO_BASE_BASELINE, unmeasured
from membench_gate.model import cells as cell_names
from membench_gate.model import metrics
from membench_gate.model.canonical import round4
from membench_gate.model.results import Baseline, Results
from membench_gate.model.verdict import BaseInfo, Breach, Breaches, ItemBreaches, Verdict

# Severity groups, most severe first (docs/gate.md, "Reading the scoreboard"): invariants, floors,
# gated metrics by the size of the adverse move, other changes to what is measured, then items.
INVARIANT, FLOOR, METRIC, MEASUREMENT, ITEMS = range(5)
_GROUP_OF_KIND = {"zero": INVARIANT, "floor": FLOOR, "metric": METRIC, "metric-missing": METRIC,
                  "cell-missing": METRIC, "stochastic-regression": METRIC}
_ITEM_WORDS = {"newly-failed": "newly failing", "item-removed": "removed from the fixtures",
               "item-changed": "changed (gated as removed and re-added)"}
_NET = re.compile(r"^net_at_(\d+(?:\.\d+)?)$")
_SAID_BY_NUMBERS = ("metric",)
# How the base commit was found (``base.how``, docs/gate.md "Base commit"), in words.
HOW_WORDS = {
    "explicit": "given with --base-ref",
    "merge-commit-parent": "first parent of GitHub's merge commit",
    "event-base-sha": "the base commit the event payload names",
    "remote-default-branch": "tip of the remote's default branch",
    "local-branch": "tip of the local default branch",
}


def base_words(info: BaseInfo) -> str | None:
    """How the base commit was found, in words, and why it is that commit when it is where this
    branch forked from a branch that moved on since."""
    how = HOW_WORDS.get(info.how or "", info.how)
    if not info.tip:
        return how
    return (f"where this branch forked from {info.ref or 'the base branch'}, whose tip "
            f"{info.tip[:12]} ({how}) moved on since: its newer changes are not this one's, so "
            "the merge-base is compared")


def split_key(key: str) -> tuple[str, str | None, str | None]:
    """``cell:metric`` / ``cell#item`` / ``cell`` → (cell, metric, item). A key whose first part
    is not a ``suite/condition`` cell (``gate:baseline-moved``, ``veto:option:k``) comes back
    whole, as the cell part."""
    for sep in ("#", ":"):
        cell, found, rest = key.partition(sep)
        if found and "/" in cell and rest:
            return (cell, None, rest) if sep == "#" else (cell, rest, None)
    return key, None, None


def suite_options(results: Results | Baseline | None, cell: str) -> Mapping[str, Any]:
    """The options table of the suite a cell belongs to (k, budget, …), or empty."""
    suites = (results.config.get("suites") if results is not None else None) or {}
    options = suites.get(cell_names.suite_of(cell)) if isinstance(suites, dict) else None
    return options if isinstance(options, dict) else {}


def metric_label(name: str, cell: str, results: Results | Baseline | None) -> str:
    return metrics.label(name, suite_options(results, cell))


def _num(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(round4(value)) if math.isfinite(value) else None


def _shown(value: Any) -> str:
    if value is None:
        return "—"
    number = _num(value)
    return metrics.format_number(number) if number is not None else str(value)


def delta(name: str, base: Any, head: Any) -> float | None:
    """head − base after rounding, or None when either side is not a number."""
    b, h = _num(base), _num(head)
    return None if b is None or h is None else float(round4(h - b))


def delta_text(name: str, base: Any, head: Any) -> str:
    """The move as people say it: ``−24 pts`` for a rate, ``+2`` for a count, ``0`` unchanged."""
    diff = delta(name, base, head)
    if diff is None:
        return "—"
    if diff == 0:
        return "0"
    sign = "+" if diff > 0 else "−"
    if metrics.spec(name).unit == "rate":
        points = round(abs(diff) * 100, 1)
        shown = str(int(points)) if points.is_integer() else f"{points:.1f}"
        return f"{sign}{shown} pts"
    return f"{sign}{metrics.format_number(float(round4(abs(diff))))}"


def judgement(name: str, base: Any, head: Any) -> str:
    """``better``, ``worse`` or ``""`` (unchanged or not comparable), read with the metric's
    direction, so a falling lower-is-better rate reads *better*."""
    diff = delta(name, base, head)
    if not diff:
        return ""
    higher = metrics.spec(name).direction == "higher"
    return "better" if (diff > 0) == higher else "worse"


class Ranked(NamedTuple):
    """One row of the breach table: a breach, or the item breaches of one cell and kind."""

    group: int
    what: str  # in words: "veto recall@5 on veto/files_known"
    key: str
    kind: str
    base: Any
    head: Any
    delta: str
    detail: str
    count: int = 1
    size: float = 0.0  # the adverse move relative to the metric's range, for ranking
    offenders: tuple[str, ...] = ()  # a zero-gated breach: each offending item, in words
    base_share: str = ""  # "1/2" beside a rate over few items (model.metrics.SMALL_DENOMINATOR)
    head_share: str = ""

    @property
    def base_text(self) -> str:
        """The base value as the breach table shows it, with its count over few items."""
        return _with_share(self.base, self.base_share) if self.group != ITEMS else "—"

    @property
    def head_text(self) -> str:
        return _with_share(self.head, self.head_share) if self.group != ITEMS else "—"

    @property
    def move(self) -> str:
        """The move in one cell of a table, without repeating the values the per-cell tables
        show: Δ for a metric, the value for an invariant, value against the floor for a floor."""
        if self.group == INVARIANT:
            return f"{_shown(self.head)} (must be 0)"
        if self.group == FLOOR:
            return f"{_shown(self.head)} vs floor {_shown(self.base)}" if self.head is not None \
                else f"not measured (floor {_shown(self.base)})"
        if self.kind in ("metric-missing", "cell-missing"):
            return "not measured"
        if self.delta != "—":
            return self.delta
        if self.base is None and self.head is None:
            return "—"
        return f"{_shown(self.base)} → {_shown(self.head)}"


def _with_share(value: Any, share: str) -> str:
    return f"{_shown(value)} ({share})" if share else _shown(value)


def share(name: str, cell: str, value: Any, results: Results | None) -> str:
    """``1/2`` for a rate taken over fewer than :data:`metrics.SMALL_DENOMINATOR` items of
    ``results`` (whose per-item records say how many), else ``""``."""
    number = _num(value)
    items = results.items.get(cell) if results is not None else None
    if number is None or not items:
        return ""
    found = metrics.share_of(name, number, items)
    return f"{found[0]}/{found[1]}" if found else ""


def _metric_row(breach: Breach, results: Results | None, base: Baseline | None,
                same_items: bool = False) -> Ranked:
    cell, name, _ = split_key(breach.key)
    source = results if results is not None else base
    group = _GROUP_OF_KIND.get(breach.kind, MEASUREMENT)
    if name is not None:
        what = f"{metric_label(name, cell, source)} on {cell}"
    elif breach.kind == "cell-missing":
        what = f"{cell} not measured"
    elif breach.kind == "stochastic-regression":
        what = f"stochastic pass rate on {cell}"
    else:
        what = measurement_words(breach)
    diff = delta(name or "", breach.base, breach.head) if name else None
    if breach.kind == "stochastic-regression" and isinstance(breach.base, float | int) \
            and isinstance(breach.head, float | int):
        size = abs(breach.head - breach.base)  # a rate: its range is 1
        return Ranked(group, what, breach.key, breach.kind, breach.base, breach.head,
                      points(breach.head - breach.base), breach.detail, size=size)
    if breach.kind in ("cell-missing", "metric-missing"):
        size = math.inf
    else:  # relative to the metric's range, so NET(10) does not outrank recall by its scale
        size = abs(diff) / metrics.span(name or "") if diff is not None else 0.0
    shown = delta_text(name, breach.base, breach.head) if name else "—"
    if group == FLOOR and breach.head is None:
        shown = "not measured"
    # The table shows base, head and Δ: a detail that only repeats them is left out.
    detail = "" if breach.kind in _SAID_BY_NUMBERS and name else breach.detail
    # The base's items are the head's when the fixtures are the same (same-hash).
    shares = (share(name, cell, breach.base, results) if same_items else "",
              share(name, cell, breach.head, results)) if name and group == METRIC else ("", "")
    return Ranked(group, what, breach.key, breach.kind, breach.base, breach.head, shown,
                  detail, size=size, offenders=offender_lines(breach),
                  base_share=shares[0], head_share=shares[1])


def offender_lines(breach: Breach) -> tuple[str, ...]:
    """Each item that violates a zero-gated breach, in words: ``push/know_to_ask#conv-01.t03
    injected from another source: work-roadmap``."""
    violation = metrics.spec(split_key(breach.key)[1] or "").violation
    if violation is None:
        return ()
    return tuple(f"{o.cell}#{o.id} {violation.words}" + (f": {', '.join(o.ids)}" if o.ids else "")
                 for o in breach.offenders)



def _folders(value: Any) -> list[str]:
    """The fixture folders of a suite option as the breach records them (a JSON list)."""
    import json

    try:
        parsed = json.loads(value) if isinstance(value, str) else value
    except ValueError:
        return [str(value)]
    return [str(v) for v in parsed] if isinstance(parsed, list) else [str(parsed)]


def measurement_words(breach: Breach) -> str:
    """A change to what is measured, in words: ``fixture folder extra added to abstention``
    for ``abstention:option:fixtures``, not the key."""
    suite, _, rest = breach.key.partition(":")
    if breach.kind == "option" and rest == "option:fixtures" and breach.base is not None \
            and breach.head is not None:
        before, now = _folders(breach.base), _folders(breach.head)
        added = [f for f in now if f not in before]
        removed = [f for f in before if f not in now]
        parts = [f"fixture folder{'s' if len(ids) > 1 else ''} {', '.join(ids)} {how} {suite}"
                 for ids, how in ((added, "added to"), (removed, "removed from")) if ids]
        return " and ".join(parts) or f"fixture folders of {suite} reordered"
    if breach.kind == "option" and rest.startswith("option:"):
        name = rest.partition(":")[2]
        return f"{suite} option {name} changed: {_shown(breach.base)} → {_shown(breach.head)}"
    if breach.kind == "corpus-removed":
        return f"corpus items of {suite} removed or changed"
    if breach.kind == "baseline-moved":
        return "baseline file moved"
    return breach.key


ID_SHOWN = 100  # characters of an item id a report shows; a longer one is cut, with "…"


def shown_id(item: str) -> str:
    """An item id as reports show it: whole up to :data:`ID_SHOWN` characters, else its head
    and its tail around a "…" (ids built of parts end in the part that tells them apart:
    ``<conversation>/<question>``); its results, ``show`` and the report's data files keep it
    whole. Fixture ids have no length limit, and a pull request's ids must not push the rest
    of its scoreboard out."""
    if len(item) <= ID_SHOWN:
        return item
    tail = ID_SHOWN * 2 // 5
    return f"{item[:ID_SHOWN - tail - 1]}…{item[-tail:]}"


def ranked_breaches(verdict: Verdict, results: Results | None,
                    base: Baseline | None) -> list[Ranked]:
    """Every breach once, most severe first; item breaches folded to one row per cell and kind
    (the items themselves are listed apart). Reads the runs of item breaches as runs: a million
    newly failing items cost a count and the three smallest ids, not a million rows."""
    rows: list[Ranked] = []
    items: dict[tuple[str, str], list[Sequence[str]]] = defaultdict(list)
    for entry in Breaches.of(verdict.breaches).entries:
        if isinstance(entry, ItemBreaches):
            items[(entry.cell, entry.kind)].append(entry.ids)
            continue
        cell, _, item = split_key(entry.key)
        if item is not None:
            items[(cell, entry.kind)].append((item,))
        else:
            rows.append(_metric_row(entry, results, base, verdict.mode == "same-hash"))
    for (cell, kind), runs in sorted(items.items()):
        import heapq  # (only runs of item breaches need it: a pass has none)

        words = _ITEM_WORDS.get(kind, kind)
        count = sum(map(len, runs))
        smallest = heapq.nsmallest(3, itertools.chain.from_iterable(
            heapq.nsmallest(3, ids) for ids in runs))
        rows.append(Ranked(ITEMS, f"{count} item{'s' if count != 1 else ''} {words} on "
                           f"{cell}", f"{cell}#…", kind, None, None, f"+{count}",
                           ", ".join(map(shown_id, smallest)) + (" …" if count > 3 else ""),
                           count=count, size=count))
    return sorted(rows, key=lambda r: (r.group, -r.size, r.key))


def points(change: float) -> str:
    """A change of a rate in percentage points: ``−20 pts``."""
    return f"{change * 100:+.0f} pts".replace("-", "−")


def _phrase(row: Ranked) -> str:
    name = split_key(row.key)[1]
    if row.kind == "stochastic-regression":
        return f"{row.key} pass rate {row.delta} (stochastic, significant)"
    if row.group == INVARIANT:
        return f"{row.what.split(' on ')[0]} {_shown(row.head)} (must be 0)"
    if row.group == FLOOR:
        return f"{row.what.split(' on ')[0]} {_shown(row.head)} past its floor {_shown(row.base)}" \
            if row.head is not None else f"floor on {row.what}: not measured by this run"
    if row.kind in ("metric", "metric-missing") and name is not None:
        counts = f" ({row.base_share} → {row.head_share})" if row.base_share and \
            row.head_share else f" (now {row.head_share})" if row.head_share else ""
        return f"{row.what.split(' on ')[0]} {row.delta}{counts}" if row.kind == "metric" \
            else f"{row.what.split(' on ')[0]} not measured"
    return row.what


def headline(verdict: Verdict, ranked: list[Ranked], results: Results | None,
             base: Baseline | None) -> str:
    """One line of the biggest moves in words: ``veto recall@5 −24 pts · NET(1) −3 pts ·
    25 items newly failing``."""
    if verdict.verdict in ("error", "inconclusive"):
        return verdict.notes[0] if verdict.notes else "the gate could not compare"
    parts: list[str] = []
    seen: set[str] = set()
    for row in ranked:
        if row.group == ITEMS:
            continue
        _, name, _ = split_key(row.key)
        said = f"{row.group}:{metrics.family(name)}" if name else row.key
        if said in seen:  # a metric family is said once, where it moved most
            continue
        seen.add(said)
        parts.append(_phrase(row))
        if len(parts) == 3:
            break
    per_kind: dict[str, list[Ranked]] = defaultdict(list)
    for row in ranked:
        if row.group == ITEMS:
            per_kind[row.kind].append(row)
    for kind, rows in per_kind.items():
        count = sum(r.count for r in rows)
        words = f"{count} item{'s' if count != 1 else ''} {_ITEM_WORDS.get(kind, kind)}"
        if count == 1:  # one item: say which
            words += f" ({rows[0].key.removesuffix('#…')}#{rows[0].detail})"
        parts.append(words)
    # The biggest gain is said after the breaches, so the trade reads whole: a clear improvement
    # that swapped one item must not read as a plain regression.
    gains = improvement_rows(verdict, results, base) if parts and not verdict.blessed else []
    if gains:
        parts.append(f"{gains[0].what} {gains[0].delta} ({gains[0].mark})")
    if not parts:
        gains = improvement_rows(verdict, results, base)
        fixed = sum(len(ids) for ids in verdict.fixed.values())
        if verdict.mode == "bootstrap":
            parts.append("baseline introduced" if verdict.verdict == "pass"
                         else "no baseline to compare with yet")
        elif verdict.verdict == "bless-required":
            parts.append(verdict.notes[0] if verdict.notes else "bless required")
        else:
            parts.append("no breaches")
        parts += [f"{g.what.split(' on ')[0]} {g.delta} ({g.mark})" for g in gains[:2]]
        if fixed:
            parts.append(f"{fixed} item{'s' if fixed != 1 else ''} fixed")
    if verdict.blessed:
        parts.append("blessed by the committed justification")
    return " · ".join(parts)


class Gain(NamedTuple):
    key: str
    what: str
    base: Any
    head: Any
    delta: str
    mark: str


def improvement_rows(verdict: Verdict, results: Results | None,
                     base: Baseline | None) -> list[Gain]:
    """Gated metrics that moved the good way, biggest first."""
    source = results if results is not None else base
    rows = []
    for gain in verdict.improvements:
        cell, name, _ = split_key(gain.key)
        name = name or ""
        rows.append((abs(delta(name, gain.base, gain.head) or 0), Gain(
            gain.key, f"{metric_label(name, cell, source)} on {cell}", gain.base, gain.head,
            delta_text(name, gain.base, gain.head), judgement(name, gain.base, gain.head))))
    return [g for _, g in sorted(rows, key=lambda r: (-r[0], r[1].key))]


# --- items -------------------------------------------------------------------------------------


@dataclass
class ItemStory:
    """Why one item failed (or passed): what was asked, the gold, what came back instead."""

    cell: str
    item: str
    asked: str | None = None
    gold: list[str] = field(default_factory=list)
    rank: int | None = None
    came_back: list[tuple[str, float | None]] | None = None  # None: not recorded
    abstained: bool | None = None
    outcome: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def why(self, k: int | None, base_k: int | None = None) -> str:
        """One line: gold rank, abstention and what came back instead of the gold. ``base_k``,
        for an item newly failing in a ranked suite, gives the gold rank before → after: the
        item passed at base, so its gold was in the top ``base_k`` there (a baseline keeps
        outcomes, not ranks)."""
        # A zero-gated violation first: it fails the check whatever the rank says.
        parts = [f"{v.words}: {', '.join(map(str, found))} — {m.label or m.name}, never "
                 "blessable" for m, v in metrics.violations(cell_names.suite_of(self.cell))
                 if isinstance(found := self.extra.get(v.field), list) and found]
        ranked = self.came_back or []
        rank = self.rank or next((n for n, (i, _) in enumerate(ranked, 1) if i in self.gold), None)
        if self.gold:
            where = f"rank {rank}" if rank else (f"not in the top {k}" if k else "not returned")
            if base_k and not (rank and rank <= base_k):  # (still in: the cause is elsewhere)
                where = f"in the top {base_k} at base → {where} now"
            parts.append(f"gold {', '.join(self.gold)}: {where}")
        elif "expect" in self.extra:
            parts.append(f"expected: {self.extra['expect']}")
        elif "answerable" in self.extra:
            parts.append("nothing stored answers it" + ("" if self.abstained else
                                                         ", yet the memory answered"))
        elif isinstance(self.extra.get("control_failed"), bool):
            parts.append("the control fails, as designed" if self.extra["control_failed"]
                         else "the control does NOT fail: the suite cannot tell broken from working")
        if self.abstained:
            parts.append("the memory abstained" if rank else "abstained")
        # What outranked the gold: everything above it, or the top when it is missing.
        above = ranked[:rank - 1] if rank else ranked
        instead = [(i, s) for i, s in above if i not in self.gold][:3]
        if instead:
            shown = ", ".join(f"{i} ({metrics.format_number(float(round4(s)))})" if s is not None
                              else i for i, s in instead)
            words = "came back" if not self.gold else "ranked above it" if rank \
                else "came back instead"
            parts.append(f"{words}: {shown}")
        elif self.came_back == [] and not self.abstained:
            parts.append("nothing came back")
        return "; ".join(parts) if parts else "no detail recorded for this item"


def option_k(results: Results | Baseline | None, cell: str) -> int | None:
    """The ``k`` of the suite a cell belongs to, when it has one (push has a budget instead)."""
    k = suite_options(results, cell).get("k")
    return k if isinstance(k, int) and not isinstance(k, bool) else None


def item_story(results: Results | None, cell: str, item: str) -> ItemStory | None:
    """The recorded detail of ``cell#item`` in a results file, or None when absent."""
    if results is None:
        return None
    detail = results.items.get(cell, {}).get(item)
    if detail is None:
        return None
    hits = detail.get("hits")
    came_back: list[tuple[str, float | None]] | None = None
    if isinstance(hits, list):
        came_back = [(str(h.get("id")), h.get("score")) for h in hits if isinstance(h, dict)]
    elif isinstance(detail.get("injected"), list):
        came_back = [(str(i), None) for i in detail["injected"]]
    elif detail.get("top") is not None:
        came_back = [(str(detail["top"]), None)]
    gold = detail.get("gold")
    known = {"asked", "gold", "hits", "rank", "abstained", "outcome", "injected", "top", "score"}
    return ItemStory(
        cell=cell, item=item,
        asked=detail.get("asked") if isinstance(detail.get("asked"), str) else None,
        gold=[str(g) for g in gold] if isinstance(gold, list) else [],
        rank=detail.get("rank") if isinstance(detail.get("rank"), int) else None,
        came_back=came_back,
        abstained=detail.get("abstained") if isinstance(detail.get("abstained"), bool) else None,
        outcome=detail.get("outcome") if isinstance(detail.get("outcome"), str) else None,
        extra={k: v for k, v in sorted(detail.items()) if k not in known},
    )


# --- commands ----------------------------------------------------------------------------------


def _quote(text: str) -> str:
    """``text`` quoted for a shell (imported when a command is shown: a pass shows none)."""
    import shlex

    return shlex.quote(text)


def config_flag(verdict: Verdict) -> str:
    """`` --config PATH`` when the check did not use the default config."""
    config = verdict.config or "membench.toml"
    if config in ("membench.toml", "./membench.toml"):
        return ""
    return f" --config {_quote(config)}"


def show_command(verdict: Verdict, cell: str, item: str, base_sha: str | None = None,
                 results: Results | None = None) -> str:
    """The command that explains one item, quoted so it works as printed (with
    ``--include-holdout`` when ``results`` scored the holdout: the item may be held out)."""
    base = f" --base-ref {base_sha}" if base_sha else ""
    return (f"membench-gate show {_quote(f'{cell}#{item}')}{config_flag(verdict)}"
            f"{holdout_flag(results)}{base}")


# DRAFT_REASON, left in a justification, is refused (bless, and rule 8): the command is printed
# ready to run once the reason is written, and never blesses as printed.
def justification_draft(verdict: Verdict, results: Results | None,
                        base: Baseline | None, ranked: list[Ranked] | None = None) -> str:
    """A justification to complete: every breached metric or cell named (the check requires
    it), the reason left to the person blessing. ``ranked``: the verdict's
    :func:`ranked_breaches`, when the caller has them already."""
    named: list[str] = []
    cells_named: set[str] = set()
    if ranked is None:
        ranked = ranked_breaches(verdict, results, base)
    for row in ranked:
        cell, name, _ = split_key(row.key)
        if name is None and cell in cells_named:
            continue  # items of a cell already named are named with it
        cells_named.add(cell)
        token = f"{cell}:{name}" if name else cell
        if token not in named:
            named.append(token)
    return f"{DRAFT_REASON}. Accepted changes: " + ", ".join(named)


def inherited_justification(verdict: Verdict, base: Baseline | None) -> bool:
    """Whether the justification the check read is the base's own, carried unchanged in the
    committed baseline: it blessed the base, not this pull request, so its check is no failure
    of this pull request's author."""
    check = verdict.justification_check
    given = base.justification if base is not None else None
    return given is not None and check.status in ("failed", "passed") \
        and check.text == given.text and sorted(check.breaches) == sorted(given.breaches)


def asks_for_bless(verdict: Verdict) -> bool:
    """Whether resolving this verdict may take a bless with a justification: a regression with
    blessable breaches and none that no justification can bless."""
    kinds = _kinds(verdict)
    return verdict.verdict == "regression" and bool(kinds - set(HARD_KINDS)) \
        and not kinds & set(HARD_KINDS)


def _kinds(verdict: Verdict) -> set[str]:
    """The kinds of breach in a verdict (one look per run of item breaches)."""
    return {entry.kind for entry in Breaches.of(verdict.breaches).entries}


def bless_command(verdict: Verdict, results: Results | None, base: Baseline | None,
                  ranked: list[Ranked] | None = None, results_path: str | None = None,
                  justify: bool = False) -> str:
    """``membench-gate bless`` as it must be run for this verdict, quoted to work as printed.

    ``results_path`` is where this check's numbers are saved when they are (``check --out``,
    or the ``--results`` file it checked): ``--results`` then blesses them instead of running
    every suite again. Without one there is no file to name — a check that saved nothing, or a
    PR comment read far from the runner's files — and the command is the bless that runs the
    suites itself, on a checkout of the branch. A base given with ``--base-ref`` is passed on,
    so the bless compares with the base this check did. ``justify`` asks for a justification
    even when no breach needs one."""
    keys = justify or any(kind not in HARD_KINDS for kind in _kinds(verdict))
    draft = justification_draft(verdict, results, base, ranked) if keys else ""
    text = f" --justification {_quote(draft)}" if keys else ""
    saved = f" --results {_quote(results_path)}" if results_path else ""
    base_ref = f" --base-ref {verdict.base.sha}" if verdict.base.how == "explicit" \
        and verdict.base.sha else ""
    return f"membench-gate bless{config_flag(verdict)}{holdout_flag(results)}{base_ref}{saved}" \
        f"{text}"


def holdout_flag(results: Results | None) -> str:
    """`` --include-holdout`` when the run scored the holdout items: a command that runs or
    blesses the same measurement must say so too (the config may not)."""
    return " --include-holdout" if results is not None and \
        results.config.get("include_holdout") is True else ""


class NextStep(NamedTuple):
    """The one decision that resolves a verdict, in words, and the commands that carry it out
    (none: nothing to run)."""

    words: str
    commands: tuple[str, ...] = ()


# A key a command may name: printed commands are pasted into shells, so odd ids (quotes,
# backticks, line breaks) and ids too long to read are left to the lists, where they are shown
# escaped and cut.
_PLAIN_KEY = re.compile(rf"[A-Za-z0-9._/-]+#[A-Za-z0-9._:-]{{1,{ID_SHOWN}}}")  # (matched whole)


def plain_key(cell: str, item: str) -> bool:
    """Whether a printed command may name ``cell#item`` as it is."""
    return bool(_PLAIN_KEY.fullmatch(f"{cell}#{item}"))  # (not "$": a newline may end it)


def _worst_item(verdict: Verdict) -> tuple[str, str] | None:
    """The first newly failing item with a plain id, smallest id of the first cell first."""
    for cell, ids in sorted(verdict.newly_failed.items()):
        plain = [i for i in ids if plain_key(cell, i)]
        if plain:
            return cell, min(plain)
    return None


def next_step(verdict: Verdict, results: Results | None = None, base: Baseline | None = None,
              ranked: list[Ranked] | None = None, results_path: str | None = None) -> NextStep:
    """What resolves this verdict: the fix-or-bless command, the ``show`` of the worst item, or
    nothing to do. ``results_path``: where this check's results were saved, when it did."""
    if ranked is None:
        ranked = ranked_breaches(verdict, results, base)
    kinds = _kinds(verdict)
    hard = any(kind in HARD_KINDS for kind in kinds)
    keys = any(kind not in HARD_KINDS for kind in kinds)
    worst = _worst_item(verdict)
    show = (show_command(verdict, *worst, verdict.base.sha, results),) if worst else ()
    bless = bless_command(verdict, results, base, ranked, results_path)
    if verdict.verdict == "error":
        return NextStep("fix the error above, then run the check again")
    if verdict.verdict == "inconclusive":
        return NextStep("no verdict can rest on this comparison: fix the reason above, then run "
                        "the check again")
    if verdict.verdict == "bless-required" and any(
            note.startswith(NO_BASE_BASELINE) for note in verdict.notes):
        return NextStep("the base branch has the gate but no baseline: bless there first "
                        "(`membench-gate bless` on it, commit the baseline file), then rebase")
    if verdict.verdict == "bless-required":
        return NextStep("bless this run's numbers and commit the baseline file (the measurement "
                        "changed, or the committed baseline does not match this run)", (bless,))
    if verdict.verdict == "regression" and hard:
        first = next((r for r in ranked if r.group in (INVARIANT, FLOOR)), ranked[0])
        if first.group == FLOOR and first.head is None:
            return NextStep(_unmeasured_floor(first, results), show)
        return NextStep(f"fix the code: {first.what} cannot be blessed or waived", show)
    if verdict.verdict == "regression" and keys:
        if ranked and all(r.group == ITEMS for r in ranked) and worst:
            count = sum(r.count for r in ranked)
            what = f"{worst[0]}#{worst[1]} newly fails" if count == 1 else \
                f"{count} items newly fail, first {worst[0]}#{worst[1]}"
            return NextStep(f"{what}: see why, then fix it, or bless with a justification if "
                            "it is intended", (*show, bless))
        return NextStep("fix the regression, or accept it on purpose: bless with a "
                        "justification that names every breach (write the reason)", (bless,))
    if verdict.verdict == "pass" and verdict.allowed_regression:
        return NextStep("the regression was allowed for this local run only: to keep it, bless "
                        "with a justification (write the reason)",
                        (bless_command(verdict, results, base, ranked, results_path,
                                       justify=True),))
    if verdict.verdict == "pass" and (verdict.improvements or verdict.fixed) \
            and not verdict.banked:
        return NextStep("optional: bank the improvements, so a later pull request cannot give "
                        "them back unseen", (bless,))
    return NextStep("nothing to do")


def _unmeasured_floor(row: Ranked, results: Results | None) -> str:
    """The next step of a floor this run does not measure: no code to fix, a measurement to
    restore, or a floor to drop where it is set (docs/gate.md, "Floors")."""
    cell, name, _ = split_key(row.key)
    why = f" ({unmeasured(results, cell, name)})" if results is not None and name else ""
    return (f"the floor on {row.what} names a metric this run does not measure{why}: measure it "
            "again (a floor cannot be blessed or waived), or drop the floor — from [floors] here "
            "when only this config sets it; a floor of the base branch's config holds until a "
            "pull request that still measures it removes it there")


def alternatives(verdict: Verdict, results: Results | None = None) -> list[str]:
    """The local alternative to a bless, as lines of a shell script, where there is one (the
    check of the same measurement as ``results``)."""
    if not asks_for_bless(verdict):
        return []
    return ["# or, locally only, try it out without a baseline change:",
            f"membench-gate check{config_flag(verdict)}{holdout_flag(results)} "
            "--allow-regression 'trying this out'"]


def net_points(results: Results, base: Baseline | None,
               cell: str = "abstention/default") -> list[tuple[str, Any, Any]]:
    """(λ label, base, head) of every NET(λ) of a cell, in numeric order of λ."""
    now = results.cells.get(cell)
    if now is None:
        return []
    before = base.cells.get(cell) if base else None
    lams = sorted((float(m.group(1)), m.group(1), name) for name in now.metrics
                  if (m := _NET.match(name)) and math.isfinite(float(m.group(1))))
    return [(metrics.format_number(lam), before.metrics.get(name) if before else None,
             now.metrics[name]) for lam, _, name in lams]


def metric_order(cell: str, name: str) -> tuple[int, str, float]:
    """Invariants first, then gated, then report metrics; NET(λ) in numeric order of λ."""
    match = _NET.match(name)
    lam = float(match.group(1)) if match else 0.0
    kind_rank = {"zero": 0, "gated": 1, "report": 2}[metrics.gate_kind(cell, name)]
    return kind_rank, "net_at_" if match else name, lam
