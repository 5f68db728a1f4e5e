"""Fixtures: load, validate, hash, and split off the holdout.

A suite's fixtures come from one or more folders (``"builtin"`` or a folder relative to
``membench.toml``); their items are merged. Every file is validated against the suite's schema and
every gold reference is checked, so a typo in a fixture is an error naming the file and the item,
never a silently lower score.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from membench_gate.errors import GateError
from membench_gate.model.measurement import digest
from membench_gate.model.results import validation_message
from membench_gate.suites.common.folders import FixtureFile, suite_files


def parse_time(value: str, where: str) -> datetime:
    """ISO date or datetime → aware UTC datetime (naive values are taken as UTC)."""
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError as exc:
        raise ValueError(f"{where}: {value!r} is not an ISO date (YYYY-MM-DD)") from exc
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=timezone.utc)
    try:
        # 0001-01-01T00:00:00+14:00 is a valid ISO text whose UTC time is before year 1.
        return parsed.astimezone(timezone.utc)
    except OverflowError as exc:
        raise ValueError(f"{where}: {value!r} is out of the range of dates (years 1-9999 "
                         "in UTC)") from exc


class _Item(BaseModel):
    # strict: "holdout": "yes" or "k": "5" in a fixture is an error, not a silent conversion.
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, defer_build=True)
    holdout: bool = False


def _iso(value: str | None) -> str | None:
    if value is not None:
        parse_time(value, "date")
    return value


class Rejected(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, defer_build=True)
    option: str = Field(min_length=1)
    reason: str = Field(min_length=1)


class Decision(_Item):
    id: str = Field(min_length=1)
    decision: str = Field(min_length=1)
    rationale: str = ""
    rejected: list[Rejected] = []
    files: list[str] = []
    created_at: str | None = None
    reviewed_at: str | None = None
    relevance: float | None = Field(default=None, ge=0, le=1)
    # Lifecycle (docs/suites.md): a superseded decision names the one that replaced it.
    status: Literal["active", "superseded"] = "active"
    superseded_by: str | None = Field(default=None, min_length=1)

    _dates = field_validator("created_at", "reviewed_at")(_iso)


LIFECYCLE_TRAPS = ("stale-named", "stale-unnamed")


class Scenario(_Item):
    id: str = Field(min_length=1)
    task: str = Field(min_length=1)
    files: list[str] = []
    veto_decision_id: str = Field(min_length=1)
    trap: Literal["direct", "implicit", "stale-named", "stale-unnamed"]
    rejected_option: str = Field(min_length=1)

    @property
    def lifecycle(self) -> bool:
        """A stale-* trap: scored in ``veto/lifecycle`` only."""
        return self.trap in LIFECYCLE_TRAPS


class ScenarioFile(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, defer_build=True)
    as_of: str
    scenarios: list[dict[str, Any]]

    _date = field_validator("as_of")(_iso)


class Fact(_Item):
    id: str = Field(min_length=1)
    text: str = Field(min_length=1)


class Probe(_Item):
    id: str = Field(min_length=1)
    question: str = Field(min_length=1)
    gold_fact_id: str | None


class Page(_Item):
    slug: str = Field(min_length=1)
    text: str = Field(min_length=1)
    aliases: list[str] = []
    source: str = "default"


class Turn(_Item):
    id: str = Field(min_length=1)
    text: str = Field(min_length=1)
    expect: Literal["retrieve", "silent"]
    gold: list[str] = []
    acceptable: list[str] = []


class Conversation(_Item):
    id: str = Field(min_length=1)
    source: str = "default"
    pages: list[Page]
    turns: list[Turn] = Field(min_length=1)


class SpokenTurn(_Item):
    """A turn of a writeback session (who said what)."""

    id: str = Field(min_length=1)
    speaker: str = Field(min_length=1)
    text: str = Field(min_length=1)


def keyword_in(keyword: str, text: str) -> bool:
    """Whether ``text`` contains ``keyword``, ignoring case (and how whitespace is spaced):
    "May 12" is in "launch on may  12.", and "launch" in "launched"."""
    return _folded(keyword) in _folded(text)


@functools.lru_cache(maxsize=4096)  # a text is asked about many keywords
def _folded(value: str) -> str:
    return " ".join(value.casefold().split())


def _keywords(value: list[str]) -> list[str]:
    if any(not any(ch.isalnum() for ch in k) for k in value):
        raise ValueError("a keyword has no letters or digits")
    if len({k.casefold() for k in value}) != len(value):
        raise ValueError("a keyword is repeated")
    return value


class GoldFact(_Item):
    """What the write path should keep from a turn: keywords its text holds, about an entity."""

    id: str = Field(min_length=1)
    keywords: list[str] = Field(min_length=1)
    entity: str = Field(min_length=1)
    turn: str = Field(min_length=1)

    _kw = field_validator("keywords")(_keywords)


class NonFact(_Item):
    """A claim said in a turn that must not become a memory (hypothetical, quoted, retracted)."""

    id: str = Field(min_length=1)
    keywords: list[str] = Field(min_length=1)
    turn: str = Field(min_length=1)
    kind: Literal["hypothetical", "quoted", "retracted"]

    _kw = field_validator("keywords")(_keywords)


class SessionProbe(_Item):
    """A question of a later session, answered when a hit's text holds every keyword."""

    id: str = Field(min_length=1)
    question: str = Field(min_length=1)
    keywords: list[str] = Field(min_length=1)

    _kw = field_validator("keywords")(_keywords)


