"""The writeback suite's fixtures: ``sessions/*.json``, each a conversation (who said what) with
the gold facts its write path should keep, the non-facts it must not, and later probes; and
``pairs/*.json``, each a continuity pair (a writer session, then a reader conversation on the same
memory) with the decisions the reader should recall."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from pydantic import Field, field_validator

from membench_gate.errors import GateError
from membench_gate.model.measurement import digest
from membench_gate.suites.common.fixtures import (
    Item,
    SuiteFixtures,
    iso_date,
    keyword_in,
    load_documents,
    unique,
)
from membench_gate.suites.common.folders import FixtureFile
from membench_gate.suites.common.pages import Page, PageKey, page_ids

Role = Literal["user", "assistant"]


class SpokenTurn(Item):
    """A turn of a writeback session (who said what, in which role, and when)."""

    id: str = Field(min_length=1)
    speaker: str = Field(min_length=1)
    text: str = Field(min_length=1)
    role: Role = "user"
    at: str | None = None  # ISO 8601 UTC

    _at = field_validator("at")(iso_date)


def _keywords(value: list[str]) -> list[str]:
    """Keywords hold a letter or digit each and are not repeated (ignoring case)."""
    if any(not any(ch.isalnum() for ch in k) for k in value):
        raise ValueError("a keyword has no letters or digits")
    if len({k.casefold() for k in value}) != len(value):
        raise ValueError("a keyword is repeated")
    return value


class GoldFact(Item):
    """What the write path should keep from a turn: keywords its text holds, about an entity."""

    id: str = Field(min_length=1)
    keywords: list[str] = Field(min_length=1)
    entity: str = Field(min_length=1)
    turn: str = Field(min_length=1)
    kind: str | None = None  # what sort of fact (a preference, a commitment): reported only
    gist: str | None = None  # the fact in words: reported only

    _kw = field_validator("keywords")(_keywords)


class NonFact(Item):
    """A claim said in a turn that must not become a memory (hypothetical, quoted, retracted)."""

    id: str = Field(min_length=1)
    keywords: list[str] = Field(min_length=1)
    turn: str = Field(min_length=1)
    kind: Literal["hypothetical", "quoted", "retracted"]

    _kw = field_validator("keywords")(_keywords)


class SessionProbe(Item):
    """A question of a later session, answered when a hit's text holds every keyword."""

    id: str = Field(min_length=1)
    question: str = Field(min_length=1)
    keywords: list[str] = Field(min_length=1)

    _kw = field_validator("keywords")(_keywords)


class WritebackSession(Item):
    id: str = Field(min_length=1)
    source: str = "default"
    category: str | None = None  # reported only
    pages: list[Page] = []  # ingested before the write (the pages a write path names entities by)
    turns: list[SpokenTurn] = Field(min_length=1)
    gold_facts: list[GoldFact]
    probes: list[SessionProbe] = []
    non_facts: list[NonFact] = []


class ReaderTurn(Item):
    """A turn of a pair's reader conversation: a user turn is pushed, an assistant turn is
    context only."""

    id: str = Field(min_length=1)
    role: Role = "user"
    at: str | None = None  # ISO 8601 UTC
    text: str = Field(min_length=1)

    _at = field_validator("at")(iso_date)


class Writer(Item):
    id: str = Field(min_length=1)
    turns: list[SpokenTurn] = Field(min_length=1)


class Reader(Item):
    id: str = Field(min_length=1)
    turns: list[ReaderTurn] = Field(min_length=1)


class Decision(Item):
    """What the reader should recall: passes when an ``expected`` page was injected on a reader
    turn (pointer arm) or a written memory holds every keyword (fact arm)."""

    id: str = Field(min_length=1)
    expected: list[str] = []
    keywords: list[str] = []

    @field_validator("keywords")
    @classmethod
    def _kw(cls, value: list[str]) -> list[str]:
        return _keywords(value) if value else value


class ContinuityPair(Item):
    id: str = Field(min_length=1)
    category: str | None = None  # reported only
    source: str = "default"
    pages: list[Page] = []
    writer: Writer
    reader: Reader
    decisions: list[Decision] = Field(min_length=1)


