"""How the push suite asks the adapter and scores what came back (the package says what it
measures)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from membench_gate.adapter.types import Query, Record
from membench_gate.suites.common.scoring import outcome, ratio
from membench_gate.suites.common.suite import Progress, Records, SuiteRun
from membench_gate.suites.push.fixtures import Fixtures
from membench_gate.suites.push.options import PushOptions

if TYPE_CHECKING:  # only for annotations: checking a results file never imports the client
    from membench_gate.adapter.rpc import SuiteSession


def run(fx: Fixtures, session: SuiteSession, options: PushOptions,
        progress: Progress | None = None) -> SuiteRun:
    budget = options.budget
    total = sum(len(c.turns) for c in fx.conversations)
    done = 0
    records: dict[str, dict[str, Any]] = {}
    for conv in fx.conversations:
        pages = {p.slug: p for p in conv.pages}
        session.reset(conv.id)
        session.ingest([
            Record(id=p.slug, text=p.text, source=p.source, entity=p.slug,
                   aliases=tuple(p.aliases))
            for p in conv.pages
        ], conv.id)
        context: list[str] = []
        for turn in conv.turns:
            item = f"{conv.id}.{turn.id}"
            injected = list(dict.fromkeys(session.push(  # an id injected twice is injected once
                Query(text=turn.text, k=budget, source=conv.source, context=tuple(context)), item
            )))
            context.append(turn.text)
            done += 1
            if progress:
                progress("push", done, total)
            if item not in fx.digests:
                continue
            records[item] = {
                "expect": turn.expect,
                "injected": injected,
                "foreign": sorted({i for i in injected
                                   if i in pages and pages[i].source != conv.source}),
                "asked": turn.text,
                "gold": list(turn.gold),
                "acceptable": list(turn.acceptable),
                "tokens": sum(len(pages[i].text.split()) for i in injected if i in pages),
            }
    return score({"push/default": records} if records else {}, options)


@dataclass
class Tally:
    """What a push cell's metrics are computed from, counted over its turns."""

    turns: int = 0
    retrieve: int = 0  # turns that should inject a page ...
    missed: int = 0  # ... and injected nothing from gold or acceptable
    silent: int = 0  # turns that should stay silent ...
    fired: int = 0  # ... and injected something anyway
    gold: int = 0  # gold ids of the should-inject turns ...
    gold_hit: int = 0  # ... that were injected
    injected: int = 0  # ids injected on any turn ...
    injected_good: int = 0  # ... that were gold or acceptable, of the conversation's source
    violations: int = 0  # ids injected from another source
    tokens: int = 0  # words of page text injected

    def add(self, turn: dict[str, Any]) -> bool:
        """Count one turn's record; whether the turn passes."""
        injected, foreign = turn["injected"], turn["foreign"]
        good = set(turn["gold"]) | set(turn["acceptable"])
        hits = [i for i in injected if i in good and i not in foreign]
        if turn["expect"] == "retrieve":
            self.retrieve += 1
            self.missed += 0 if hits else 1
            self.gold += len(turn["gold"])
            self.gold_hit += len(set(turn["gold"]) & set(injected))
            passed = bool(hits)
        else:
            self.silent += 1
            self.fired += 1 if injected else 0
            passed = not injected
        self.turns += 1
        self.injected += len(injected)
        self.injected_good += len(hits)
        self.violations += len(foreign)
        self.tokens += turn["tokens"]
        return passed and not foreign

    def metrics(self) -> dict[str, float]:
        return {
            "know_to_ask_failure_rate": ratio(self.missed, self.retrieve),
            "false_fire_rate": ratio(self.fired, self.silent),
            "push_precision": ratio(self.injected_good, self.injected),
            "push_recall": ratio(self.gold_hit, self.gold),
            "source_isolation_violations": self.violations,
            "avg_injected_tokens": ratio(self.tokens, self.turns),
        }


def score(records: Records, options: PushOptions) -> SuiteRun:
    """Know-to-ask, false fires, precision, recall and isolation from each turn's injection."""
    result = SuiteRun()
    for cell, turns in records.items():
        tally = Tally()
        outcomes = {item: {**turn, "outcome": outcome(tally.add(turn))}
                    for item, turn in turns.items()}
        result.add(cell, tally.metrics(), outcomes)
    return result
