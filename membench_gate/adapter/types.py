"""The data the suites exchange with a memory system, and its JSON form on the wire.

Every memory system runs in its own process and speaks JSON-RPC 2.0 over stdio (``docs/adapters.md``):
``[adapter] command = [...]`` for any language, or ``[adapter] python = "module:attr"`` served by the
built-in host (:mod:`membench_gate.host`). A Python adapter is a plain object with these methods and
never sees JSON:

- ``reset()`` — empty the store;
- ``ingest(records)`` — store a sequence of :class:`Record`;
- ``search(query) -> Answer`` — ranked hits for a :class:`Query`, best first, and whether it abstains;
- ``push(query) -> list[str]`` (optional) — ids to inject proactively for a conversation turn, or
  a mapping ``{"ids": [...], "text": "..."}`` that also says the text it injects;
- ``write(session)`` (optional) — turn a conversation :class:`Session` into memories of its own;
- ``close()`` (optional) — release what it holds; the host calls it once, at shutdown.

This module holds only plain data and its wire codec (no numpy, no I/O), so both sides of the
boundary — the gate's client (:mod:`membench_gate.adapter.rpc`) and the host — import it cheaply.
"""

from __future__ import annotations

import gc
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from functools import lru_cache
from typing import Any, Protocol, runtime_checkable

PROTOCOL_VERSION = 1


@dataclass(frozen=True)
class Record:
    """One thing the memory is asked to store."""

    id: str
    text: str
    source: str = "default"
    files: tuple[str, ...] = ()
    created_at: datetime | None = None
    reviewed_at: datetime | None = None
    relevance: float | None = None
    entity: str | None = None
    aliases: tuple[str, ...] = ()
    meta: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Query:
    """A question to the memory. ``context`` holds the earlier turns of a conversation."""

    text: str
    k: int
    source: str = "default"
    files: tuple[str, ...] = ()
    as_of: datetime | None = None
    context: tuple[str, ...] = ()
    # The same earlier turns with who said them and when (additive, protocol 1): assistant
    # turns are context too, and a memory may segment a conversation by time.
    context_turns: tuple[ContextTurn, ...] = ()


@dataclass(frozen=True)
class ContextTurn:
    """An earlier turn of a conversation, as ``Query.context_turns`` carries it."""

    role: str
    text: str
    at: datetime | None = None


@dataclass(frozen=True)
class Hit:
    """A ranked result: the id of a stored memory and the system's score for it.

    ``text``, ``entity`` and ``provenance`` (``{"source", "session", "turn"}``) are optional; the
    writeback suite reads them to judge what the memory wrote.
    """

    id: str
    score: float
    text: str | None = None
    entity: str | None = None
    provenance: Mapping[str, Any] | None = None


@dataclass(frozen=True)
class Answer:
    """Ranked hits, best first, and whether the system abstains.

    The hits are returned even when ``abstain`` is true: they are what retrieval alone would have
    answered, and the floor-off control reads them.
    """

    hits: list[Hit]
    abstain: bool = False


@dataclass(frozen=True)
class Turn:
    """One utterance of a conversation."""

    id: str
    speaker: str
    text: str
    role: str = "user"  # "user" or "assistant" (additive, protocol 1)
    at: datetime | None = None  # when it was said (additive; BrainBench sessions carry it)


@dataclass(frozen=True)
class Session:
    """A conversation handed to the memory's own write path."""

    id: str
    source: str
    turns: tuple[Turn, ...] = ()


@runtime_checkable
class MemoryAdapter(Protocol):
    """What a Python memory system implements. ``push(query) -> list[str]``,
    ``write(session) -> None`` and ``close() -> None`` are optional, so not part of the protocol
    an ``isinstance`` check reads: the host calls each only when the object has it."""

    def reset(self) -> None: ...

    def ingest(self, records: Sequence[Record]) -> None: ...

    def search(self, query: Query) -> Answer: ...


@dataclass(frozen=True)
class Pushed:
    """A push answer: the ids injected for a turn and, when the memory says it, the text it
    injects (``None``: the suites take the injected records' texts)."""

    ids: list[str]
    text: str | None = None


def default_push(answer: Answer, k: int) -> list[str]:
    """The documented default for adapters without ``push``: search hits unless it abstains."""
    if answer.abstain:
        return []
    return [hit.id for hit in answer.hits[:k]]


# --- the wire form (docs/adapters.md: every key always present, absent values null, times ISO 8601 UTC) ---

class collector_paused:  # a function to its callers: ``with collector_paused():``
    """No garbage collection while a batch is built or read: a batch is some hundred thousand
    new objects, none of them garbage, and the collector, triggered every 700 of them, would walk
    the batch again and again (decoding 100,000 records took 2.4 times as long). Collected
    afterwards as usual; a collector already off stays off. A class, not a generator: the host
    enters it for every request, and this costs a fifth as much (0.5 µs)."""

    __slots__ = ("_was",)

    def __enter__(self) -> None:
        self._was = gc.isenabled()
        gc.disable()

    def __exit__(self, *exc: object) -> None:
        if self._was:
            gc.enable()


