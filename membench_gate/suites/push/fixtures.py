"""The push suite's fixtures: ``conversations/*.json``, each with its pages (the corpus) and its
turns (should-retrieve or stay-silent)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from pydantic import Field

from membench_gate.errors import GateError
from membench_gate.model.measurement import digest
from membench_gate.suites.common.fixtures import Item, SuiteFixtures, load_documents, unique
from membench_gate.suites.common.folders import FixtureFile


class Page(Item):
    slug: str = Field(min_length=1)
    text: str = Field(min_length=1)
    aliases: list[str] = []
    source: str = "default"


class Turn(Item):
    id: str = Field(min_length=1)
    text: str = Field(min_length=1)
    expect: Literal["retrieve", "silent"]
    gold: list[str] = []
    acceptable: list[str] = []


class Conversation(Item):
    id: str = Field(min_length=1)
    source: str = "default"
    pages: list[Page]
    turns: list[Turn] = Field(min_length=1)


@dataclass
class Fixtures(SuiteFixtures):
    """The push suite's items: conversations."""

    conversations: list[Conversation] = field(default_factory=list)


def load(fx: Fixtures, files: list[FixtureFile]) -> None:
    fx.conversations += load_documents(fx, files, Conversation, "conversation")


def validate(fx: Fixtures, include_holdout: bool) -> None:
    unique(fx.origins, "conversation")
    unique(((f"{c.id}.{t.id}", fx.label(c.id)) for c in fx.conversations for t in c.turns),
            "push item (conversation.turn)")
    for conv in fx.conversations:
        where = f"{fx.label(conv.id)}: conversation {conv.id}"
        unique(((p.slug, where) for p in conv.pages), "page")
        unique(((t.id, where) for t in conv.turns), "turn")
        pages = {p.slug: p for p in conv.pages}
        earlier: list[str] = []
        for turn in conv.turns:
            for slug in (*turn.gold, *turn.acceptable):
                if slug not in pages:
                    raise GateError(f"{where}: turn {turn.id}: gold/acceptable id {slug!r} "
                                    "does not exist")
            if (turn.expect == "retrieve") != bool(turn.gold):
                raise GateError(f"{where}: turn {turn.id}: expect 'retrieve' needs gold ids and "
                                "'silent' needs none")
            referenced = [pages[s] for s in (*turn.gold, *turn.acceptable)]
            if include_holdout or not (conv.holdout or turn.holdout
                                       or any(p.holdout for p in referenced)):
                fx.digests[f"{conv.id}.{turn.id}"] = digest({
                    "source": conv.source,
                    "turn": turn.model_dump(),
                    "context": earlier,
                    "pages": [p.model_dump() for p in referenced],
                })
            earlier = [*earlier, turn.text]
    # Composite keys are unique across files too: "a" + "b/c" and "a/b" + "c" are one key.
    unique(((f"{c.id}/{p.slug}", fx.label(c.id)) for c in fx.conversations for p in c.pages),
            "push corpus item (conversation/slug)")
    if not include_holdout:
        fx.conversations = [
            c.model_copy(update={"pages": [p for p in c.pages if not p.holdout]})
            for c in fx.conversations
        ]
    fx.corpus = {f"{c.id}/{p.slug}": digest({"source": c.source, "page": p.model_dump()})
                 for c in fx.conversations for p in c.pages}

