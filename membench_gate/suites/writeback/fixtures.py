"""The writeback suite's fixtures: ``sessions/*.json``, each a conversation (who said what) with
the gold facts its write path should keep, the non-facts it must not, and later probes."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from pydantic import Field, field_validator

from membench_gate.errors import GateError
from membench_gate.model.measurement import digest
from membench_gate.suites.common.fixtures import (
    Item,
    SuiteFixtures,
    keyword_in,
    load_documents,
    unique,
)
from membench_gate.suites.common.folders import FixtureFile


class SpokenTurn(Item):
    """A turn of a writeback session (who said what)."""

    id: str = Field(min_length=1)
    speaker: str = Field(min_length=1)
    text: str = Field(min_length=1)


def _keywords(value: list[str]) -> list[str]:
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
    turns: list[SpokenTurn] = Field(min_length=1)
    gold_facts: list[GoldFact]
    probes: list[SessionProbe] = []
    non_facts: list[NonFact] = []


@dataclass
class Fixtures(SuiteFixtures):
    """The writeback suite's items: sessions."""

    sessions: list[WritebackSession] = field(default_factory=list)


def load(fx: Fixtures, files: list[FixtureFile]) -> None:
    fx.sessions += load_documents(fx, files, WritebackSession, "session")


def validate(fx: Fixtures, include_holdout: bool) -> None:
    """Turns exist, ids are unique, and a non-fact's keywords occur together in its own turn only
    (otherwise a memory that kept every other turn word for word would be charged for it)."""
    unique(fx.origins, "session")
    for session in fx.sessions:
        where = f"{fx.label(session.id)}: session {session.id}"
        unique(((t.id, where) for t in session.turns), "turn")
        unique(((i.id, where) for i in (*session.gold_facts, *session.non_facts,
                                          *session.probes)), "gold fact / non-fact / probe")
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
        context = {"source": session.source, "session": session.id,
                   "turns": [t.model_dump() for t in kept]}
        if include_holdout or not session.holdout:
            for item in (*session.gold_facts, *session.non_facts, *session.probes):
                if not include_holdout and (item.holdout or getattr(item, "turn", None) in held):
                    continue
                fx.digests[f"{session.id}.{item.id}"] = digest({**context,
                                                                 "item": item.model_dump()})
    # Composite keys are unique across files too: "a" + "b.c" and "a.b" + "c" are one key.
    unique(((f"{s.id}.{i.id}", fx.label(s.id)) for s in fx.sessions
             for i in (*s.gold_facts, *s.non_facts, *s.probes)),
            "writeback item (session.item)")
    unique(((f"{s.id}/{t.id}", fx.label(s.id)) for s in fx.sessions for t in s.turns),
            "writeback corpus item (session/turn)")
    if not include_holdout:
        fx.sessions = [
            s.model_copy(update={"turns": [t for t in s.turns if not t.holdout]})
            for s in fx.sessions if not s.holdout
        ]
    # The corpus of the writeback suite is what is said: every turn handed to write(session).
    fx.corpus = {f"{s.id}/{t.id}": digest({"source": s.source, "session": s.id,
                                            "turn": t.model_dump()})
                 for s in fx.sessions for t in s.turns}

