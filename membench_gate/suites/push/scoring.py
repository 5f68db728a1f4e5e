"""How the push suite asks the adapter and scores what came back (the package says what it
measures)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from membench_gate.adapter.types import ContextTurn, Pushed, Query
from membench_gate.suites.common.fixtures import parse_time
from membench_gate.suites.common.pages import page_records
from membench_gate.suites.common.scoring import outcome, ratio
from membench_gate.suites.common.suite import CellResult, Progress, Records, SuiteRun
from membench_gate.suites.push.fixtures import (
    Conversation,
    Fixtures,
    Turn,
    items_of_turn,
    slug_item,
    turn_item,
)
from membench_gate.suites.push.options import PushOptions

if TYPE_CHECKING:  # only for annotations: checking a results file never imports the client
    from membench_gate.adapter.rpc import SuiteSession

KNOW_TO_ASK, PUSH = "push/know_to_ask", "push/push"
# The outcome of a stay-silent turn's record in push/push: no gold item (the cell's items are
# gold slugs), but its injection counts in push_precision and the token mean.
COUNTED = "counted"


def tokens(text: str) -> int:
    """The token estimate of an injected text: ⌈UTF-16 code units / 4⌉."""
    return math.ceil(len(text.encode("utf-16-le")) // 2 / 4)  # 2 bytes per code unit


def units(fx: Fixtures) -> list[list[str]]:
    """What one reset serves, for the workers (:mod:`membench_gate.run.workers`): a
    conversation's items together (its turns' and its gold slugs'), in fixture order."""
    return [list(dict.fromkeys(item for turn in conv.turns for item in items_of_turn(conv, turn)))
            for conv in fx.conversations]


def run(fx: Fixtures, session: SuiteSession, options: PushOptions,
        progress: Progress | None = None) -> SuiteRun:
    # A conversation none of whose turns is scored here (a shard, a worker) is never sent.
    sent = [(conv, [t for t in conv.turns if any(i in fx.digests for i in items_of_turn(conv, t))])
            for conv in fx.conversations]
    sent = [(conv, scored) for conv, scored in sent if scored]
    total = sum(1 for conv, _ in sent for t in conv.turns if t.role == "user")
    done = 0
    records: Records = {}
    for conv, scored in sent:
        ids = fx.ids[conv.id]
        pages = {ids[p.slug, p.source]: p for p in conv.pages}
        session.reset(conv.id)
        session.ingest(page_records(conv.pages, ids), conv.id)
        context: list[ContextTurn] = []
        for turn in conv.turns:
            if turn.role == "user":
                asked = _asked(fx, conv, turn)
                pushed = session.push_answer(Query(
                    text=turn.text, k=options.budget, source=conv.source,
                    context=tuple(t.text for t in context), context_turns=tuple(context),
                ), asked)
                done += 1
                if progress:
                    progress("push", done, total)
                if turn in scored:
                    _record(records, fx, conv, turn, pushed, pages)
            context.append(ContextTurn(turn.role, turn.text,
                                       parse_time(turn.at, "at") if turn.at else None))
    return score(records, options)


def _asked(fx: Fixtures, conv: Conversation, turn: Turn) -> str:
    """The item a turn's push is asked for (what an error names, and what a re-derivation
    answers from): the turn's own item, else its first gold slug's scored here."""
    return next((i for i in items_of_turn(conv, turn) if i in fx.digests), turn_item(conv, turn))


def _record(records: Records, fx: Fixtures, conv: Conversation, turn: Turn, pushed: Pushed,
            pages: dict[str, Any]) -> None:
    injected = list(dict.fromkeys(pushed.ids))  # an id injected twice is injected once
    wanted = {*turn.gold, *turn.acceptable}
    text = pushed.text if pushed.text is not None else \
        "\n".join(pages[i].text for i in injected if i in pages)
    detail = {
        "turn": turn_item(conv, turn),
        "asked": turn.text,
        "category": conv.category,
        "expect": turn.expect,
        # The gold pages' record ids (a twin's gold is the conversation's own copy), so what was
        # injected reads against it; ``slug`` names a push/push item's page as the fixture does.
        "gold": [fx.ids[conv.id][slug, conv.source] for slug in turn.gold],
        "acceptable": list(turn.acceptable),
        "injected": injected,
        "text": pushed.text,
        # Id-keyed: the copy of a twin slug from another source is foreign though its slug is gold.
        "foreign": sorted(i for i in injected if i in pages and pages[i].source != conv.source),
        # Slugs of the conversation's own pages injected that are gold or acceptable.
        "relevant": sorted({pages[i].slug for i in injected if i in pages
                            and pages[i].source == conv.source and pages[i].slug in wanted}),
        "tokens": tokens(text),
    }
    for item in items_of_turn(conv, turn):
        if item not in fx.digests:
            continue
        if item == turn_item(conv, turn):
            if "know_to_ask" in conv.suites:
                records.setdefault(KNOW_TO_ASK, {})[item] = detail
            if "push" in conv.suites and turn.expect == "silent":
                records.setdefault(PUSH, {})[item] = detail
        else:
            slug = item[len(turn_item(conv, turn)) + 1:]
            records.setdefault(PUSH, {})[slug_item(conv, turn, slug)] = {**detail, "slug": slug}