class WritebackSession(_Item):
    id: str = Field(min_length=1)
    source: str = "default"
    turns: list[SpokenTurn] = Field(min_length=1)
    gold_facts: list[GoldFact]
    probes: list[SessionProbe] = []
    non_facts: list[NonFact] = []
_CATEGORY = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")


class CorpusItem(_Item):
    """recall: one turn or chunk of a conversation history; ``session`` groups them."""

    id: str = Field(min_length=1)
    text: str = Field(min_length=1)
    session: str = Field(min_length=1)
    source: str = "default"
    created_at: str | None = None

    _date = field_validator("created_at")(_iso)


class RecallQuery(_Item):
    """recall: a question; each gold id names a corpus item or a whole session ([] = unanswerable)."""

    id: str = Field(min_length=1)
    question: str = Field(min_length=1)
    gold: list[str]
    category: str | None = None
    as_of: str | None = None
    haystack: list[str] | None = Field(default=None, min_length=1)

    _date = field_validator("as_of")(_iso)

    @field_validator("category")
    @classmethod
    def _category(cls, value: str | None) -> str | None:
        if value is not None and not _CATEGORY.match(value):
            raise ValueError(f"category {value!r} must be letters, digits, '_', '.' or '-' "
                             "(it names the cell recall/<category>)")
        return value


@dataclass
class SuiteFixtures:
    """Everything a suite reads: validated items, the files they came from, item digests."""

    suite: str
    files: list[FixtureFile]
    decisions: list[Decision] = field(default_factory=list)
    scenarios: list[tuple[Scenario, datetime]] = field(default_factory=list)
    facts: list[Fact] = field(default_factory=list)
    probes: list[Probe] = field(default_factory=list)
    conversations: list[Conversation] = field(default_factory=list)
    sessions: list[WritebackSession] = field(default_factory=list)
    history: list[CorpusItem] = field(default_factory=list)  # recall: turns / chunks
    queries: list[RecallQuery] = field(default_factory=list)
    digests: dict[str, str] = field(default_factory=dict)  # included gold item id -> digest
    # Every other included corpus item (decisions, facts, pages) -> digest: removing or editing
    # distractors changes what a memory is measured on as surely as editing gold does.
    corpus: dict[str, str] = field(default_factory=dict)
    origins: list[tuple[str, str]] = field(default_factory=list)  # (item id, file), load order

    def label(self, ident: str) -> str:
        """The file an item came from, for error messages."""
        return next((label for i, label in self.origins if i == ident), f"fixtures/{self.suite}")


