"""Results and baseline files: pydantic models and the canonical JSON writer.

Canonical JSON: keys sorted, 2-space indent, trailing newline, floats rounded half-up to 4 decimals,
integral values written as integers, ``failed`` lists sorted. Same inputs give the same bytes on any
machine, so a baseline diff in a pull request shows only what really changed.
"""

from __future__ import annotations

import math
from typing import Any, Literal, TypeVar

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from membench_gate.errors import ExitCode, GateError
from membench_gate.files import MAX_MAGNITUDE, check_numbers, load_json_writable
from membench_gate.model.canonical import canonical_dumps, normalize, round4

SCHEMA_VERSION = 1
_NUMBERS_CHECKED = "numbers checked"  # validation context: check_numbers already ran on the input


class _Strict(BaseModel):
    # Validators are built on first use. An empty list or table is written as the default
    # itself (pydantic gives each instance its own copy): a ``default_factory=list`` would have
    # pydantic read ``list``'s signature, which tokenizes its text (a regex compiled once,
    # milliseconds of a check).
    model_config = ConfigDict(extra="forbid", defer_build=True)


class Cell(_Strict):
    """One ``suite/condition``: its metrics, how many gold items it scored, which failed."""

    model_config = ConfigDict(strict=True)  # with _Strict's
    metrics: dict[str, float]
    gold_total: int = Field(ge=0)
    failed: list[str]
    # A suite with ``repeats = R`` (docs/gate.md, "Stochastic cells"): R, and per gold item how
    # many of the R passes it passed. Absent for a deterministic cell, whose file reads as before.
    repeats: int | None = Field(default=None, ge=2)
    passes: dict[str, int] | None = None

    @model_validator(mode="after")
    def _counts(self) -> Cell:
        if (self.repeats is None) != (self.passes is None):
            raise ValueError("repeats and passes go together")
        if self.passes is not None and self.repeats is not None:
            if len(self.passes) != self.gold_total:
                raise ValueError(f"passes counts {len(self.passes)} items, gold_total is "
                                 f"{self.gold_total}")
            for item, count in self.passes.items():
                if not 0 <= count <= self.repeats:
                    raise ValueError(f"passes.{item}: {count} is not from 0 to {self.repeats}")
        return self

    def counts(self) -> tuple[int, int]:
        """Pooled (passes, trials) over every gold item and pass: a deterministic cell is one
        pass of each item."""
        if self.passes is None or self.repeats is None:
            return self.gold_total - len(self.failed), self.gold_total
        return sum(self.passes.values()), self.gold_total * self.repeats

    @field_validator("failed")
    @classmethod
    def _sorted_unique(cls, value: list[str]) -> list[str]:
        return sorted(set(value))

    @field_validator("metrics")
    @classmethod
    def _finite(cls, value: dict[str, float]) -> dict[str, float]:
        for name, number in value.items():
            if not math.isfinite(number) or abs(number) >= MAX_MAGNITUDE:
                raise ValueError(f"{name}: {number!r} is not a finite number below 1e15")
        return value


class Justification(_Strict):
    """Why a maintainer accepted breaches; ``breaches`` lists their keys. Both are required:
    ``bless`` always writes both (``[]`` when nothing was breached), so a justification without
    its list is not one the gate wrote — and rule 8 compares that list with the breaches."""

    text: str
    breaches: list[str]


