"""The recall suite's fixtures: ``corpus.json`` (turns or chunks of a conversation history, grouped
by session) and ``queries.json`` (questions whose gold names items or whole sessions)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from pydantic import Field, field_validator

from membench_gate.errors import GateError
from membench_gate.model.measurement import digest
from membench_gate.suites.common.fixtures import (
    Item,
    SuiteFixtures,
    dump,
    iso_date,
    item_digest,
    load_array,
    unique,
)
from membench_gate.suites.common.folders import FixtureFile

_CATEGORY = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")


class CorpusItem(Item):
    """recall: one turn or chunk of a conversation history; ``session`` groups them."""

    id: str = Field(min_length=1)
    text: str = Field(min_length=1)
    session: str = Field(min_length=1)
    source: str = "default"
    created_at: str | None = None

    _date = field_validator("created_at")(iso_date)


class RecallQuery(Item):
    """recall: a question; each gold id names a corpus item or a whole session ([] = unanswerable)."""

    id: str = Field(min_length=1)
    question: str = Field(min_length=1)
    gold: list[str]
    category: str | None = None
    as_of: str | None = None
    haystack: list[str] | None = Field(default=None, min_length=1)

    _date = field_validator("as_of")(iso_date)

    @field_validator("category")
    @classmethod
    def _category(cls, value: str | None) -> str | None:
        if value is not None and not _CATEGORY.match(value):
            raise ValueError(f"category {value!r} must be letters, digits, '_', '.' or '-' "
                             "(it names the cell recall/<category>)")
        return value


@dataclass
class Fixtures(SuiteFixtures):
    """The recall suite's items: the history (turns / chunks) and the queries."""

    history: list[CorpusItem] = field(default_factory=list)
    queries: list[RecallQuery] = field(default_factory=list)


def load(fx: Fixtures, files: list[FixtureFile]) -> None:
    corpus_file, queries_file = files
    fx.history += load_array(fx, corpus_file, CorpusItem)
    fx.queries += load_array(fx, queries_file, RecallQuery)


def validate(fx: Fixtures, include_holdout: bool) -> None:
    unique(fx.origins, "recall item")
    sessions: dict[str, list[CorpusItem]] = {}
    for item in fx.history:
        sessions.setdefault(item.session, []).append(item)
    items = {c.id: c for c in fx.history}
    for name in sessions:
        if name in items:
            raise GateError(f"{fx.label(name)}: session {name!r} is also a corpus item id "
                            "(a gold id must name one or the other)")
    for query in fx.queries:
        def fail(message: str, query: RecallQuery = query) -> GateError:
            # The file is looked up only for the message: a corpus can hold 100,000s of items.
            return GateError(f"{fx.label(query.id)}: query {query.id}: {message}")

        gold_items: list[CorpusItem] = []
        for ident in query.gold:
            if ident in items:
                gold_items.append(items[ident])
            elif ident in sessions:
                gold_items += sessions[ident]
            else:
                raise fail(f"gold id {ident!r} is neither a corpus item nor a session")
        if len(set(query.gold)) != len(query.gold):
            raise fail("gold lists an id twice")
        foreign = next((g for g in gold_items if g.source != "default"), None)
        if foreign is not None:
            # Queries search the default source: gold elsewhere could never be found.
            raise fail(f"gold item {foreign.id!r} is in source {foreign.source!r}; queries search "
                       "source 'default' (other sources are distractors only)")
        if query.haystack is not None:
            for name in query.haystack:
                if name not in sessions:
                    raise fail(f"haystack session {name!r} does not exist")
            outside = sorted({g.session for g in gold_items} - set(query.haystack))
            if outside:
                raise fail(f"gold session {outside[0]!r} is not in its haystack")
        if include_holdout or not (query.holdout or any(g.holdout for g in gold_items)):
            fx.digests[query.id] = digest({
                "query": dump(query),
                "gold": [dump(g) for g in gold_items],
            })
    if not include_holdout:
        fx.history = [c for c in fx.history if not c.holdout]
    fx.corpus = {c.id: item_digest(c) for c in fx.history}