def _items(model: type[BaseModel], raw: Any, label: str, key: str = "id") -> list[Any]:
    if not isinstance(raw, list):
        raise GateError(f"{label}: expected a JSON array of items")
    items = []
    for index, obj in enumerate(raw):
        ident = obj.get(key) if isinstance(obj, dict) else None
        where = f"{label}: item {index}" + (f" ({ident})" if isinstance(ident, str) else "")
        if not isinstance(obj, dict):
            raise GateError(f"{where}: expected a JSON object")
        try:
            items.append(model.model_validate(obj))
        except ValidationError as exc:
            raise GateError(validation_message(where, exc)) from exc
        except ValueError as exc:
            raise GateError(f"{where}: {exc}") from exc
    return items


def _unique(ids: Iterable[tuple[str, str]], what: str) -> None:
    seen: dict[str, str] = {}
    for ident, label in ids:
        if ident in seen:
            raise GateError(f"{label}: duplicate {what} id {ident!r} (also in {seen[ident]})")
        seen[ident] = label


def load_suite(suite: str, entries: list[str], base_dir: Path, include_holdout: bool) -> SuiteFixtures:
    """Load, merge and validate a suite's fixture folders; compute digests of included items."""
    loader = {"veto": _load_veto, "abstention": _load_abstention, "push": _load_push,
              "writeback": _load_writeback, "recall": _load_recall}[suite]
    fixtures = SuiteFixtures(suite=suite, files=[])
    for files in suite_files(suite, entries, base_dir):
        fixtures.files += files
        loader(fixtures, files)
    _VALIDATE[suite](fixtures, include_holdout)
    if not fixtures.digests:
        raise GateError(
            f"suite {suite}: no gold items to score in {', '.join(entries)}"
            + ("" if include_holdout else " (holdout items are excluded)")
        )
    return fixtures


def _load_array(fx: SuiteFixtures, file: FixtureFile, model: type[BaseModel]) -> list[Any]:
    """The items of a file that is a JSON array of ``model`` items, in order."""
    items = _items(model, file.data, file.label)
    fx.origins += [(item.id, file.label) for item in items]
    return items


def _load_documents(fx: SuiteFixtures, files: list[FixtureFile], model: type[BaseModel],
                    what: str) -> list[Any]:
    """One ``model`` object per file (a conversation, a session)."""
    loaded = []
    for file in files:
        if not isinstance(file.data, dict):
            raise GateError(f"{file.label}: expected a JSON object (one {what})")
        try:
            document = model.model_validate(file.data)
        except ValidationError as exc:
            raise GateError(validation_message(file.label, exc)) from exc
        loaded.append(document)
        fx.origins.append((document.id, file.label))
    return loaded


def _load_veto(fx: SuiteFixtures, files: list[FixtureFile]) -> None:
    decisions_file, scenarios_file = files
    decisions = _load_array(fx, decisions_file, Decision)
    slabel = scenarios_file.label
    try:
        head = ScenarioFile.model_validate(scenarios_file.data)
    except ValidationError as exc:
        raise GateError(validation_message(slabel, exc)) from exc
    except ValueError as exc:
        raise GateError(f"{slabel}: as_of: {exc}") from exc
    as_of = parse_time(head.as_of, "as_of")
    scenarios = [(s, as_of) for s in _items(Scenario, head.scenarios, slabel)]
    fx.decisions += decisions
    fx.scenarios += scenarios
    fx.origins += [(s.id, slabel) for s, _ in scenarios]


def _load_abstention(fx: SuiteFixtures, files: list[FixtureFile]) -> None:
    facts_file, probes_file = files
    fx.facts += _load_array(fx, facts_file, Fact)
    fx.probes += _load_array(fx, probes_file, Probe)


def _load_push(fx: SuiteFixtures, files: list[FixtureFile]) -> None:
    fx.conversations += _load_documents(fx, files, Conversation, "conversation")


def _load_writeback(fx: SuiteFixtures, files: list[FixtureFile]) -> None:
    fx.sessions += _load_documents(fx, files, WritebackSession, "session")