def time_to_wire(value: datetime | None) -> str | None:
    """``2026-06-01T00:00:00Z``; a naive time is taken as UTC."""
    return None if value is None else _time_text(value)


@lru_cache(maxsize=65536)
def _time_text(value: datetime) -> str:
    """Corpora repeat their timestamps: each distinct one is formatted once (``isoformat`` was
    a third of encoding a record). Equal keys give equal text: aware times equal in UTC are one
    instant, and a naive time never equals an aware one."""
    if value.tzinfo is None:
        value = value.replace(tzinfo=timezone.utc)
    return value.astimezone(timezone.utc).isoformat().replace("+00:00", "Z")


def time_from_wire(value: Any, where: str) -> datetime | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise ValueError(f"{where} must be an ISO 8601 string or null")
    return _parse_time(value)


@lru_cache(maxsize=65536)
def _parse_time(value: str) -> datetime:
    """Corpora repeat their timestamps: each distinct one is parsed once."""
    text = value[:-1] + "+00:00" if value.endswith(("Z", "z")) else value
    parsed = datetime.fromisoformat(text)
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=timezone.utc)


def record_for_encoder(record: Record) -> Mapping[str, Any]:
    """What the gate's encoder (:func:`membench_gate.adapter.rpc.dumps`) writes for a record —
    the same JSON as :func:`record_to_wire`, without building it: the record's own attributes
    when its times are UTC or unset (the encoder writes a UTC time, its tuples and ``None``
    exactly as the wire has them), else the wire's dict."""
    created, reviewed = record.created_at, record.reviewed_at
    if (created is None or created.tzinfo is timezone.utc) and \
            (reviewed is None or reviewed.tzinfo is timezone.utc) and type(record.meta) is dict:
        return record.__dict__
    return record_to_wire(record)


def finite_record(record: Record) -> bool:
    """Whether ``record`` holds only values JSON can carry as they are: strings where the
    record has strings, tuples of strings for its files and aliases, a relevance that is
    ``None``, an integer or a finite float, and nothing in its meta but strings, numbers that
    are finite, booleans, ``None``, lists and string-keyed dicts of them, at most
    :data:`_FINITE_DEPTH` deep. Asked only of a batch whose fast encoding holds the word
    ``NaN`` or ``Infinity`` (:func:`membench_gate.adapter.rpc.dumps`); ``False`` means only *not
    known*: the standard encoder then writes the batch, and refuses a NaN in its own words."""
    relevance, entity = record.relevance, record.entity
    return (type(record.id) is str and type(record.text) is str and type(record.source) is str
            and (entity is None or type(entity) is str)
            and _strings_only(record.files) and _strings_only(record.aliases)
            and (relevance is None or type(relevance) is int
                 or (type(relevance) is float and relevance - relevance == 0))
            and _finite(record.meta, _FINITE_DEPTH))


_FINITE_DEPTH = 32  # deeper (or a meta that holds itself): not known, the output is searched


def _strings_only(value: Any) -> bool:
    return (type(value) is tuple or type(value) is list) and all(
        type(item) is str for item in value)


def _finite(value: Any, depth: int) -> bool:
    kind = type(value)
    if kind is str or value is None or kind is bool or kind is int:
        return True
    if kind is float:
        return value - value == 0  # NaN and the infinities give NaN
    if depth <= 0:
        return False
    if kind is dict:
        return all(type(key) is str for key in value) and all(
            _finite(item, depth - 1) for item in value.values())
    if kind is list or kind is tuple:
        return all(_finite(item, depth - 1) for item in value)
    return False


def record_to_wire(record: Record) -> dict[str, Any]:
    created, reviewed, meta = record.created_at, record.reviewed_at, record.meta
    return {
        "id": record.id, "text": record.text, "source": record.source, "files": list(record.files),
        "created_at": None if created is None else _time_text(created),
        "reviewed_at": None if reviewed is None else _time_text(reviewed),
        "relevance": record.relevance, "entity": record.entity, "aliases": list(record.aliases),
        "meta": dict(meta) if meta else {},
    }


def query_to_wire(query: Query) -> dict[str, Any]:
    return {
        "text": query.text, "k": query.k, "source": query.source, "files": list(query.files),
        "as_of": time_to_wire(query.as_of), "context": list(query.context),
        "context_turns": [{"role": t.role, "text": t.text, "at": time_to_wire(t.at)}
                          for t in query.context_turns],
    }


def session_to_wire(session: Session) -> dict[str, Any]:
    return {
        "id": session.id, "source": session.source,
        "turns": [{"id": t.id, "speaker": t.speaker, "text": t.text, "role": t.role,
                   "at": time_to_wire(t.at)} for t in session.turns],
    }


def _strings(value: Any, where: str) -> tuple[str, ...]:
    if type(value) is list and all(map(str.__instancecheck__, value)):
        return tuple(value)
    raise ValueError(f"{where} must be a list of strings")


