"""Fixtures: load, validate, hash, and split off the holdout — what every suite's schema shares.

A suite's fixtures come from one or more folders (``"builtin"`` or a folder relative to
``membench.toml``); their items are merged. Every file is validated against the suite's schema
(the ``fixtures`` module of its package) and every gold reference is checked, so a typo in a
fixture is an error naming the file and the item, never a silently lower score.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, TypeAdapter, ValidationError

from membench_gate.errors import GateError
from membench_gate.model.measurement import digest, sorted_digest
from membench_gate.model.results import validation_message
from membench_gate.suites import get
from membench_gate.suites.common.folders import FixtureFile, ReadFolders, suite_files


def parse_time(value: str, where: str) -> datetime:
    """ISO date or datetime → aware UTC datetime (naive values are taken as UTC)."""
    parsed = _utc(value) if type(value) is str else _utc.__wrapped__(value)
    if isinstance(parsed, str):
        raise ValueError(f"{where}: {value!r} {parsed}")
    return parsed


@functools.lru_cache(maxsize=65536)
def _utc(value: str) -> datetime | str:
    """:func:`parse_time` of one text, or what is wrong with it. Corpora repeat their times (a
    LongMemEval session's turns share one), and every one is parsed as its file is validated
    and again as its record is built: each distinct text is parsed once (a datetime is
    immutable, so sharing one is safe)."""
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return "is not an ISO date or time (2026-06-01, 2026-06-01T09:30:00Z)"
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=timezone.utc)
    try:
        # 0001-01-01T00:00:00+14:00 is a valid ISO text whose UTC time is before year 1.
        return parsed.astimezone(timezone.utc)
    except OverflowError:
        return "is out of the range of dates (years 1-9999 in UTC)"


class Item(BaseModel):
    # strict: "holdout": "yes" or "k": "5" in a fixture is an error, not a silent conversion.
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, defer_build=True)
    holdout: bool = False


def iso_date(value: str | None) -> str | None:
    """A field validator: the date, checked to be an ISO date (kept as written)."""
    if value is not None:
        parse_time(value, "date")
    return value


def keyword_in(keyword: str, text: str) -> bool:
    """Whether ``text`` contains ``keyword``, ignoring case (and how whitespace is spaced):
    "May 12" is in "launch on may  12.", and "launch" in "launched"."""
    return _folded(keyword) in _folded(text)


@functools.lru_cache(maxsize=4096)  # a text is asked about many keywords


def _folded(value: str) -> str:
    return " ".join(value.casefold().split())


@dataclass
class SuiteFixtures:
    """Everything a suite reads: the files they came from, item digests, and (in each suite's
    ``Fixtures``) its validated items."""

    suite: str
    files: list[FixtureFile]
    digests: dict[str, str] = field(default_factory=dict)  # included gold item id -> digest
    # Every other included corpus item (decisions, facts, pages) -> digest: removing or editing
    # distractors changes what a memory is measured on as surely as editing gold does.
    corpus: dict[str, str] = field(default_factory=dict)
    origins: list[tuple[str, str]] = field(default_factory=list)  # (item id, file), load order

    def label(self, ident: str) -> str:
        """The file an item came from, for error messages."""
        return next((label for i, label in self.origins if i == ident), f"fixtures/{self.suite}")


def load_suite(suite: str, entries: list[str], base_dir: Path, include_holdout: bool,
               read: ReadFolders | None = None) -> SuiteFixtures:
    """Load, merge and validate a suite's fixture folders (or the files ``read`` of them, see
    :func:`~membench_gate.suites.common.folders.read_suite`); compute digests of included
    items."""
    schema = get(suite).fixtures
    fixtures = schema.Fixtures(suite=suite, files=[])
    for files in suite_files(suite, entries, base_dir, read):
        fixtures.files += files
        schema.load(fixtures, files)
    schema.validate(fixtures, include_holdout)
    if not fixtures.digests:
        raise GateError(
            f"suite {suite}: no gold items to score in {', '.join(entries)}"
            + ("" if include_holdout else " (holdout items are excluded)")
        )
    return fixtures


def items_of(model: type[BaseModel], raw: Any, label: str, key: str = "id") -> list[Any]:
    """A JSON array of ``model`` items, each validated; an error names the item by index and id."""
    if not isinstance(raw, list):
        raise GateError(f"{label}: expected a JSON array of items")
    if len(raw) >= BATCH and all(type(obj) is dict for obj in raw):
        try:
            return _list_of(model).validate_python(raw)
        except ValueError:  # ValidationError is one: the loop below names the item
            pass
    items = []
    for index, obj in enumerate(raw):
        ident = obj.get(key) if isinstance(obj, dict) else None
        where = f"{label}: item {index + 1}" + (f" ({ident})" if isinstance(ident, str) and ident else "")
        if not isinstance(obj, dict):
            raise GateError(f"{where}: expected a JSON object")
        try:
            items.append(model.model_validate(obj))
        except ValidationError as exc:
            raise GateError(validation_message(where, exc)) from exc
        except ValueError as exc:
            raise GateError(f"{where}: {exc}") from exc
    return items


BATCH = 1000  # items from which a file is validated in one call (building that validator costs)


@functools.cache
def _list_of(model: type[BaseModel]) -> TypeAdapter[list[Any]]:
    """A validator of a whole array of ``model`` items: the same checks as one
    ``model_validate`` per item (an item that fails is looked for item by item, for the
    message), without a Python call per item: a corpus of 100,000 turns took 1.4 s that way,
    0.85 s this way."""
    return TypeAdapter(list[model])  # type: ignore[valid-type]


def dump(item: BaseModel) -> dict[str, Any]:
    """``item.model_dump(exclude_none=True)``, what an item's digest covers, without pydantic's
    serializer for a model that dumps its fields as they are, when they hold plain values
    (strings, numbers, booleans, lists of strings): the digests of a 100,000-turn corpus spent
    a third of their time in it."""
    if not _dumps_as_is(type(item)):
        return item.model_dump(exclude_none=True)
    out: dict[str, Any] = {}
    for key, value in item.__dict__.items():
        kind = type(value)
        if kind in _AS_IS:
            if value is not None:
                out[key] = value
        elif kind is list and all(type(v) is str for v in value):
            out[key] = list(value)
        else:  # a nested model, a tuple, a date: pydantic's own dump
            return item.model_dump(exclude_none=True)
    return out


_AS_IS = frozenset((str, int, float, bool, type(None)))


def item_digest(item: BaseModel) -> str:
    """``digest(dump(item))`` — the same digest — in one step for an item of a model that dumps
    its fields as they are and holds only strings, booleans and integers (a corpus turn): its
    set fields, in sorted order, straight to the canonical encoder, without the dump's dict and
    the sorted copy of it (a 116,000-turn corpus: 0.15 s less). Anything else takes the two
    steps."""
    model = type(item)
    if _dumps_as_is(model):
        fields = item.__dict__
        found = sorted_digest({key: fields[key] for key in _sorted_fields(model)
                               if fields[key] is not None})
        if found is not None:
            return found
    return digest(dump(item))


@functools.cache
def _sorted_fields(model: type[BaseModel]) -> tuple[str, ...]:
    return tuple(sorted(model.model_fields))


@functools.cache
def _dumps_as_is(model: type[BaseModel]) -> bool:
    """Whether ``model``'s dump is its fields' values: no computed or excluded field, no
    serializer, no extra fields kept."""
    decorators = model.__pydantic_decorators__
    return not (model.model_computed_fields or decorators.field_serializers
                or decorators.model_serializers or model.model_config.get("extra") == "allow"
                or any(f.exclude for f in model.model_fields.values()))


def unique(ids: Iterable[tuple[str, str]], what: str) -> None:
    """Refuse an id given twice (``ids`` are ``(id, where)``), naming both places."""
    seen: dict[str, str] = {}
    for ident, label in ids:
        if ident in seen:
            raise GateError(f"{label}: duplicate {what} id {ident!r} (also in {seen[ident]})")
        seen[ident] = label


def load_array(fx: SuiteFixtures, file: FixtureFile, model: type[BaseModel]) -> list[Any]:
    """The items of a file that is a JSON array of ``model`` items, in order."""
    items = items_of(model, file.data, file.label)
    fx.origins += [(item.id, file.label) for item in items]
    return items


def load_documents(fx: SuiteFixtures, files: list[FixtureFile], model: type[BaseModel],
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

