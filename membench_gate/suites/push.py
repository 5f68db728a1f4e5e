"""push: know-to-ask and intrusion budget over replayed conversations.

For each conversation the store is reset and its pages ingested (``id = entity = slug``). Each user
turn asks ``push(Query(text=turn, k=budget, source=conversation source, context=earlier turns))``.
A should-retrieve turn passes when the injection hits gold ∪ acceptable; a stay-silent turn passes
when nothing is injected; any injected id from another source fails the turn and counts as a
source-isolation violation. Holdout turns are not scored but stay in the context of later turns.
"""

from __future__ import annotations

from typing import Any

from membench_gate.adapter import Query, Record
from membench_gate.config import PushOptions
from membench_gate.fixtures import SuiteFixtures
from membench_gate.rpc import SuiteSession
from membench_gate.suites import Progress, Records, SuiteRun, outcome, ratio

SCORER_VERSION = 1


def run(fx: SuiteFixtures, session: SuiteSession, options: PushOptions,
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


def score(records: Records, options: PushOptions) -> SuiteRun:
    """Know-to-ask, false fires, precision, recall and isolation from each turn's injection."""
    result = SuiteRun()
    for cell, turns in records.items():
        retrieve = silent = fired = missed = 0
        injected_total = injected_good = gold_total = gold_hit = violations = tokens = 0
        outcomes: dict[str, dict[str, Any]] = {}
        for item, turn in turns.items():
            injected, foreign = turn["injected"], turn["foreign"]
            good = set(turn["gold"]) | set(turn["acceptable"])
            hits = [i for i in injected if i in good and i not in foreign]
            if turn["expect"] == "retrieve":
                retrieve += 1
                passed = bool(hits)
                missed += 0 if hits else 1
                gold_total += len(turn["gold"])
                gold_hit += len(set(turn["gold"]) & set(injected))
            else:
                silent += 1
                passed = not injected
                fired += 1 if injected else 0
            injected_total += len(injected)
            injected_good += len(hits)
            violations += len(foreign)
            tokens += turn["tokens"]
            outcomes[item] = {**turn, "outcome": outcome(passed and not foreign)}
        result.add(cell, {
            "know_to_ask_failure_rate": ratio(missed, retrieve),
            "false_fire_rate": ratio(fired, silent),
            "push_precision": ratio(injected_good, injected_total),
            "push_recall": ratio(gold_hit, gold_total),
            "source_isolation_violations": violations,
            "avg_injected_tokens": ratio(tokens, len(outcomes)),
        }, outcomes)
    return result