class Baseline(_Strict):
    """The committed reference a pull request is compared with."""

    schema_version: int
    fixtures_hash: str
    config: dict[str, Any]
    cells: dict[str, Cell]
    digests: dict[str, dict[str, str]] = {}
    # suite -> corpus item id -> content digest (distractors too): rule 7's corpus-removed
    corpus: dict[str, dict[str, str]] = {}
    justification: Justification | None = None

    def comparable(self) -> dict[str, Any]:
        """The canonical content, ignoring ``justification`` (rules 6, 7 and 10)."""
        data = baseline_payload(self)
        data.pop("justification", None)
        return normalize(data)

    def same_content(self, other: Baseline) -> bool:
        """``self.comparable() == other.comparable()``, without building either: the gate asks
        it of runs with a million items, where the canonical copy costs seconds. The bulk (ids,
        digests) is compared as it is — strings are their own canonical form — and metrics after
        rounding, like the canonical form; the rest (a few small fields) canonically."""
        if self is other:
            return True
        if self.digests != other.digests or self.corpus != other.corpus \
                or self.cells.keys() != other.cells.keys():
            return False
        for name, cell in self.cells.items():
            theirs = other.cells[name]
            if cell.gold_total != theirs.gold_total or cell.failed != theirs.failed \
                    or cell.repeats != theirs.repeats or cell.passes != theirs.passes:
                return False
            if cell.metrics != theirs.metrics and (
                    cell.metrics.keys() != theirs.metrics.keys()
                    or any(round4(v) != round4(theirs.metrics[k]) for k, v in cell.metrics.items())):
                return False
        return _small_fields(self) == _small_fields(other)

    def differences(self, other: Baseline) -> list[str]:
        """Where ``other`` differs from this baseline in what ``same_content`` compares, one
        phrase per cell, metric or field, in key order (``"veto/default:recall_at_5 0.8 →
        0.75"``): what a user must see to know why a committed baseline is not this run's."""
        found: list[str] = []
        for name in sorted(self.cells.keys() | other.cells.keys()):
            mine, theirs = self.cells.get(name), other.cells.get(name)
            if mine is None or theirs is None:
                found.append(f"{name} {'only in the run' if mine is None else 'not in the run'}")
                continue
            for metric in sorted(mine.metrics.keys() | theirs.metrics.keys()):
                a, b = mine.metrics.get(metric), theirs.metrics.get(metric)
                if a is None or b is None or round4(a) != round4(b):
                    shown = ["—" if v is None else f"{round4(v):g}" for v in (a, b)]
                    found.append(f"{name}:{metric} {shown[0]} → {shown[1]}")
            if mine.gold_total != theirs.gold_total:
                found.append(f"{name} gold items {mine.gold_total} → {theirs.gold_total}")
            if mine.failed != theirs.failed:
                gone, new = set(mine.failed) - set(theirs.failed), set(theirs.failed) - set(mine.failed)
                found.append(f"{name} failed items (+{len(new)} −{len(gone)})")
            if (mine.repeats, mine.passes) != (theirs.repeats, theirs.passes):
                found.append(f"{name} passes out of repeats")
        for field in ("digests", "corpus"):
            mine_f, theirs_f = getattr(self, field), getattr(other, field)
            found += [f"{suite} {'item' if field == 'digests' else 'corpus'} digests"
                      for suite in sorted(mine_f.keys() | theirs_f.keys())
                      if mine_f.get(suite) != theirs_f.get(suite)]
        mine_s, theirs_s = _small_fields(self), _small_fields(other)
        found += [key for key in sorted(mine_s.keys() | theirs_s.keys())
                  if mine_s.get(key) != theirs_s.get(key)]
        return found


class Receipt(BaseModel):
    """Facts about one run that are not part of the measurement (never in a baseline).

    Information only: a foreign runner may leave fields out or add its own.
    """

    model_config = ConfigDict(extra="allow", defer_build=True)
    tool_version: str | None = None
    git_sha: str | None = None
    started_at: str | None = None
    duration: float | None = None  # seconds the run took
    adapter: str | None = None
    shard: str | None = None  # "I/N" for one shard of a run (run --shard); merge clears it
    merged_shards: int | None = None  # how many shards ``merge`` put together
    # "sealed" or "unsealed": how the pull request's code ran for this run (merged: "sealed"
    # only when every shard was); what ``check --results`` reports as the verdict's isolation.
    isolation: Literal["sealed", "unsealed"] | None = None


class Results(Baseline):
    """A run's output: the baseline fields plus the receipt and per-item detail."""

    receipt: Receipt
    items: dict[str, dict[str, dict[str, Any]]]

    @model_validator(mode="after")
    def _writable(self, info: ValidationInfo) -> Results:
        # A run's own numbers (an adapter's scores) must fit the file before anything is decided:
        # NumberError is not a ValueError, so it leaves pydantic as it is, naming the field.
        # (A parsed file had every number checked already, items included.)
        if not (info.context or {}).get(_NUMBERS_CHECKED):
            check_numbers(self.items, "results", "items")
        return self

    def to_baseline(self, justification: Justification | None = None) -> Baseline:
        return Baseline(
            schema_version=self.schema_version,
            fixtures_hash=self.fixtures_hash,
            config=self.config,
            cells=self.cells,
            digests=self.digests,
            corpus=self.corpus,
            justification=justification,
        )