def _load_recall(fx: SuiteFixtures, files: list[FixtureFile]) -> None:
    corpus_file, queries_file = files
    fx.history += _load_array(fx, corpus_file, CorpusItem)
    fx.queries += _load_array(fx, queries_file, RecallQuery)


def _label(fx: SuiteFixtures, ident: str) -> str:
    return fx.label(ident)


def _decision_payload(decision: Decision) -> dict[str, Any]:
    """A decision's digest payload; the lifecycle keys only when they say something, so a corpus
    without lifecycle keeps the digests it had before lifecycle existed."""
    payload = decision.model_dump()
    if decision.status == "active" and decision.superseded_by is None:
        del payload["status"], payload["superseded_by"]
    return payload


def predecessors(decisions: dict[str, Decision], current: str) -> list[str]:
    """Ids of the decisions ``current`` supersedes, directly or through a chain, nearest first."""
    replaced: dict[str, list[str]] = {}
    for d in decisions.values():
        if d.superseded_by is not None:
            replaced.setdefault(d.superseded_by, []).append(d.id)
    found: list[str] = []
    frontier = [current]
    while frontier:
        step = sorted(i for ident in frontier for i in replaced.get(ident, ()) if i not in found)
        found += step
        frontier = step
    return found


def _validate_lifecycle(fx: SuiteFixtures, decisions: dict[str, Decision]) -> None:
    for d in decisions.values():
        where = f"{_label(fx, d.id)}: decision {d.id}"
        if d.superseded_by is None:
            continue
        if d.status != "superseded":
            raise GateError(f"{where}: superseded_by is set but status is {d.status!r} "
                            "(expected 'superseded')")
        if d.superseded_by not in decisions:
            raise GateError(f"{where}: superseded_by {d.superseded_by!r} does not exist")
        seen, ident = {d.id}, d.superseded_by
        while ident is not None:
            if ident in seen:
                raise GateError(f"{where}: superseded_by forms a cycle through {ident!r}")
            seen.add(ident)
            ident = decisions[ident].superseded_by


def _validate_veto(fx: SuiteFixtures, include_holdout: bool) -> None:
    _unique(fx.origins, "veto item")
    decisions = {d.id: d for d in fx.decisions}
    _validate_lifecycle(fx, decisions)
    for scenario, as_of in fx.scenarios:
        where = f"{_label(fx, scenario.id)}: scenario {scenario.id}"
        decision = decisions.get(scenario.veto_decision_id)
        if decision is None:
            raise GateError(
                f"{where}: veto_decision_id {scenario.veto_decision_id!r} does not exist"
            )
        stale = predecessors(decisions, decision.id) if scenario.lifecycle else []
        if scenario.lifecycle:
            if decision.status != "active":
                raise GateError(f"{where}: a {scenario.trap} trap's veto_decision_id must be the "
                                f"current (active) decision; {decision.id} is superseded")
            if not stale:
                raise GateError(f"{where}: a {scenario.trap} trap needs a decision superseded by "
                                f"{decision.id}; none names it in superseded_by")
        # A lifecycle scenario may name a veto still standing from a superseded predecessor: the
        # current decision carries it forward.
        options = {r.option for d in (decision, *(decisions[i] for i in stale)) for r in d.rejected}
        if scenario.rejected_option not in options:
            raise GateError(
                f"{where}: rejected_option {scenario.rejected_option!r} is not rejected by "
                f"{decision.id}" + (" or the decisions it supersedes" if stale else "")
            )
        referenced = [decision, *(decisions[i] for i in stale)]
        if include_holdout or not (scenario.holdout or any(d.holdout for d in referenced)):
            payload: dict[str, Any] = {"scenario": scenario.model_dump(),
                                       "as_of": as_of.isoformat(),
                                       "decision": _decision_payload(decision)}
            if stale:
                payload["superseded"] = [_decision_payload(decisions[i]) for i in stale]
            fx.digests[scenario.id] = digest(payload)
    if not include_holdout:
        fx.decisions = [d for d in fx.decisions if not d.holdout]
    fx.corpus = {d.id: digest(d.model_dump()) for d in fx.decisions}