@dataclass
class Fixtures(SuiteFixtures):
    """The writeback suite's items: sessions and continuity pairs."""

    sessions: list[WritebackSession] = field(default_factory=list)
    pairs: list[ContinuityPair] = field(default_factory=list)
    # pair id -> the record id of each of its pages, from all its pages (held out or not)
    page_ids: dict[str, dict[PageKey, str]] = field(default_factory=dict)
    # session id -> the same for a session's pages (a session and a pair may share an id)
    session_page_ids: dict[str, dict[PageKey, str]] = field(default_factory=dict)


PAIRS = "pairs"  # the subfolder of continuity pairs (the suite's ``subfolders``)


def _is_pair(label: str) -> bool:
    """Whether the file labelled ``label`` is of the pairs subfolder."""
    parts = label.rsplit("/", 2)
    return len(parts) == 3 and parts[1] == PAIRS


def load(fx: Fixtures, files: list[FixtureFile]) -> None:
    fx.sessions += load_documents(fx, [f for f in files if not _is_pair(f.label)],
                                  WritebackSession, "session")
    fx.pairs += load_documents(fx, [f for f in files if _is_pair(f.label)],
                               ContinuityPair, "continuity pair")


def validate(fx: Fixtures, include_holdout: bool) -> None:
    """Turns exist, ids are unique, and a non-fact's keywords occur together in its own turn only
    (otherwise a memory that kept every other turn word for word would be charged for it)."""
    unique((o for o in fx.origins if not _is_pair(o[1])), "session")
    unique((o for o in fx.origins if _is_pair(o[1])), "continuity pair")
    for session in fx.sessions:
        where = f"{fx.label(session.id)}: session {session.id}"
        unique(((t.id, where) for t in session.turns), "turn")
        unique(((i.id, where) for i in (*session.gold_facts, *session.non_facts,
                                          *session.probes)), "gold fact / non-fact / probe")
        ids = fx.session_page_ids[session.id] = page_ids(session.pages, where)
        turns = {t.id: t for t in session.turns}
        for index, item in enumerate((*session.gold_facts, *session.non_facts)):
            field_name = "gold_facts" if index < len(session.gold_facts) else "non_facts"
            if item.turn not in turns:
                raise GateError(f"{where}: {field_name} {item.id}: turn {item.turn!r} does not exist")
        for nonfact in session.non_facts:
            for turn in session.turns:
                if turn.id != nonfact.turn and all(keyword_in(k, turn.text)
                                                   for k in nonfact.keywords):
                    raise GateError(f"{where}: non_facts {nonfact.id}: keywords also occur together "
                                    f"in turn {turn.id!r}, not only in turn {nonfact.turn!r}")
        kept = [t for t in session.turns if include_holdout or not t.holdout]
        held = {t.id for t in session.turns} - {t.id for t in kept}
        pages = [{**p.model_dump(), "id": ids[(p.slug, p.source)]} for p in session.pages
                 if include_holdout or not p.holdout]
        # A session without pages digests as it did before sessions could have them.
        context = {"source": session.source, "session": session.id,
                   "turns": [_content(t) for t in kept],
                   **({"category": session.category} if session.category is not None else {}),
                   **({"pages": pages} if pages else {})}
        if include_holdout or not session.holdout:
            # A gold fact takes the best hit that no earlier scored fact of its session took, so
            # its outcome depends on those facts, in order: what each asks, and about whom, is in
            # its digest, and reordering gold_facts changes every fact whose predecessors moved.
            # (A first fact, a non-fact and a probe digest as they did before the order counted.)
            before: list[dict[str, object]] = []
            for item in (*session.gold_facts, *session.non_facts, *session.probes):
                if not include_holdout and (item.holdout or getattr(item, "turn", None) in held):
                    continue
                order = {"facts_before": before} if before and isinstance(item, GoldFact) else {}
                fx.digests[f"{session.id}.{item.id}"] = digest({**context, **order,
                                                                 "item": _content(item)})
                if isinstance(item, GoldFact):
                    before.append({"keywords": item.keywords, "entity": item.entity})
    for pair in fx.pairs:
        _validate_pair(fx, pair, include_holdout)
    # Composite keys are unique across files too: "a" + "b.c" and "a.b" + "c" are one key, and
    # so are a session's "a.b/c" and a pair's "a.b" + "c".
    unique([*((f"{s.id}.{i.id}", fx.label(s.id)) for s in fx.sessions
              for i in (*s.gold_facts, *s.non_facts, *s.probes)),
            *((f"{p.id}/{d.id}", fx.label(p.id)) for p in fx.pairs for d in p.decisions)],
           "writeback item (session.item or pair/decision)")
    if not include_holdout:
        fx.sessions = [
            s.model_copy(update={"turns": [t for t in s.turns if not t.holdout],
                                 "pages": [page for page in s.pages if not page.holdout]})
            for s in fx.sessions if not s.holdout
        ]
        fx.pairs = [
            p.model_copy(update={
                "pages": [page for page in p.pages if not page.holdout],
                "writer": p.writer.model_copy(update={
                    "turns": [t for t in p.writer.turns if not t.holdout]}),
            })
            for p in fx.pairs if not p.holdout
        ]
    # The corpus of the writeback suite is what is said — every turn handed to write(session) or
    # pushed — and the pages a session or a pair seeds.
    corpus = [(f"{s.id}/{t.id}", fx.label(s.id),
               digest({"source": s.source, "session": s.id, "turn": _content(t)}))
              for s in fx.sessions for t in s.turns]
    for s in fx.sessions:
        ids = fx.session_page_ids[s.id]
        corpus += [(f"{s.id}/pages/{ids[(page.slug, page.source)]}", fx.label(s.id),
                    digest({"source": page.source, "page": page.model_dump()}))
                   for page in s.pages]
    for p in fx.pairs:
        ids = fx.page_ids[p.id]
        corpus += [(f"{p.id}/pages/{ids[(page.slug, page.source)]}", fx.label(p.id),
                    digest({"source": page.source, "page": page.model_dump()}))
                   for page in p.pages]
        corpus += [(f"{p.id}/{side.id}/{t.id}", fx.label(p.id),
                    digest({"source": p.source, "session": side.id, "turn": t.model_dump()}))
                   for side in (p.writer, p.reader) for t in side.turns]
    unique(((key, where) for key, where, _ in corpus),
           "writeback corpus item (session/turn, session/pages/id, pair/pages/id or "
           "pair/side/turn)")
    fx.corpus = {key: value for key, _, value in corpus}