@dataclass
class Tally:
    """What a push cell's metrics are computed from, counted once per turn."""

    turns: set[str] = field(default_factory=set)
    retrieve: int = 0  # should-retrieve turns ...
    missed: int = 0  # ... that injected nothing of the conversation's gold or acceptable
    silent: int = 0  # stay-silent turns ...
    fired: int = 0  # ... that injected something anyway
    gold: int = 0  # gold slugs (push/push items) ...
    gold_hit: int = 0  # ... injected on their turn
    injected: int = 0  # ids injected ...
    relevant: int = 0  # ... that were gold or acceptable of the conversation's source
    violations: int = 0  # ids injected from another source
    tokens: int = 0  # estimated tokens of the injected text

    def turn(self, detail: dict[str, Any]) -> None:
        """Count a turn's injection, once however many items of the cell record it."""
        if detail["turn"] in self.turns:
            return
        self.turns.add(detail["turn"])
        injected = detail["injected"]
        if detail["expect"] == "retrieve":
            self.retrieve += 1
            self.missed += 0 if detail["relevant"] else 1
        else:
            self.silent += 1
            self.fired += 1 if injected else 0
        self.injected += len(injected)
        self.relevant += len(detail["relevant"])
        self.violations += len(detail["foreign"])
        self.tokens += detail["tokens"]

    def shared(self) -> dict[str, float]:
        return {"source_isolation_violations": self.violations,
                "avg_injected_tokens": ratio(self.tokens, len(self.turns))}


def _know_to_ask(turns: dict[str, dict[str, Any]]) -> tuple[dict[str, float], dict[str, Any]]:
    tally, outcomes = Tally(), {}
    for item, detail in turns.items():
        tally.turn(detail)
        passed = bool(detail["relevant"]) if detail["expect"] == "retrieve" \
            else not detail["injected"]
        outcomes[item] = {**detail, "outcome": outcome(passed and not detail["foreign"])}
    return {"know_to_ask_failure_rate": ratio(tally.missed, tally.retrieve),
            "false_fire_rate": ratio(tally.fired, tally.silent), **tally.shared()}, outcomes


def _push(items: dict[str, dict[str, Any]]) -> tuple[dict[str, float], dict[str, Any]]:
    tally, outcomes = Tally(), {}
    for item, detail in items.items():
        tally.turn(detail)
        if detail["expect"] != "retrieve":
            outcomes[item] = {**detail, "outcome": COUNTED}
            continue
        hit = detail["slug"] in detail["relevant"]
        tally.gold += 1
        tally.gold_hit += 1 if hit else 0
        outcomes[item] = {**detail, "outcome": outcome(hit and not detail["foreign"])}
    return {"push_recall": tally.gold_hit / tally.gold if tally.gold else 1.0,
            "push_precision": tally.relevant / tally.injected if tally.injected else 1.0,
            **tally.shared()}, outcomes


def score(records: Records, options: PushOptions) -> SuiteRun:
    """Know-to-ask, false fires, precision, recall, isolation and tokens from each turn's
    injection (docs/suites.md, "push")."""
    result = SuiteRun()
    for cell, items in sorted(records.items()):
        scorer = {KNOW_TO_ASK: _know_to_ask, PUSH: _push}.get(cell)
        if scorer is None:
            raise ValueError(f"{cell} is not a cell of the push suite")
        metrics, outcomes = scorer(items)
        failed = sorted(i for i, d in outcomes.items() if d["outcome"] == "fail")
        gold = sum(1 for d in outcomes.values() if d["outcome"] != COUNTED)
        result.cells[cell] = CellResult(metrics, gold, failed)
        result.items[cell] = dict(sorted(outcomes.items()))
    return result
