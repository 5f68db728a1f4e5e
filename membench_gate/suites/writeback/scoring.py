"""How the writeback suite asks the adapter and scores what came back (the package says what it
measures)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from membench_gate.adapter.types import Answer, ContextTurn, Query, Session, Turn
from membench_gate.errors import GateError
from membench_gate.suites.common.fixtures import keyword_in, parse_time
from membench_gate.suites.common.pages import page_records
from membench_gate.suites.common.scoring import outcome
from membench_gate.suites.common.suite import Progress, Records, SuiteRun
from membench_gate.suites.writeback import check_adapter
from membench_gate.suites.writeback.fixtures import (
    ContinuityPair,
    Fixtures,
    SpokenTurn,
    WritebackSession,
)
from membench_gate.suites.writeback.options import WritebackOptions

if TYPE_CHECKING:  # only for annotations: checking a results file never imports the client
    from membench_gate.adapter.rpc import SuiteSession

FIDELITY, CONTINUITY = "writeback/fidelity", "writeback/continuity"


def same_entity(a: str | None, b: str | None) -> bool:
    """Entities compare case-insensitively with whitespace collapsed ("Priya  shah" = "priya Shah")."""
    if a is None or b is None:
        return False
    return " ".join(a.casefold().split()) == " ".join(b.casefold().split())


def _holds(hit: dict[str, Any], keywords: list[str]) -> bool:
    text = hit.get("text")
    return isinstance(text, str) and all(keyword_in(k, text) for k in keywords)


def _first_holding(hits: list[dict[str, Any]], keywords: list[str], entity: str | None = None,
                   taken: frozenset[str] | set[str] = frozenset()) -> int | None:
    """The rank of the first recorded hit holding every keyword (about ``entity``, when given)
    whose id is not in ``taken``."""
    return next((rank for rank, hit in enumerate(hits, 1) if _holds(hit, keywords)
                 and (entity is None or same_entity(hit.get("entity"), entity))
                 and hit.get("id") not in taken), None)


def _shown(answer: Answer, k: int) -> dict[str, Any]:
    """What came back, as items record it (``hits`` ranked, ``abstained``), with what the memory
    wrote: each hit's whole text (a keyword past a cut could not be checked again when a results
    file is re-derived), entity and provenance."""
    hits = [{"id": hit.id, "score": hit.score, "text": hit.text, "entity": hit.entity,
             "provenance": hit.provenance} for hit in answer.hits[:k]]
    return {"hits": hits, "abstained": answer.abstain}


def _checked(answer: Answer, item: str, session: Any) -> Answer:
    """The answer, each of whose hits must carry the text the memory wrote. Through the
    adapter boundary the error is the session's (with the adapter's last stderr lines)."""
    for hit in answer.hits:
        if hit.text is None:
            why = f"hit {hit.id!r} has no text"
            broke = getattr(session, "broke", None)
            if broke is not None:
                raise broke("search", item, "hit_text", why)
            raise GateError(f"adapter search() broke the protocol in suite writeback, item "
                            f"{item}: {why} (docs/adapters.md: the writeback suite reads the "
                            "text of every hit)")
    return answer


def _turns(turns: list[SpokenTurn]) -> tuple[Turn, ...]:
    return tuple(Turn(t.id, t.speaker, t.text, t.role, _moment(t.at)) for t in turns)


def _moment(at: str | None) -> Any:
    return None if at is None else parse_time(at, "at")


def _as_session(s: WritebackSession) -> Session:
    return Session(id=s.id, source=s.source, turns=_turns(s.turns))


def _reported(category: str | None, **fields: str | None) -> dict[str, str]:
    """Fields a record carries for the report only, when the fixture gives them."""
    return {key: value for key, value in {"category": category, **fields}.items()
            if value is not None}


def units(fx: Fixtures) -> list[list[str]]:
    """What one reset serves, for the workers (:mod:`membench_gate.run.workers`): a session's
    items together, then a continuity pair's decisions together, in fixture order."""
    return [*([f"{s.id}.{i.id}" for i in (*s.gold_facts, *s.non_facts, *s.probes)]
              for s in fx.sessions),
            *([f"{p.id}/{d.id}" for d in p.decisions] for p in fx.pairs)]


