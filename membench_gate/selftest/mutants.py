"""Selftest mutants: plausible bad memories, placed between the suites and the adapter client.

A gate is only as good as its sensitivity. Each mutant wraps the session object the suites talk to
(same methods: ``reset``, ``ingest``, ``search``, ``push``, ``write``, ``capabilities``) and
corrupts what comes back in one specific way, so it works for any adapter, in any language. Every
answer a mutant gives is still a *valid* answer — hit ids among the records ingested since the last
reset (or, in the writeback suite, the memory's own), at most ``k`` hits, scores best first, push ids
known and within budget — so what the suites see is a memory that is wrong, not one that is broken.

Mutants are deterministic: no clock, no unseeded randomness.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

from membench_gate.adapter.types import Answer, Hit, Pushed, Query, Record, Session
from membench_gate.suites.common.fixtures import keyword_in


class Mutant:
    """The identity wrapper: passes every call through and remembers what was ingested and
    written since the last reset (which the mutations need to build valid wrong answers)."""

    name = "identity"
    description = "passes everything through"

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.suite = getattr(inner, "suite", "")
        self.capabilities = inner.capabilities
        self.records: list[Record] = []
        self.sessions: list[Session] = []

    def reset(self, item: str | None = None) -> None:
        self.records, self.sessions = [], []
        self.inner.reset(item)

    def ingest(self, records: Sequence[Record], item: str | None = None) -> None:
        self.records.extend(records)
        self.inner.ingest(records, item)

    def write(self, session: Session, item: str | None = None) -> None:
        self.sessions.append(session)
        self.inner.write(session, item)

    def search(self, query: Query, item: str) -> Answer:
        return self.mutate_answer(self.inner.search(query, item), query)

    def push(self, query: Query, item: str) -> list[str]:
        return self.push_answer(query, item).ids

    def push_answer(self, query: Query, item: str) -> Pushed:
        pushed = self.inner.push_answer(query, item)
        ids = self.mutate_push(list(pushed.ids), query)
        # The memory's text says what it injected: once the ids change, the pages' texts do.
        return pushed if ids == pushed.ids else Pushed(ids)

    def mutate_answer(self, answer: Answer, query: Query) -> Answer:
        return answer

    def mutate_push(self, ids: list[str], query: Query) -> list[str]:
        return ids

    def known(self, source: str | None = None) -> list[str]:
        """Ids ingested since the last reset (of ``source`` when given), in ingest order."""
        seen = dict.fromkeys(r.id for r in self.records if source is None or r.source == source)
        return list(seen)


def _rescore(ids: list[str], hits: list[Hit]) -> list[Hit]:
    """``ids`` in their new order, carrying the original scores position by position (so the
    scores stay best first) and, for each id, its own text, entity and provenance."""
    by_id = {h.id: h for h in hits}
    return [replace(by_id[i], score=h.score) if i in by_id else Hit(i, h.score)
            for i, h in zip(ids, hits, strict=True)]


class DropBestHit(Mutant):
    name = "drop-best-hit"
    description = "loses the best hit of every search"

    def mutate_answer(self, answer: Answer, query: Query) -> Answer:
        return Answer(list(answer.hits[1:]), answer.abstain)


class ReverseRanking(Mutant):
    name = "reverse-ranking"
    description = "returns the same hits in reverse order (scores kept in place)"

    def mutate_answer(self, answer: Answer, query: Query) -> Answer:
        hits = list(answer.hits)
        return Answer(_rescore([h.id for h in reversed(hits)], hits), answer.abstain)


class WrongIds(Mutant):
    name = "wrong-ids"
    description = "answers with ingested records that retrieval did not return"

    def mutate_answer(self, answer: Answer, query: Query) -> Answer:
        returned = {h.id for h in answer.hits}
        others = [i for i in self.known(query.source) if i not in returned]
        if not others:  # nothing else to answer with (or a writeback session): unchanged
            return answer
        # Each wrong hit with its record's text and entity, as a memory returns what it stores
        # (the writeback suite reads the text of every hit, and a continuity pair seeds pages).
        records = {r.id: r for r in self.records}
        return Answer([Hit(i, h.score, text=records[i].text, entity=records[i].entity)
                       for i, h in zip(others, answer.hits, strict=False)], answer.abstain)


class NeverAbstain(Mutant):
    name = "never-abstain"
    description = "answers every question, however weak the best hit"

    def mutate_answer(self, answer: Answer, query: Query) -> Answer:
        return Answer(list(answer.hits), False)


class AlwaysAbstain(Mutant):
    name = "always-abstain"
    description = "abstains on every question (the hits are still returned)"

    def mutate_answer(self, answer: Answer, query: Query) -> Answer:
        return Answer(list(answer.hits), True)


class InjectNothing(Mutant):
    name = "inject-nothing"
    description = "never pushes anything"

    def mutate_push(self, ids: list[str], query: Query) -> list[str]:
        return []


class ForgetEverything(InjectNothing):
    name = "forget-everything"
    description = "returns no hits and pushes nothing, abstaining always"

    def mutate_answer(self, answer: Answer, query: Query) -> Answer:
        return Answer([], True)


class InjectEveryTurn(Mutant):
    name = "inject-every-turn"
    description = "pushes the first ingested pages of the conversation's source on every turn"

    def mutate_push(self, ids: list[str], query: Query) -> list[str]:
        return self.known(query.source)[:query.k]


class InjectForeignSource(Mutant):
    name = "inject-foreign-source"
    description = "adds a page of another source to every push"

    def mutate_push(self, ids: list[str], query: Query) -> list[str]:
        foreign = [i for i in self.known() if i not in set(self.known(query.source))]
        if not foreign or query.k < 1:
            return ids
        return [*ids[:query.k - 1], foreign[0]]


class ForgetWrites(Mutant):
    name = "forget-writes"
    description = "drops every conversation handed to write(session)"

    def write(self, session: Session, item: str | None = None) -> None:
        self.sessions.append(session)


class StripProvenance(Mutant):
    name = "strip-provenance"
    description = "returns hits without provenance"

    def mutate_answer(self, answer: Answer, query: Query) -> Answer:
        return Answer([replace(h, provenance=None) for h in answer.hits], answer.abstain)


class Misattribute(Mutant):
    name = "misattribute"
    description = "attributes every hit to no entity"

    def mutate_answer(self, answer: Answer, query: Query) -> Answer:
        return Answer([replace(h, entity=None) for h in answer.hits], answer.abstain)


class KeepEveryTurn(Mutant):
    name = "keep-every-turn"
    description = ("also keeps every written turn word for word (hypotheticals, hearsay and "
                   "retracted claims included) and returns the closest one as the last hit")

    def mutate_answer(self, answer: Answer, query: Query) -> Answer:
        turns = [(s, t) for s in self.sessions for t in s.turns if s.source == query.source]
        if not turns or query.k < 1:
            return answer
        words = query.text.split()
        # The turn holding most of the query's words (the first such turn on a tie).
        session, turn = max(reversed(turns),
                            key=lambda st: sum(keyword_in(w, st[1].text) for w in words))
        hits = list(answer.hits[:query.k - 1])
        score = hits[-1].score if hits else 0.0
        verbatim = Hit(f"verbatim:{session.id}/{turn.id}", score, text=turn.text,
                       entity=turn.speaker, provenance={"source": session.source,
                                                        "session": session.id, "turn": turn.id})
        if any(h.id == verbatim.id for h in hits):
            return answer
        return Answer([*hits, verbatim], answer.abstain)


class ResurrectSuperseded(Mutant):
    name = "resurrect-superseded"
    description = ("ignores decision lifecycle: ranks the decisions a hit superseded "
                   "(Record.meta status / superseded_by) just above it")

    def mutate_answer(self, answer: Answer, query: Query) -> Answer:
        replaced: dict[str, list[str]] = {}
        for record in self.records:
            meta = record.meta or {}
            successor = meta.get("superseded_by")
            if meta.get("status") == "superseded" and isinstance(successor, str) \
                    and record.source == query.source:
                replaced.setdefault(successor, []).append(record.id)
        if not replaced:  # no lifecycle in this suite: unchanged
            return answer
        ids: list[str] = []
        for hit in answer.hits:
            ids += [i for i in (*replaced.get(hit.id, ()), hit.id) if i not in ids]
        hits = list(answer.hits)
        return Answer(_rescore(ids[:len(hits)], hits), answer.abstain)


MUTANTS: tuple[type[Mutant], ...] = (
    DropBestHit, ReverseRanking, WrongIds, NeverAbstain, AlwaysAbstain, ForgetEverything,
    InjectEveryTurn, InjectNothing, InjectForeignSource, ForgetWrites, StripProvenance,
    Misattribute, KeepEveryTurn, ResurrectSuperseded,
)


def by_name() -> dict[str, Callable[[Any], Mutant]]:
    """Mutant name → the wrapper to put around a suite's session."""
    return {m.name: m for m in MUTANTS}
