"""How the writeback suite asks the adapter and scores what came back (the package says what it
measures)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from membench_gate.adapter.types import Answer, Hit, Query, Session, Turn
from membench_gate.errors import GateError
from membench_gate.suites.common.fixtures import keyword_in
from membench_gate.suites.common.scoring import outcome, ratio
from membench_gate.suites.common.suite import Progress, Records, SuiteRun
from membench_gate.suites.writeback import check_adapter
from membench_gate.suites.writeback.fixtures import Fixtures, WritebackSession
from membench_gate.suites.writeback.options import WritebackOptions

if TYPE_CHECKING:  # only for annotations: checking a results file never imports the client
    from membench_gate.adapter.rpc import SuiteSession


def same_entity(a: str | None, b: str | None) -> bool:
    """Entities compare case-insensitively with whitespace collapsed ("Priya  shah" = "priya Shah")."""
    if a is None or b is None:
        return False
    return " ".join(a.casefold().split()) == " ".join(b.casefold().split())


def _holds(hit: Hit, keywords: list[str]) -> bool:
    return hit.text is not None and all(keyword_in(k, hit.text) for k in keywords)


def _first_holding(hits: list[Hit], keywords: list[str], entity: str | None = None) -> int | None:
    """The rank of the first hit holding every keyword (and about ``entity``, when given)."""
    return next((rank for rank, hit in enumerate(hits, 1) if _holds(hit, keywords)
                 and (entity is None or same_entity(hit.entity, entity))), None)


def _shown(answer: Answer, k: int) -> dict[str, Any]:
    """What came back, as items record it (``hits`` ranked, ``abstained``), with what the memory
    wrote: each hit's whole text (a keyword past a cut could not be checked again when a results
    file is re-derived), entity and provenance."""
    hits = [{"id": hit.id, "score": hit.score, "text": hit.text, "entity": hit.entity,
             "provenance": hit.provenance} for hit in answer.hits[:k]]
    return {"hits": hits, "abstained": answer.abstain}


def _checked(answer: Answer, item: str) -> Answer:
    """The answer, each of whose hits must carry the text the memory wrote."""
    for hit in answer.hits:
        if hit.text is None:
            raise GateError(f"adapter search() failed in suite writeback, item {item}: hit "
                            f"{hit.id!r} has no text (the writeback suite reads what was written)")
    return answer


def _as_session(s: WritebackSession) -> Session:
    return Session(id=s.id, source=s.source,
                   turns=tuple(Turn(t.id, t.speaker, t.text) for t in s.turns))


def run(fx: Fixtures, session: SuiteSession, options: WritebackOptions,
        progress: Progress | None = None) -> SuiteRun:
    check_adapter(session.capabilities)
    k = options.k
    total = sum(1 for s in fx.sessions
                for i in (*s.gold_facts, *s.non_facts, *s.probes) if f"{s.id}.{i.id}" in fx.digests)
    done = 0
    fidelity: dict[str, dict[str, Any]] = {}
    continuity: dict[str, dict[str, Any]] = {}

    def ask(s: WritebackSession, item: str, text: str) -> Answer | None:
        """What a search for ``text`` finds in ``s``'s source; None for an item not scored."""
        nonlocal done
        if item not in fx.digests:
            return None
        answer = _checked(session.search(Query(text=text, k=k, source=s.source), item), item)
        done += 1
        if progress:
            progress("writeback", done, total)
        return answer

    for s in fx.sessions:
        session.reset(s.id)
        session.write(_as_session(s), s.id)
        for fact in s.gold_facts:
            item, asked = f"{s.id}.{fact.id}", " ".join(fact.keywords)
            if (answer := ask(s, item, asked)) is None:
                continue
            rank = _first_holding(answer.hits, fact.keywords, fact.entity)
            expected = {"source": s.source, "session": s.id, "turn": fact.turn}
            right = rank is not None and _provenance(answer.hits[rank - 1]) == expected
            fidelity[item] = {
                "kind": "fact",
                "keywords": fact.keywords, "entity": fact.entity, "provenance": expected,
                "survived": rank is not None, "provenance_ok": right, "rank": rank,
                "asked": asked, **_shown(answer, k),
            }
        for nonfact in s.non_facts:
            item, asked = f"{s.id}.{nonfact.id}", " ".join(nonfact.keywords)
            if (answer := ask(s, item, asked)) is None:
                continue
            rank = _first_holding(answer.hits, nonfact.keywords)
            fidelity[item] = {
                "kind": f"non-fact ({nonfact.kind})",
                "keywords": nonfact.keywords, "turn": nonfact.turn, "leaked": rank is not None,
                "leaked_at": rank, "asked": asked, **_shown(answer, k),
            }
        for probe in s.probes:
            item = f"{s.id}.{probe.id}"
            if (answer := ask(s, item, probe.question)) is None:
                continue
            continuity[item] = {
                "keywords": probe.keywords, "rank": _first_holding(answer.hits, probe.keywords),
                "asked": probe.question, **_shown(answer, k),
            }

    records: Records = {}
    if fidelity:
        records["writeback/fidelity"] = fidelity
    if continuity:
        records["writeback/continuity"] = continuity
    return score(records, options)


def score(records: Records, options: WritebackOptions) -> SuiteRun:
    """Fidelity, provenance and leaks from the fidelity items; continuity from the probes."""
    result = SuiteRun()
    fidelity = records.get("writeback/fidelity", {})
    if fidelity:
        facts = [item for item in fidelity.values() if item["kind"] == "fact"]
        non_facts = [item for item in fidelity.values() if item["kind"] != "fact"]
        survived = sum(1 for item in facts if item["survived"])
        metrics: dict[str, float] = {}
        if facts:
            metrics["write_back_fidelity"] = ratio(survived, len(facts))
            metrics["provenance_accuracy"] = ratio(
                sum(1 for item in facts if item["provenance_ok"]), survived)
        if non_facts:
            metrics["non_fact_leak_rate"] = ratio(
                sum(1 for item in non_facts if item["leaked"]), len(non_facts))
        result.add("writeback/fidelity", metrics, {
            ident: {**item, "outcome": outcome(item["provenance_ok"] if item["kind"] == "fact"
                                               else not item["leaked"])}
            for ident, item in fidelity.items()
        })
    continuity = records.get("writeback/continuity", {})
    if continuity:
        result.add("writeback/continuity", {
            "continuity_rate": ratio(
                sum(1 for item in continuity.values() if item["rank"] is not None),
                len(continuity)),
        }, {ident: {**item, "outcome": outcome(item["rank"] is not None)}
            for ident, item in continuity.items()})
    return result


def _provenance(hit: Hit) -> dict[str, Any] | None:
    """The three fields the suite compares; extra keys a memory keeps are ignored."""
    if hit.provenance is None:
        return None
    return {key: hit.provenance.get(key) for key in ("source", "session", "turn")}