def run(fx: Fixtures, session: SuiteSession, options: WritebackOptions,
        progress: Progress | None = None) -> SuiteRun:
    check_adapter(session.capabilities)
    k = options.k
    total = sum(1 for s in fx.sessions
                for i in (*s.gold_facts, *s.non_facts, *s.probes) if f"{s.id}.{i.id}" in fx.digests)
    total += sum(1 for p in fx.pairs for d in p.decisions if f"{p.id}/{d.id}" in fx.digests)
    done = 0
    fidelity: dict[str, dict[str, Any]] = {}
    continuity: dict[str, dict[str, Any]] = {}

    def ask(source: str, item: str, text: str) -> Answer | None:
        """What a search for ``text`` finds in ``source``; None for an item not scored."""
        nonlocal done
        if item not in fx.digests:
            return None
        answer = _checked(session.search(Query(text=text, k=k, source=source), item), item,
                          session)
        done += 1
        if progress:
            progress("writeback", done, total)
        return answer

    for s in fx.sessions:
        if not any(f"{s.id}.{i.id}" in fx.digests for i in (*s.gold_facts, *s.non_facts,
                                                             *s.probes)):
            continue  # nothing of it scored here (a shard, another worker): never sent
        session.reset(s.id)
        ids = fx.session_page_ids[s.id]
        if pages := page_records(s.pages, ids):
            session.ingest(pages, s.id)
        session.write(_as_session(s), s.id)
        # What a seeded page says was not written: its hits satisfy nothing (recorded only for a
        # session with pages, so a session without them records what it always did).
        seeded = {"seeded": sorted(r.id for r in pages)} if pages else {}
        for order, fact in enumerate(s.gold_facts):
            item, asked = f"{s.id}.{fact.id}", " ".join(fact.keywords)
            if (answer := ask(s.source, item, asked)) is None:
                continue
            fidelity[item] = {
                "kind": "fact", "session": s.id, "order": order,
                "keywords": fact.keywords, "entity": fact.entity,
                "provenance": {"source": s.source, "session": s.id, "turn": fact.turn},
                **_reported(s.category, fact_kind=fact.kind, gist=fact.gist), **seeded,
                "asked": asked, **_shown(answer, k),
            }
        for nonfact in s.non_facts:
            item, asked = f"{s.id}.{nonfact.id}", " ".join(nonfact.keywords)
            if (answer := ask(s.source, item, asked)) is None:
                continue
            fidelity[item] = {
                "kind": f"non-fact ({nonfact.kind})",
                "keywords": nonfact.keywords, "turn": nonfact.turn,
                **_reported(s.category), **seeded, "asked": asked, **_shown(answer, k),
            }
        for probe in s.probes:
            item = f"{s.id}.{probe.id}"
            if (answer := ask(s.source, item, probe.question)) is None:
                continue
            continuity[item] = {"keywords": probe.keywords, **_reported(s.category), **seeded,
                                "asked": probe.question, **_shown(answer, k)}

    for pair in fx.pairs:
        scored = [d for d in pair.decisions if f"{pair.id}/{d.id}" in fx.digests]
        if not scored:  # a held-out pair (or one of another shard) is never sent
            continue
        injected, foreign = _replay_pair(fx, pair, session, options, f"{pair.id}/{scored[0].id}")
        ids = fx.page_ids[pair.id]
        seeded = sorted(ids[(p.slug, p.source)] for p in pair.pages)
        for decision in scored:
            item = f"{pair.id}/{decision.id}"
            asked = " ".join(decision.keywords) if decision.keywords else None
            answer = ask(pair.source, item, asked) if asked is not None else None
            if answer is None:  # (no keywords: the fact arm is not asked)
                done += 1
                if progress:
                    progress("writeback", done, total)
            continuity[item] = {
                "kind": "decision", "pair": pair.id,
                "expected": [ids[(slug, pair.source)] for slug in decision.expected],
                "keywords": decision.keywords, "injected": injected, "foreign": foreign,
                "seeded": seeded,
                **_reported(pair.category), "asked": asked,
                **(_shown(answer, k) if answer is not None else {"hits": [], "abstained": None}),
            }

    records: Records = {}
    if fidelity:
        records[FIDELITY] = fidelity
    if continuity:
        records[CONTINUITY] = continuity
    return score(records, options)


def _replay_pair(fx: Fixtures, pair: ContinuityPair, session: SuiteSession,
                 options: WritebackOptions, item: str) -> tuple[list[str], list[str]]:
    """Run the pair on a fresh store — its pages, the writer's session, then every reader user
    turn pushed with the turns before it as context, with no reset — and return the ids injected
    on any reader turn (first-injected order) and those of them from another source."""
    ids = fx.page_ids[pair.id]
    records = page_records(pair.pages, ids)
    session.reset(item)
    if records:
        session.ingest(records, item)
    session.write(Session(id=pair.writer.id, source=pair.source,
                          turns=_turns(pair.writer.turns)), item)
    injected: list[str] = []
    context: list[ContextTurn] = []
    for turn in pair.reader.turns:
        if turn.role == "user":
            pushed = session.push(Query(
                text=turn.text, k=options.budget, source=pair.source,
                context=tuple(c.text for c in context), context_turns=tuple(context),
            ), item)
            injected += [i for i in pushed if i not in injected]
        context.append(ContextTurn(turn.role, turn.text, _moment(turn.at)))
    sources = {r.id: r.source for r in records}
    foreign = sorted({i for i in injected if i in sources and sources[i] != pair.source})
    return injected, foreign