_new, _set = object.__new__, object.__setattr__


_NEW_DICT: Any = object()  # new_record's meta when none is given: a dict of its own


def new_record(id: str, text: str, source: str = "default", files: tuple[str, ...] = (),
               created_at: datetime | None = None, reviewed_at: datetime | None = None,
               relevance: float | None = None, entity: str | None = None,
               aliases: tuple[str, ...] = (), meta: Mapping[str, Any] = _NEW_DICT) -> Record:
    """``Record(...)`` for a suite that builds one per corpus item (a hundred thousand turns):
    the same object, field for field, its attributes set in one step instead of the frozen
    dataclass's ten ``object.__setattr__`` calls (0.6 µs instead of 1.5 µs)."""
    record = _new(Record)
    _set(record, "__dict__", {
        "id": id, "text": text, "source": source, "files": files, "created_at": created_at,
        "reviewed_at": reviewed_at, "relevance": relevance, "entity": entity,
        "aliases": aliases, "meta": {} if meta is _NEW_DICT else meta,
    })
    return record


def record_from_wire(data: Mapping[str, Any]) -> Record:
    """The record a wire object describes (the host's general path: the gate's own ingest
    batches are read straight into records), built by :func:`new_record`; its fields are read
    in order, so the first that is wrong is the one a ``ValueError`` names."""
    get = data.get
    relevance, created, reviewed = get("relevance"), get("created_at"), get("reviewed_at")
    files, aliases = get("files"), get("aliases")
    return new_record(
        data["id"], data["text"], get("source") or "default",
        _strings(files, "files") if files else (),
        None if created is None else
        _parse_time(created) if type(created) is str else time_from_wire(created, "created_at"),
        None if reviewed is None else
        _parse_time(reviewed) if type(reviewed) is str else time_from_wire(reviewed, "reviewed_at"),
        None if relevance is None else float(relevance),
        get("entity"), _strings(aliases, "aliases") if aliases else (), get("meta") or {})


def query_from_wire(data: Mapping[str, Any]) -> Query:
    return Query(
        text=data["text"], k=int(data["k"]), source=data.get("source") or "default",
        files=_strings(data.get("files") or [], "files"),
        as_of=time_from_wire(data.get("as_of"), "as_of"),
        context=_strings(data.get("context") or [], "context"),
        context_turns=tuple(_context_turn(t) for t in data.get("context_turns") or []),
    )


def _context_turn(data: Any) -> ContextTurn:
    if not isinstance(data, Mapping) or type(data.get("text")) is not str:
        raise ValueError("context_turns must be a list of {role, text, at}")
    return ContextTurn(role=str(data.get("role") or "user"), text=data["text"],
                       at=time_from_wire(data.get("at"), "context_turns.at"))


def _turn(data: Mapping[str, Any]) -> Turn:
    return Turn(data["id"], data["speaker"], data["text"], data.get("role") or "user",
                time_from_wire(data.get("at"), "turns.at"))


def session_from_wire(data: Mapping[str, Any]) -> Session:
    return Session(
        id=data["id"], source=data.get("source") or "default",
        turns=tuple(_turn(t) for t in data.get("turns") or []),
    )


def hit_to_wire(hit: Any) -> dict[str, Any]:
    """A hit as the host sends it: ``id`` and ``score`` always, the optional fields when set.

    Accepts anything shaped like a :class:`Hit` (numpy scores included); raises ``ValueError``
    with what is wrong, which the host sends back as an error response.
    """
    hit_id = getattr(hit, "id", None)
    score = getattr(hit, "score", None)
    if not isinstance(hit_id, str):
        raise ValueError(f"a hit is not Hit(id: str, score: float): {hit!r:.200}")
    try:
        number = float(score)  # numpy scalars are what embedding stores return
    except (TypeError, ValueError):
        raise ValueError(f"hit {hit_id!r} has a score that is not a number: {score!r:.100}") from None
    if isinstance(score, (bool, str)) or not math.isfinite(number):
        raise ValueError(f"hit {hit_id!r} has a non-finite or non-numeric score: {score!r:.100}")
    wire: dict[str, Any] = {"id": hit_id, "score": number}
    for name in ("text", "entity", "provenance"):
        value = getattr(hit, name, None)
        if value is not None:
            wire[name] = dict(value) if name == "provenance" else value
    return wire


def answer_to_wire(answer: Any) -> dict[str, Any]:
    hits = getattr(answer, "hits", None)
    abstain = getattr(answer, "abstain", None)
    if type(abstain).__module__ == "numpy" and type(abstain).__name__ in ("bool", "bool_"):
        abstain = bool(abstain)  # numpy's bool, without importing numpy
    if not isinstance(hits, (list, tuple)) or not isinstance(abstain, bool):
        raise ValueError(f"did not return an Answer(hits=[...], abstain=bool): {answer!r:.200}")
    return {"hits": [hit_to_wire(hit) for hit in hits], "abstain": abstain}