def _validate_abstention(fx: SuiteFixtures, include_holdout: bool) -> None:
    _unique(fx.origins, "abstention item")
    facts = {f.id: f for f in fx.facts}
    for probe in fx.probes:
        gold = facts.get(probe.gold_fact_id) if probe.gold_fact_id is not None else None
        if probe.gold_fact_id is not None and gold is None:
            raise GateError(
                f"{_label(fx, probe.id)}: probe {probe.id}: gold_fact_id "
                f"{probe.gold_fact_id!r} does not exist"
            )
        if include_holdout or not (probe.holdout or (gold is not None and gold.holdout)):
            fx.digests[probe.id] = digest(
                {"probe": probe.model_dump(), "gold": gold.model_dump() if gold else None}
            )
    if not include_holdout:
        fx.facts = [f for f in fx.facts if not f.holdout]
    fx.corpus = {f.id: digest(f.model_dump()) for f in fx.facts}


def _validate_push(fx: SuiteFixtures, include_holdout: bool) -> None:
    _unique(fx.origins, "conversation")
    _unique(((f"{c.id}.{t.id}", _label(fx, c.id)) for c in fx.conversations for t in c.turns),
            "push item (conversation.turn)")
    for conv in fx.conversations:
        where = f"{_label(fx, conv.id)}: conversation {conv.id}"
        _unique(((p.slug, where) for p in conv.pages), "page")
        _unique(((t.id, where) for t in conv.turns), "turn")
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
    _unique(((f"{c.id}/{p.slug}", _label(fx, c.id)) for c in fx.conversations for p in c.pages),
            "push corpus item (conversation/slug)")
    if not include_holdout:
        fx.conversations = [
            c.model_copy(update={"pages": [p for p in c.pages if not p.holdout]})
            for c in fx.conversations
        ]
    fx.corpus = {f"{c.id}/{p.slug}": digest({"source": c.source, "page": p.model_dump()})
                 for c in fx.conversations for p in c.pages}


def _validate_writeback(fx: SuiteFixtures, include_holdout: bool) -> None:
    """Turns exist, ids are unique, and a non-fact's keywords occur together in its own turn only
    (otherwise a memory that kept every other turn word for word would be charged for it)."""
    _unique(fx.origins, "session")
    for session in fx.sessions:
        where = f"{_label(fx, session.id)}: session {session.id}"
        _unique(((t.id, where) for t in session.turns), "turn")
        _unique(((i.id, where) for i in (*session.gold_facts, *session.non_facts,
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
    _unique(((f"{s.id}.{i.id}", _label(fx, s.id)) for s in fx.sessions
             for i in (*s.gold_facts, *s.non_facts, *s.probes)),
            "writeback item (session.item)")
    _unique(((f"{s.id}/{t.id}", _label(fx, s.id)) for s in fx.sessions for t in s.turns),
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


def _validate_recall(fx: SuiteFixtures, include_holdout: bool) -> None:
    _unique(fx.origins, "recall item")
    sessions: dict[str, list[CorpusItem]] = {}
    for item in fx.history:
        sessions.setdefault(item.session, []).append(item)
    items = {c.id: c for c in fx.history}
    for name in sessions:
        if name in items:
            raise GateError(f"{_label(fx, name)}: session {name!r} is also a corpus item id "
                            "(a gold id must name one or the other)")
    for query in fx.queries:
        def fail(message: str, query: RecallQuery = query) -> GateError:
            # The file is looked up only for the message: a corpus can hold 100,000s of items.
            return GateError(f"{_label(fx, query.id)}: query {query.id}: {message}")

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
                "query": query.model_dump(exclude_none=True),
                "gold": [g.model_dump(exclude_none=True) for g in gold_items],
            })
    if not include_holdout:
        fx.history = [c for c in fx.history if not c.holdout]
    fx.corpus = {c.id: digest(c.model_dump(exclude_none=True)) for c in fx.history}


_VALIDATE = {"veto": _validate_veto, "abstention": _validate_abstention, "push": _validate_push,
             "writeback": _validate_writeback, "recall": _validate_recall}
