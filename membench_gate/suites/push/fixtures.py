"""The push suite's fixtures: ``conversations/*.json``, each with its pages (the corpus) and its
turns — user turns that should retrieve, stay silent or are context only, and assistant turns
(context only)."""

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
    load_documents,
    unique,
)
from membench_gate.suites.common.folders import FixtureFile
from membench_gate.suites.common.pages import Page, page_ids

CELLS = ("know_to_ask", "push")  # the push cells a conversation may be scored in


class Turn(Item):
    id: str = Field(min_length=1)
    role: Literal["user", "assistant"] = "user"
    at: str | None = None  # ISO 8601 UTC
    text: str = Field(min_length=1)
    # None: a user turn that is pushed (it shapes what the memory suppresses) and not scored.
    expect: Literal["retrieve", "silent"] | None = None
    gold: list[str] = []
    acceptable: list[str] = []

    _at = field_validator("at")(iso_date)


class Conversation(Item):
    id: str = Field(min_length=1)
    source: str = "default"
    category: str | None = None  # carried into each item's record (the report groups by it)
    suites: list[Literal["know_to_ask", "push"]] = Field(default=list(CELLS), min_length=1)
    pages: list[Page]
    turns: list[Turn] = Field(min_length=1)


@dataclass
class Fixtures(SuiteFixtures):
    """The push suite's items: conversations (only the included ones: a held-out conversation
    is left out of a run that excludes holdout, so the adapter never sees it)."""

    conversations: list[Conversation] = field(default_factory=list)
    # conversation id -> (slug, source) -> record id, from every page the files seed (held-out
    # ones too), so a record keeps its id whether or not the run includes holdout.
    ids: dict[str, dict[tuple[str, str], str]] = field(default_factory=dict)


def record_ids(conv: Conversation, where: str) -> dict[tuple[str, str], str]:
    """Each page's record id, by (slug, source): the slug when the conversation seeds the slug
    in one source, ``<slug>@<source>`` for each copy of a slug seeded in several (a twin); the
    rule of every suite that seeds pages (:mod:`membench_gate.suites.common.pages`)."""
    return page_ids(conv.pages, where)


def turn_item(conv: Conversation, turn: Turn) -> str:
    """A turn's item id in ``push/know_to_ask`` (and a stay-silent turn's record in ``push/push``)."""
    return f"{conv.id}.{turn.id}"


def slug_item(conv: Conversation, turn: Turn, slug: str) -> str:
    """A gold slug's item id in ``push/push``."""
    return f"{conv.id}.{turn.id}#{slug}"


def items_of_turn(conv: Conversation, turn: Turn) -> list[str]:
    """The item ids a scored user turn gives, in the cells its conversation is in."""
    items = []
    if "know_to_ask" in conv.suites or ("push" in conv.suites and turn.expect == "silent"):
        items.append(turn_item(conv, turn))
    if "push" in conv.suites and turn.expect == "retrieve":
        items += [slug_item(conv, turn, slug) for slug in turn.gold]
    return items


def load(fx: Fixtures, files: list[FixtureFile]) -> None:
    fx.conversations += load_documents(fx, files, Conversation, "conversation")


def _check_turn(conv: Conversation, turn: Turn, seeded: set[str], where: str) -> None:
    if turn.role == "assistant" and (turn.expect or turn.gold or turn.acceptable):
        raise GateError(f"{where}: turn {turn.id}: an assistant turn is context only: it takes "
                        "no expect, gold or acceptable")
    if turn.expect is None and (turn.gold or turn.acceptable):
        raise GateError(f"{where}: turn {turn.id}: gold/acceptable ids need expect 'retrieve' "
                        "or 'silent'")
    if (turn.expect == "retrieve") != bool(turn.gold) and turn.expect is not None:
        raise GateError(f"{where}: turn {turn.id}: expect 'retrieve' needs gold ids and "
                        "'silent' needs none")
    unique(((slug, f"{where}: turn {turn.id}") for slug in turn.gold), "gold")
    for slug in turn.gold:
        # Acceptable slugs may name pages never seeded; gold must be the conversation's own.
        if slug not in seeded:
            raise GateError(f"{where}: turn {turn.id}: gold id {slug!r} is not a page of the "
                            f"conversation's source {conv.source!r}")


def validate(fx: Fixtures, include_holdout: bool) -> None:
    unique(fx.origins, "conversation")
    # Every item id (and every turn's) once across all files: "a" + "b.c" and "a.b" + "c" are
    # one key, and so are a turn "b#c" and the gold slug "c" of a turn "b".
    unique(((key, fx.label(c.id)) for c in fx.conversations for t in c.turns
            for key in dict.fromkeys((turn_item(c, t), *items_of_turn(c, t)))),
           "push item (conversation.turn or conversation.turn#slug)")
    for conv in fx.conversations:
        where = f"{fx.label(conv.id)}: conversation {conv.id}"
        unique(((t.id, where) for t in conv.turns), "turn")
        unique(((s, where) for s in conv.suites), "suites entry")
        ids = fx.ids[conv.id] = record_ids(conv, where)
        # A literal slug "x@work" and the copy of twin "x" in "work" would be one record.
        unique(((i, where) for i in ids.values()), "page record")
        seeded = {p.slug for p in conv.pages if p.source == conv.source}
        earlier: list[dict[str, str | None]] = []
        for turn in conv.turns:
            _check_turn(conv, turn, seeded, where)
            # The pages the turn's judgement names: its gold (the conversation's own copies)
            # and every seeded copy of an acceptable slug.
            referenced = [p for p in conv.pages if p.slug in turn.acceptable
                          or (p.slug in turn.gold and p.source == conv.source)]
            if turn.expect is not None and (include_holdout or not (
                    conv.holdout or turn.holdout or any(p.holdout for p in referenced))):
                content = digest({
                    "source": conv.source,
                    "turn": turn.model_dump(),
                    "context": earlier,
                    "pages": [p.model_dump() for p in referenced],
                })
                for item in items_of_turn(conv, turn):
                    fx.digests[item] = content
            earlier = [*earlier, {"role": turn.role, "text": turn.text, "at": turn.at}]
    unique(((f"{c.id}/{i}", fx.label(c.id)) for c in fx.conversations
            for i in fx.ids[c.id].values()), "push corpus item (conversation/record)")
    if not include_holdout:
        fx.conversations = [
            c.model_copy(update={"pages": [p for p in c.pages if not p.holdout]})
            for c in fx.conversations if not c.holdout
        ]
    fx.corpus = {f"{c.id}/{fx.ids[c.id][p.slug, p.source]}":
                 digest({"source": c.source, "page": p.model_dump()})
                 for c in fx.conversations for p in c.pages}