def _share(part: int, whole: int) -> float:
    """part / whole, 1 when there is nothing to take a share of."""
    return part / whole if whole else 1.0


def score(records: Records, options: WritebackOptions) -> SuiteRun:
    """Every judgement from the recorded hits and injections alone (so a merge or a re-derived
    results file recomputes them): fidelity, provenance and leaks from the fidelity items,
    continuity from the probes and the pairs' decisions."""
    result = SuiteRun()
    fidelity = records.get(FIDELITY, {})
    if fidelity:
        judged = _facts(fidelity)
        facts = [item for item in judged.values() if item["kind"] == "fact"]
        non_facts = [item for item in judged.values() if item["kind"] != "fact"]
        survived = [item for item in facts if item["survived"]]
        metrics: dict[str, float] = {
            "write_back_fidelity": _share(len(survived), len(facts)),
            "provenance_accuracy": _share(sum(1 for item in survived if item["provenance_ok"]),
                                          len(survived)),
        }
        if non_facts:
            metrics["non_fact_leak_rate"] = _share(
                sum(1 for item in non_facts if item["leaked"]), len(non_facts))
        result.add(FIDELITY, metrics, {
            ident: {**item, "outcome": outcome(item["provenance_ok"] if item["kind"] == "fact"
                                               else not item["leaked"])}
            for ident, item in judged.items()
        })
    continuity = records.get(CONTINUITY, {})
    if continuity:
        judged = {ident: _continuity(item) for ident, item in continuity.items()}
        metrics = {"continuity_rate": _share(
            sum(1 for item in judged.values() if item["outcome"] == "pass"), len(judged))}
        # Counted once per pair (each decision of a pair records the pair's foreign ids).
        pairs: dict[str, set[str]] = {}
        for item in judged.values():
            if item.get("kind") == "decision":
                pairs.setdefault(item["pair"], set()).update(item["foreign"])
        if pairs:
            metrics["source_isolation_violations"] = float(sum(len(f) for f in pairs.values()))
        result.add(CONTINUITY, metrics, judged)
    return result


def _facts(fidelity: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The fidelity items judged. A gold fact survives when a hit holds every keyword and the
    fact's entity, and each hit id satisfies at most one gold fact of a session: in the session's
    gold-fact order, a fact takes the best-ranked such hit that no earlier fact took."""
    judged: dict[str, dict[str, Any]] = {}
    facts = sorted((item["session"], item["order"], ident) for ident, item in fidelity.items()
                   if item["kind"] == "fact")
    taken: dict[str, set[str]] = {}
    for session, _, ident in facts:
        item = fidelity[ident]
        mine = taken.setdefault(session, set())
        # A seeded page is what the session was given, not what it wrote: it satisfies no fact.
        rank = _first_holding(item["hits"], item["keywords"], item["entity"],
                              mine | set(item.get("seeded", ())))
        hit = item["hits"][rank - 1] if rank is not None else None
        if hit is not None:
            mine.add(hit["id"])
        judged[ident] = {**item, "survived": hit is not None, "rank": rank,
                         "provenance_ok": hit is not None
                         and _provenance(hit) == item["provenance"]}
    for ident, item in fidelity.items():
        if item["kind"] != "fact":
            rank = _first_holding(item["hits"], item["keywords"],
                                  taken=set(item.get("seeded", ())))
            judged[ident] = {**item, "leaked": rank is not None, "leaked_at": rank}
    return judged


def _continuity(item: dict[str, Any]) -> dict[str, Any]:
    """A probe passes when a hit holds every keyword; a pair's decision when an expected page was
    injected on a reader turn (pointer arm) or a written memory's hit holds every keyword (fact
    arm)."""
    if item.get("kind") != "decision":
        rank = _first_holding(item["hits"], item["keywords"], taken=set(item.get("seeded", ())))
        return {**item, "rank": rank, "outcome": outcome(rank is not None)}
    # The fact arm reads what was written: a seeded page holding the keywords does not count.
    rank = _first_holding(item["hits"], item["keywords"], taken=set(item["seeded"])) \
        if item["keywords"] else None
    pointer = [i for i in item["expected"] if i in item["injected"]]
    return {**item, "pointer": pointer, "rank": rank,
            "outcome": outcome(bool(pointer) or rank is not None)}


def _provenance(hit: dict[str, Any]) -> dict[str, Any] | None:
    """The three fields the suite compares; extra keys a memory keeps are ignored."""
    provenance = hit.get("provenance")
    if not isinstance(provenance, dict):
        return None
    return {key: provenance.get(key) for key in ("source", "session", "turn")}