# Keys added to sessions after their first format, at their defaults: left out of a digest, so an
# item of a session that does not use them keeps the digest it had (its content did not change).
_ADDED = {"role": "user", "at": None, "kind": None, "gist": None}


def _content(item: Item) -> dict[str, object]:
    """What a session's turn or gold item digests: its fields, an added key only when set."""
    return {key: value for key, value in item.model_dump().items()
            if key not in _ADDED or value != _ADDED[key]}


def _validate_pair(fx: Fixtures, pair: ContinuityPair, include_holdout: bool) -> None:
    """A pair's pages, turns and decisions check out; its decisions' digests."""
    where = f"{fx.label(pair.id)}: continuity pair {pair.id}"
    ids = fx.page_ids[pair.id] = page_ids(pair.pages, where)
    if pair.writer.id == pair.reader.id:
        raise GateError(f"{where}: writer and reader have the same id {pair.writer.id!r}")
    unique(((t.id, f"{where}: writer") for t in pair.writer.turns), "turn")
    unique(((t.id, f"{where}: reader") for t in pair.reader.turns), "turn")
    unique(((d.id, where) for d in pair.decisions), "decision")
    pages = {(p.slug, p.source): p for p in pair.pages}
    included = [p for p in pair.pages if include_holdout or not p.holdout]
    context = {
        "source": pair.source, "pair": pair.id,
        "pages": [{**p.model_dump(), "id": ids[(p.slug, p.source)]} for p in included],
        "writer": {"id": pair.writer.id, "turns": [
            t.model_dump() for t in pair.writer.turns if include_holdout or not t.holdout]},
        "reader": pair.reader.model_dump(),
    }
    for decision in pair.decisions:
        if not decision.expected and not decision.keywords:
            raise GateError(f"{where}: decision {decision.id}: needs expected slugs, keywords "
                            "or both")
        for slug in decision.expected:
            if (slug, pair.source) not in pages:
                raise GateError(f"{where}: decision {decision.id}: expected slug {slug!r} is not "
                                f"a page of the pair's source {pair.source!r}")
        referenced = [pages[(slug, pair.source)] for slug in decision.expected]
        if include_holdout or not (pair.holdout or decision.holdout
                                   or any(p.holdout for p in referenced)):
            fx.digests[f"{pair.id}/{decision.id}"] = digest({**context,
                                                             "decision": decision.model_dump()})

