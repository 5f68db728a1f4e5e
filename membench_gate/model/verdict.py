"""The verdict file (``check --json``): pydantic models of what the gate decided.

Data only, like :mod:`membench_gate.model.results` for results and baselines: the rules that fill these
models live in :mod:`membench_gate.gate.rules`, which imports this module, never the other way round.

A run can newly fail a million items, and each is a breach of its own (key ``cell#id``: a swap of
one failure for another is caught, and a justification names what it accepts). Holding a pydantic
model per item made the gate and the scoreboard slow, so :class:`Breaches` keeps a run of item
breaches of one cell and kind as one :class:`ItemBreaches` entry (the ids as a tuple), while it
still reads as the list of per-item breaches the file format has: iteration, ``len``, indexing
and the JSON written give one breach per item, byte for byte as before. Code that handles many
items at once reads :attr:`Breaches.entries`.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, ClassVar, Literal, NamedTuple, cast, overload

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    GetCoreSchemaHandler,
    GetJsonSchemaHandler,
    SerializerFunctionWrapHandler,
    model_serializer,
)
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import CoreSchema, core_schema

from membench_gate.errors import ExitCode, describe, exit_code_of

VerdictName = Literal["pass", "regression", "bless-required", "inconclusive", "error"]
Mode = Literal["same-hash", "corpus-bless", "bootstrap"]
BreachKind = Literal["zero", "floor", "cell-missing", "gold-total", "newly-failed", "item-removed",
                     "metric", "metric-missing", "item-changed", "option", "corpus-removed",
                     "baseline-moved", "stochastic-regression"]
# Breaches keyed by one gold item (``suite/condition#id``): held per cell and kind.
ITEM_KINDS = frozenset({"newly-failed", "item-removed", "item-changed"})



class _Model(BaseModel):
    """The verdict's models: their validators are built on first use (a passing check of a
    results file never builds a ``Breach``'s)."""

    model_config = ConfigDict(defer_build=True)


class _Sparse(_Model):
    """A model whose later, optional fields (``_SPARSE``) are written only when they hold
    something, so files without them read as they did before those fields existed (and an item
    run of ``ItemBreaches`` writes a breach as ``Breach`` does)."""

    _SPARSE: ClassVar[tuple[str, ...]] = ()

    @model_serializer(mode="wrap")
    def _without_empty(self, handler: SerializerFunctionWrapHandler) -> Any:
        data = handler(self)
        if isinstance(data, dict):
            for name in self._SPARSE:
                if not data.get(name):
                    data.pop(name, None)
        return data

    @classmethod
    def __get_pydantic_json_schema__(cls, schema: CoreSchema, handler: GetJsonSchemaHandler
                                     ) -> JsonSchemaValue:
        # The serializer writes the model's fields (a sparse one left out, as "not required"
        # says): the schema of the fields, not of the function's return value.
        fields = {key: value for key, value in schema.items() if key != "serialization"}
        return handler(cast(CoreSchema, fields))


class Offender(_Model):
    """An item that violates a zero-gated metric: its cell and id, and the ids at fault (what
    it leaked: another source's pages); empty when the item itself is the fault (a control that
    did not fail)."""

    cell: str
    id: str
    ids: list[str] = []


class Breach(_Sparse):
    """One thing that got worse, or a measurement made easier. ``key`` is
    ``suite/condition:metric`` or ``suite/condition#item`` (a whole cell is keyed by
    ``suite/condition``); a suite-wide easing is ``suite:option:<name>`` or
    ``suite:corpus-removed``, and a moved baseline ``gate:baseline-moved``. ``offenders``: the
    items of a zero-gated breach (rule 1) that violate it, every one, whether or not they
    failed at base."""

    key: str
    kind: BreachKind
    base: float | str | None = None
    head: float | str | None = None
    detail: str
    offenders: list[Offender] = []

    _SPARSE = ("offenders",)


class ItemBreaches(NamedTuple):
    """The breaches of several items of one cell, of one kind, with the same base, head and
    detail: ``Breach(key=f"{cell}#{id}", …)`` for each id, in order, as one object."""

    cell: str
    kind: str
    ids: tuple[str, ...]
    base: str | None
    head: str | None
    detail: str

    def iter_keys(self) -> Iterator[str]:
        return (f"{self.cell}#{i}" for i in self.ids)

    def breach(self, item: str) -> Breach:
        return Breach(key=f"{self.cell}#{item}", kind=self.kind, base=self.base, head=self.head,
                      detail=self.detail)

    def dicts(self, exclude_none: bool = False) -> Iterator[dict[str, Any]]:
        """What ``Breach.model_dump`` gives for each item (the fields are plain JSON already)."""
        kind, base, head, detail = self.kind, self.base, self.head, self.detail
        if exclude_none and (base is None or head is None):
            for key in self.iter_keys():
                yield {k: v for k, v in (("key", key), ("kind", kind), ("base", base),
                                         ("head", head), ("detail", detail)) if v is not None}
            return
        for key in self.iter_keys():
            yield {"key": key, "kind": kind, "base": base, "head": head, "detail": detail}


