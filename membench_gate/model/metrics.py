"""The one metric registry: direction, gate kind and glossary of every metric.

Suites, the gate, the report and ``membench-gate explain`` all read this module; no other list of
metric names exists. Gate kinds:

- ``gated``: may not move adversely against the base baseline (rule 5/7);
- ``zero``: must be 0 in every run, never blessable (rule 1);
- ``report``: shown, never gated.

A metric may be gated only in some conditions (``gated_in``): NET(λ) is gated on
``abstention/default`` and only reported on the control cells, whose job is to fail.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from decimal import Decimal
from typing import Any, Literal, NamedTuple

from membench_gate.model import cells

Direction = Literal["higher", "lower"]
GateKind = Literal["gated", "zero", "report"]
Unit = Literal["rate", "count"]


class Violation(NamedTuple):
    """Where one violation of a zero-gated metric shows in the item records of its suite: the
    record ``field`` holds either the ids at fault (a non-empty list: what leaked) or ``False``
    (the item should have been true: a control that did not fail); ``words`` say it of an item."""

    field: str
    words: str


class Metric(NamedTuple):
    name: str
    suite: str
    direction: Direction
    kind: GateKind
    glossary: str
    gated_in: tuple[str, ...] = ()  # conditions where `kind` applies; empty = every condition
    label: str = ""  # what people call it in a report ("k" is replaced by the suite's k); default
    # derived from the name
    unit: Unit = "rate"  # a rate moves in points (0.05 = 5 pts); a count moves in units
    violation: Violation | None = None  # a zero-gated metric: which items offend, and how
    # The items of a cell a share is taken over, as (detail field, value, equal?) or ALL_ITEMS:
    # what lets a report say "1/2" beside a rate (see ``share_of``). None: not a share of items.
    per: tuple[str, Any, bool] | None = None


ALL_ITEMS = ("", None, False)  # every item of the cell
# Below this many items, a rate is shown with its count ("0.5 (1/2)"): one item moves it by more
# than 5 points, which reads as a trend when it is one item (docs/gate.md, "Reading the
# scoreboard").
SMALL_DENOMINATOR = 20


# The cells each suite produces: "suite/condition". Floors and the report read this list.
CONDITIONS: dict[str, tuple[str, ...]] = {
    "veto": ("files_known", "files_unknown", "lifecycle"),
    "abstention": ("default", "control_floor_off", "control_shuffled"),
    "push": ("know_to_ask", "push"),
    "writeback": ("fidelity", "continuity"),
    "recall": ("default",),
    "behaviour": ("none", "conventions", "flatfile", "memory"),
}
CELLS = tuple(f"{suite}/{cond}" for suite, conds in CONDITIONS.items() for cond in conds)
# Cells a suite derives from its other cells' records (controls): their one item stands for the
# whole suite, so its content changes with any gold item's — which is gated item by item.
DERIVED_CELLS = frozenset({"abstention/control_floor_off", "abstention/control_shuffled"})
# Suites whose conditions come from the fixtures (recall: one cell per query category).
OPEN_CONDITIONS = ("recall",)
_CONDITION = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")


def known_cell(cell: str) -> bool:
    """A cell this version can produce: a fixed one, or ``recall/<category>`` (within a seam or
    not: the seam is checked where seams are declared)."""
    _, suite, condition = cells.parse(cell)
    return f"{suite}/{condition}" in CELLS or (suite in OPEN_CONDITIONS and bool(_CONDITION.match(condition)))


_NET = re.compile(r"^net_at_(?P<lam>\d+(?:\.\d+)?)$")


def _invariant(name: str, suite: str, label: str, glossary: str,
               violation: Violation) -> Metric:
    """A zero-gated metric: a count of violations that must be 0 in every run (rule 1), so lower
    is better and it moves in units, whatever suite it belongs to."""
    return Metric(name, suite, "lower", "zero", glossary, label=label, unit="count",
                  violation=violation)


def _shown_count(name: str, suite: str, direction: Direction, glossary: str,
                 label: str = "") -> Metric:
    """A count shown beside the gated rates to explain them (how many answers were wrong, how
    many tokens a push costs), never gated itself: it moves in units, not points."""
    return Metric(name, suite, direction, "report", glossary, label=label, unit="count")


REGISTRY: dict[str, Metric] = {
    m.name: m
    for m in (
        Metric(
            "veto_recall_at_k", "veto", "higher", "gated",
            "Share of scenarios where the decision that rejected the tempting approach ranks in "
            "the top k for the task.",
            label="veto recall@k", per=ALL_ITEMS,
        ),
        Metric(
            "mrr", "veto", "higher", "report",
            "Mean reciprocal rank of the vetoing decision (0 when it is not in the returned hits).",
            label="MRR",
        ),
        Metric(
            "stale_surfaced", "veto", "lower", "gated",
            "Share of lifecycle scenarios whose hits rank a superseded predecessor above the "
            "current decision, or return it while the current decision is missing.",
            per=ALL_ITEMS,
        ),
        Metric(
            "net_at_<λ>", "abstention", "higher", "gated",
            "NET(λ) = (correct − λ·wrong) / n over all probes: a wrong answer costs λ correct "
            "ones; abstaining costs nothing.",
            gated_in=("default",),
        ),
        _invariant("controls_passing", "abstention", "controls not failing",
                   "Number of abstention controls (floor off, shuffled ids) that did not fail; a "
                   "control that passes means the suite cannot tell good from broken.",
                   Violation("control_failed", "did not fail, as a control must")),
        Metric("coverage", "abstention", "higher", "report",
               "Share of probes the system answered instead of abstaining.", per=ALL_ITEMS),
        _shown_count("correct", "abstention", "higher",
                     "Probes answered (not abstained) with the gold fact in the top k."),
        _shown_count("wrong", "abstention", "lower",
                     "Probes answered without the gold fact in the top k, or answered when "
                     "nothing stored answers them."),
        _shown_count("abstain", "abstention", "lower",
                     "Probes the system abstained on (right for unanswerable ones, a miss "
                     "otherwise)."),
        _shown_count("crossover_lambda", "abstention", "higher",
                     "The λ at which NET(λ) reaches 0 (correct / wrong); absent when nothing is "
                     "wrong.", label="crossover λ"),
        Metric(
            "know_to_ask_failure_rate", "push", "lower", "gated",
            "Share of turns that should inject a page where nothing gold or acceptable of the "
            "conversation's source was injected (0 when there are none).",
            label="know-to-ask failure rate", per=("expect", "retrieve", True),
        ),
        Metric("false_fire_rate", "push", "lower", "gated",
               "Share of stay-silent turns where something was injected anyway (0 when there "
               "are none).",
               per=("expect", "retrieve", False)),
        Metric("push_precision", "push", "higher", "gated",
               "Share of the ids injected on the cell's scored turns (stay-silent ones included) "
               "that were gold or acceptable pages of the conversation's source (1 when nothing "
               "was injected)."),
        Metric("push_recall", "push", "higher", "gated",
               "Share of gold slugs whose page was injected on the turn that called for them (1 "
               "when there is no gold).", per=("expect", "retrieve", True)),
        _invariant("source_isolation_violations", "push", "source-isolation violations",
                   "Number of injected ids that belong to another source than the "
                   "conversation's (a personal page in a work chat, or the other copy of a page "
                   "seeded in both).",
                   Violation("foreign", "injected from another source")),
        _shown_count("avg_injected_tokens", "push", "lower",
                     "Mean estimated tokens (⌈UTF-16 code units / 4⌉) of the text injected per "
                     "scored turn: the adapter's push text, else the injected pages' texts.",
                     label="injected tokens per turn"),
        Metric(
            "write_back_fidelity", "writeback", "higher", "gated",
            "Share of gold facts of a conversation that the memory's own write path kept: a hit "
            "holds every keyword and is about the right entity.",
            per=("kind", "fact", True),
        ),
        Metric(
            "provenance_accuracy", "writeback", "higher", "gated",
            "Share of kept facts whose hit says where it came from: the conversation's source, "
            "session and turn (1 when none was kept).",
        ),
        Metric(
            "non_fact_leak_rate", "writeback", "lower", "gated",
            "Share of hypotheticals, quoted claims and retracted statements that the write path "
            "stored anyway: a hit holds every keyword of the claim.",
            per=("kind", "fact", False),
        ),
        Metric(
            "continuity_rate", "writeback", "higher", "gated",
            "Share of a later session's questions answered by what was written (a hit holds "
            "every keyword of the answer), and of continuity decisions a reader recalls (an "
            "expected page injected, or a written memory holding every keyword).",
            per=ALL_ITEMS,
        ),
        Metric(
            "recall_any_at_k", "recall", "higher", "gated",
            "Share of answerable queries with at least one gold turn or session matched in the "
            "top k hits.",
            per=("answerable", True, True),
        ),
        Metric(
            "recall_all_at_k", "recall", "higher", "gated",
            "Share of answerable queries with every gold turn or session matched in the top k "
            "hits (multi-session questions need them all).",
            per=("answerable", True, True),
        ),
        Metric(
            "ndcg_at_k", "recall", "higher", "report",
            "Mean nDCG over the top k hits of answerable queries, each gold id credited once at "
            "the first hit that matches it.",
        ),
        Metric(
            "false_answer_rate", "recall", "lower", "gated",
            "Share of unanswerable queries the system answered instead of abstaining (absent "
            "when there are none).",
            per=("answerable", True, False),
        ),
        Metric(
            "veto_respected_rate", "behaviour", "higher", "gated",
            "Share of veto scenarios where the LLM, given the task and the condition's context, "
            "did not propose the rejected option again (gated with the memory's context; the "
            "other conditions are its yardsticks).",
            gated_in=("memory",), label="veto respected", per=ALL_ITEMS,
        ),
    )
}

_UNKNOWN = Metric("?", "?", "higher", "report", "Not a metric of this version: shown, not gated.",
                  unit="count")


def net_metric(lam: float) -> str:
    """Name of NET at λ: ``net_at_1``, ``net_at_2.5``."""
    return f"net_at_{format_number(lam)}"


def format_number(value: float) -> str:
    """Integral values without a decimal point, others in plain decimal form (never ``1e-05``)."""
    if float(value).is_integer():
        return str(int(value))
    return format(Decimal(repr(float(value))).normalize(), "f")


# Zero-gated metrics a suite reports besides its own: the writeback suite's continuity pairs push
# pages too, and count what they inject from another source as the push suite does.
SHARED_INVARIANTS: dict[str, tuple[str, ...]] = {"writeback": ("source_isolation_violations",)}


def violations(suite: str) -> list[tuple[Metric, Violation]]:
    """The zero-gated metrics of ``suite`` whose violations its item records show."""
    shared = SHARED_INVARIANTS.get(suite, ())
    return [(m, m.violation) for m in REGISTRY.values()
            if (m.suite == suite or m.name in shared) and m.violation is not None]


def spec(name: str) -> Metric:
    """The registry entry for a metric name (``net_at_5`` resolves to ``net_at_<λ>``)."""
    if name in REGISTRY:
        return REGISTRY[name]
    if _NET.match(name):
        return REGISTRY["net_at_<λ>"]
    return _UNKNOWN


def label(name: str, options: Mapping[str, Any] | None = None) -> str:
    """What a person calls ``name`` in a report: ``veto recall@5``, ``NET(2)``, ``false fire rate``.

    ``options`` is the suite's options table: its ``k`` replaces the ``k`` of ``@k`` labels.
    """
    match = _NET.match(name)
    if match:
        return f"NET({match.group('lam')})"
    metric = spec(name)
    text = metric.label if metric.label and metric is not _UNKNOWN else \
        re.sub(r"_at_k$", "@k", name).replace("_", " ")
    k = (options or {}).get("k")
    if text.endswith("@k") and isinstance(k, int) and not isinstance(k, bool):
        text = f"{text[:-1]}{k}"
    return text


def span(name: str) -> float:
    """The width of a metric's usual range, so moves of different metrics compare: 1 for a rate,
    1 + λ for NET(λ) (from −λ to 1), 1 for a count (compared only with other counts)."""
    match = _NET.match(name)
    return 1.0 + float(match.group("lam")) if match else 1.0


def at_worst(name: str, value: float) -> bool:
    """Whether a rate is already at the worst value it can take (0 for a higher-is-better rate,
    1 for a lower-is-better one, −λ for NET(λ)): no run can score it worse. Counts never are."""
    metric = spec(name)
    if metric.unit != "rate" or metric is _UNKNOWN:
        return False
    match = _NET.match(name)
    if match:
        return value <= -float(match.group("lam"))
    return value <= 0 if metric.direction == "higher" else value >= 1


def family(name: str) -> str:
    """Metrics said once in a headline: every NET(λ) is one family."""
    return "net_at_<λ>" if _NET.match(name) else name


def share_of(name: str, value: float, items: Mapping[str, Mapping[str, Any]]
             ) -> tuple[int, int] | None:
    """``(part, whole)`` of a rate over few items: ``(1, 2)`` for 0.5 over two items, or None
    when the metric is not a share of items or the cell has :data:`SMALL_DENOMINATOR` items or
    more of that kind. ``items`` are the cell's per-item records of a results file."""
    per = spec(name).per
    if per is None:
        return None
    key, wanted, equal = per
    whole = len(items) if per == ALL_ITEMS else \
        sum(1 for detail in items.values() if (detail.get(key) == wanted) == equal)
    if not 0 < whole < SMALL_DENOMINATOR:
        return None
    part = round(value * whole)
    # A share of a handful of items is k/whole exactly: a value that is not is another quantity.
    return (part, whole) if abs(part / whole - value) < 1e-4 else None