def baseline_payload(baseline: Baseline) -> dict[str, Any]:
    """The JSON object of a baseline (no receipt, no items)."""
    data = Baseline.model_dump(baseline, mode="json", exclude_none=True)
    return {k: data[k] for k in Baseline.model_fields if k in data}


_BULK_FIELDS = {"cells", "digests", "corpus", "justification"}


def _small_fields(baseline: Baseline) -> Any:
    """The canonical form of the baseline fields ``same_content`` does not compare one by one."""
    fields = set(Baseline.model_fields) - _BULK_FIELDS
    return normalize(baseline.model_dump(mode="json", exclude_none=True, include=fields))


def dumps_baseline(baseline: Baseline) -> str:
    return canonical_dumps(baseline_payload(baseline))


def dumps_results(results: Results) -> str:
    data = results.model_dump(mode="json", exclude_none=True)
    # Every receipt key is written, null when it does not apply (no commit yet, not a shard).
    data["receipt"] = results.receipt.model_dump(mode="json")
    return canonical_dumps(data)


def validation_message(label: str, exc: ValidationError) -> str:
    """One line for the first pydantic error: ``file: field.path: what is wrong``."""
    err = exc.errors()[0]
    loc = ".".join(str(p) for p in err["loc"]) or "(top level)"
    more = len(exc.errors()) - 1
    suffix = f" (and {more} more problem{'s' if more > 1 else ''})" if more else ""
    # (pydantic prefixes a validator's own message with "Value error, ": the message is ours)
    return f"{label}: {loc}: {err['msg'].removeprefix('Value error, ')}{suffix}"


class UnknownSchemaVersion(GateError):
    """A baseline written by another version of this tool (rule 3: INCONCLUSIVE)."""

    def __init__(self, label: str, version: Any) -> None:
        super().__init__(
            f"{label}: schema_version {version!r} is not known to this version "
            f"(expected {SCHEMA_VERSION})",
            exit_code=ExitCode.INCONCLUSIVE,
        )


_Model = TypeVar("_Model", Baseline, Results)


def _parse(model: type[_Model], data: bytes | str, label: str, version_required: bool) -> _Model:
    """Read and validate either file kind: the same errors, in the same order, for both. Only a
    baseline must state its ``schema_version``; a results file may leave it out."""
    raw, writable = load_json_writable(data, label, numbers=True)
    if not isinstance(raw, dict):
        raise GateError(f"{label}: expected a JSON object")
    if "verdict" in raw and "exit_code" in raw and "cells" not in raw:
        # What a failed run, merge or check leaves at its --out: say so, not 20 missing fields.
        raise GateError(f"{label}: a verdict file (verdict {str(raw['verdict'])[:40]!r}), not "
                        f"{'a baseline' if version_required else 'a results file'}: the command "
                        "that wrote it failed or gated, it measured nothing")
    if "schema_version" not in raw:
        if version_required:
            raise GateError(f"{label}: schema_version: Field required")
    elif type(raw["schema_version"]) is not int:
        # A malformed field is an ERROR like any other: only a well-formed version this tool
        # does not know makes two runs incomparable (rule 3, INCONCLUSIVE).
        shown = repr(raw["schema_version"])
        raise GateError(f"{label}: schema_version: must be an integer, got "
                        f"{shown if len(shown) <= 40 else shown[:40] + '…'}")
    elif raw["schema_version"] != SCHEMA_VERSION:
        raise UnknownSchemaVersion(label, raw["schema_version"])
    if not writable:  # found while the depth was checked: the walk that names the field
        check_numbers(raw, label)
    try:
        # Every number of the whole input was checked above: a Results need not walk its items
        # again.
        return model.model_validate(raw, context={_NUMBERS_CHECKED: True})
    except ValidationError as exc:
        raise GateError(validation_message(label, exc)) from exc


def parse_baseline(data: bytes | str, label: str) -> Baseline:
    """Read and validate a baseline; ``label`` names the file (or ``sha:path``) in errors."""
    return _parse(Baseline, data, label, version_required=True)


def parse_results(data: bytes | str, label: str) -> Results:
    """Read and validate a results file."""
    return _parse(Results, data, label, version_required=False)