Entry = Breach | ItemBreaches


def _fold(entries: Iterable[Entry]) -> list[Entry]:
    """Entries in order, each run of item breaches with the same cell, kind, base, head and detail
    made one :class:`ItemBreaches` (maximal runs, so equal breach lists fold the same way)."""
    out: list[Entry] = []
    run: list[str] = []
    shape: tuple[str, str, Any, Any, str] | None = None

    def close() -> None:
        if shape is not None and run:
            cell, kind, base, head, detail = shape
            out.append(ItemBreaches(cell, kind, tuple(run), base, head, detail))

    for entry in entries:
        if isinstance(entry, ItemBreaches):
            here, ids = (entry.cell, entry.kind, entry.base, entry.head, entry.detail), entry.ids
        elif entry.kind in ITEM_KINDS and "#" in entry.key and isinstance(entry.base, str | None) \
                and isinstance(entry.head, str | None):
            cell, _, item = entry.key.partition("#")
            here, ids = (cell, entry.kind, entry.base, entry.head, entry.detail), (item,)
        else:
            close()
            shape, run = None, []
            out.append(entry)
            continue
        if here != shape:
            close()
            shape, run = here, []
        run.extend(ids)
    close()
    return out


class Breaches(Sequence[Breach]):
    """The verdict's breaches, in order: a sequence of :class:`Breach`, one per item breach, held
    compactly (see the module docstring). Immutable: ``+`` makes a new one."""

    __slots__ = ("_entries", "_len", "_starts")

    def __init__(self, entries: Iterable[Entry] = ()) -> None:
        self._entries = tuple(_fold(entries))
        self._starts: list[int] = []
        total = 0
        for entry in self._entries:
            self._starts.append(total)
            total += len(entry.ids) if isinstance(entry, ItemBreaches) else 1
        self._len = total

    @classmethod
    def of(cls, breaches: Iterable[Entry]) -> Breaches:
        """``breaches`` as :class:`Breaches` (a plain list, e.g. from ``model_copy``, is folded)."""
        return breaches if isinstance(breaches, Breaches) else cls(breaches)

    @property
    def entries(self) -> tuple[Entry, ...]:
        """The breaches as held: single breaches and runs of item breaches."""
        return self._entries

    def iter_keys(self) -> Iterator[str]:
        for entry in self._entries:
            if isinstance(entry, ItemBreaches):
                yield from entry.iter_keys()
            else:
                yield entry.key

    def dicts(self, mode: str = "python", exclude_none: bool = False) -> list[dict[str, Any]]:
        """Each breach as ``Breach.model_dump`` writes it, in order."""
        out: list[dict[str, Any]] = []
        for entry in self._entries:
            if isinstance(entry, ItemBreaches):
                out.extend(entry.dicts(exclude_none))
            else:
                out.append(entry.model_dump(mode=mode, exclude_none=exclude_none))
        return out

    def __len__(self) -> int:
        return self._len

    def __iter__(self) -> Iterator[Breach]:
        for entry in self._entries:
            if isinstance(entry, ItemBreaches):
                yield from map(entry.breach, entry.ids)
            else:
                yield entry

    @overload
    def __getitem__(self, index: int) -> Breach: ...

    @overload
    def __getitem__(self, index: slice) -> list[Breach]: ...

    def __getitem__(self, index: int | slice) -> Breach | list[Breach]:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(self._len))]
        if index < 0:
            index += self._len
        if not 0 <= index < self._len:
            raise IndexError("breach index out of range")
        at = bisect.bisect_right(self._starts, index) - 1
        entry = self._entries[at]
        return entry.breach(entry.ids[index - self._starts[at]]) \
            if isinstance(entry, ItemBreaches) else entry

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Breaches):
            return self._entries == other._entries
        if isinstance(other, Sequence) and not isinstance(other, str):
            return len(other) == self._len and all(a == b for a, b in zip(self, other, strict=True))
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __add__(self, other: Iterable[Entry]) -> Breaches:
        return Breaches([*self._entries, *Breaches.of(other).entries])

    def __radd__(self, other: Iterable[Entry]) -> Breaches:
        return Breaches([*Breaches.of(other).entries, *self._entries])

    def __repr__(self) -> str:
        return f"Breaches({list(self._entries)!r})"

    @classmethod
    def __get_pydantic_core_schema__(cls, source: Any, handler: GetCoreSchemaHandler
                                     ) -> CoreSchema:
        # Validated as a list of Breach (so a verdict file is read as before), then folded; an
        # instance passes as it is. Written back one breach per item.
        as_list = handler.generate_schema(list[Breach])

        def validate(value: Any, validate_list: core_schema.ValidatorFunctionWrapHandler
                     ) -> Breaches:
            if isinstance(value, Breaches):
                return value
            return cls(validate_list(value))

        def dump(value: Iterable[Entry], info: core_schema.SerializationInfo
                 ) -> list[dict[str, Any]]:
            return cls.of(value).dicts("json" if info.mode_is_json() else "python",
                                       exclude_none=info.exclude_none)

        return core_schema.no_info_wrap_validator_function(
            validate, as_list,
            serialization=core_schema.plain_serializer_function_ser_schema(dump, info_arg=True))

    @classmethod
    def __get_pydantic_json_schema__(cls, schema: CoreSchema, handler: GetJsonSchemaHandler
                                     ) -> JsonSchemaValue:
        return handler(schema)