def gate_kind(cell: str, name: str) -> GateKind:
    """The gate kind of ``name`` in ``cell`` ("suite/condition", or within a seam)."""
    metric = spec(name)
    condition = cells.parse(cell).condition
    if metric.gated_in and condition not in metric.gated_in:
        return "report"
    return metric.kind


def is_adverse(name: str, base: float, head: float) -> bool:
    """True when going from ``base`` to ``head`` is a move in the bad direction."""
    if spec(name).direction == "higher":
        return head < base
    return head > base


def explain(name: str | None = None) -> str:
    """The glossary: one metric, or all of them."""
    if name is not None:
        metric = spec(name)
        if metric is _UNKNOWN:
            from rapidfuzz import fuzz, process, utils  # (only a mistake needs it)

            names = [n for n in REGISTRY if "<" not in n]  # (not a template such as NET's)
            match = process.extractOne(name, names, scorer=fuzz.ratio,
                                       processor=utils.default_process, score_cutoff=70)
            hint = f" (did you mean {match[0]!r}?)" if match else ""
            known = ", ".join(sorted(REGISTRY))
            raise KeyError(f"unknown metric {name!r}{hint}; known metrics: {known}")
        return _explain_line(metric, name)
    return "\n".join(_explain_line(m, m.name) for m in REGISTRY.values())


def _explain_line(metric: Metric, shown: str) -> str:
    arrow = "↑" if metric.direction == "higher" else "↓"
    kind = metric.kind
    if metric.gated_in:
        kind = f"{kind} on {', '.join(metric.gated_in)}, report elsewhere"
    return f"{shown} ({metric.suite}, {arrow} better, {kind}): {metric.glossary}"