class BaseInfo(_Sparse):
    """Where the base baseline was read: the ref, the commit and how it was found; ``tip``, the
    branch's tip when the commit compared is where this branch forked from it and the branch
    moved on since (its newer changes are not this one's)."""

    ref: str | None = None
    sha: str | None = Field(default=None, pattern=r"^[0-9a-f]{7,64}$")
    how: Literal["explicit", "merge-commit-parent", "event-base-sha", "remote-default-branch",
                 "local-branch"] | None = None
    tip: str | None = Field(default=None, pattern=r"^[0-9a-f]{7,64}$")

    _SPARSE = ("tip",)


class FixtureDiff(_Model):
    """Items added, removed, or with changed content, between base and head: gold items per
    cell, and the rest of each suite's corpus (distractor decisions, facts, pages) under
    ``<suite>:corpus``."""

    added: dict[str, list[str]] = {}
    removed: dict[str, list[str]] = {}
    changed: dict[str, list[str]] = {}


class Improvement(_Model):
    """A gated metric that moved the good way against the base (``key`` as a breach's)."""

    key: str
    base: float
    head: float


class JustificationResult(_Model):
    status: Literal["not-needed", "passed", "failed", "missing"]
    text: str | None = None
    breaches: list[str] = []
    failed_check: str | None = None


class StochasticCell(_Model):
    """A cell of a suite with repeats, compared by its pooled counts (docs/gate.md, "Stochastic
    cells"): passes out of trials on each side, their Wilson intervals at 1 − alpha, the
    one-sided exact p-value of head passing less often, and that p-value Holm-adjusted across the
    run's stochastic cells. ``significant``: adjusted ≤ alpha, the breach
    ``stochastic-regression``."""

    cell: str
    base_passes: int
    base_trials: int
    head_passes: int
    head_trials: int
    base_interval: tuple[float, float]
    head_interval: tuple[float, float]
    p_value: float
    adjusted_p: float
    alpha: float
    significant: bool
    # False for a cell whose metrics are all reported (a yardstick): shown, never a breach.
    gated: bool = True

    @property
    def base_rate(self) -> float:
        return self.base_passes / self.base_trials

    @property
    def head_rate(self) -> float:
        return self.head_passes / self.head_trials


def not_needed() -> JustificationResult:
    """The justification check of a comparison with no breach, made without validating it (it
    is always this): a verdict that needs no justification builds no validator for one."""
    return JustificationResult.model_construct(status="not-needed")


class Verdict(_Sparse):
    """What ``check --json`` writes and the report renders."""

    _SPARSE = ("stochastic",)  # written only for a run with stochastic cells

    verdict: VerdictName
    exit_code: int
    mode: Mode | None
    # Defaults are made without validating them (they are the models' own), so a verdict that
    # leaves them out builds no validator for them.
    base: BaseInfo = Field(default_factory=BaseInfo.model_construct)
    breaches: Breaches = Field(default_factory=Breaches)
    blessed: bool = False
    allowed_regression: str | None = None
    newly_failed: dict[str, list[str]] = {}
    fixed: dict[str, list[str]] = {}
    improvements: list[Improvement] = []
    # The committed baseline is this run's: improvements are banked, a later PR cannot give them
    # back unseen. False when the committed baseline is still the base's (or absent).
    banked: bool = False
    fixture_diff: FixtureDiff = Field(default_factory=FixtureDiff.model_construct)
    justification_check: JustificationResult = Field(default_factory=lambda: not_needed())
    notes: list[str] = []
    config: str | None = None  # the --config the check ran with, for the commands we suggest
    # Whether the pull request's code ran sealed (docs/action.md, "Trust boundary"); None when
    # the file was not written by a check (an error outside one).
    isolation: Literal["sealed", "unsealed"] | None = None
    # The stochastic cells compared (rule 5 for a suite with repeats), in cell order.
    stochastic: list[StochasticCell] = []


def error_verdict(exc: BaseException, config: str | None,
                  isolation: Literal["sealed", "unsealed"] | None,
                  base: BaseInfo | None = None) -> Verdict:
    """The verdict of a command that could not compare: ERROR, or INCONCLUSIVE (exit 3) — what
    every output file of a failed command is replaced by (``config``: its ``--config``;
    ``base``: the base commit, when it was resolved before the failure)."""
    code = exit_code_of(exc)
    name = "inconclusive" if code == ExitCode.INCONCLUSIVE else "error"
    return Verdict(verdict=name, exit_code=code, mode=None, notes=[describe(exc)], config=config,
                   isolation=isolation, **({"base": base} if base is not None else {}))
