"""Results and baseline files: pydantic models and the canonical JSON writer.

Canonical JSON: keys sorted, 2-space indent, trailing newline, floats rounded half-up to 4 decimals,
integral values written as integers, ``failed`` lists sorted. Same inputs give the same bytes on any
machine, so a baseline diff in a pull request shows only what really changed.
"""

from __future__ import annotations

import json
import math
import os
import stat
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path
from typing import Any, TypeVar

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from membench_gate.errors import GateError

SCHEMA_VERSION = 1
_NUMBERS_CHECKED = "numbers checked"  # validation context: check_numbers already ran on the input
_QUANTUM = Decimal("0.0001")


# Numbers in results, baselines and verdicts stay below this magnitude, so rounding to 4 decimals
# is exact in a double and never overflows the decimal context: a larger one is an error naming
# its field, not an exception deep in the writer.
MAX_MAGNITUDE = 1e15
# JSON deeper than this is refused before anything walks it: no file of ours nests past a dozen.
MAX_DEPTH = 64


class NumberError(GateError):
    """A number a file cannot hold (not finite, or too large); ``where`` names its field."""


def round4(value: float) -> float | int:
    """Round half-up to 4 decimals; integral results become ``int``."""
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int) and abs(value) < MAX_MAGNITUDE:
        return value
    try:
        number = float(value)
    except OverflowError:
        number = math.inf
    if not math.isfinite(number):
        raise NumberError(f"cannot write a non-finite number ({value})")
    if abs(number) >= MAX_MAGNITUDE:
        raise NumberError(f"{value:g} is out of range (a file holds numbers below 1e15 in "
                          "magnitude)")
    rounded = Decimal(repr(number)).quantize(_QUANTUM, rounding=ROUND_HALF_UP)
    if rounded == rounded.to_integral_value():
        return int(rounded)
    return float(rounded)


def normalize(obj: Any, where: str = "") -> Any:
    """The canonical form of a JSON-able value (numbers rounded, tuples as lists).

    A number that cannot be written raises ``NumberError`` naming its dotted path.
    """
    if isinstance(obj, dict):
        return {str(k): normalize(v, f"{where}.{k}" if where else str(k)) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [normalize(v, f"{where}[{i}]") for i, v in enumerate(obj)]
    if isinstance(obj, bool) or obj is None or isinstance(obj, str):
        return obj
    if isinstance(obj, (int, float)):
        try:
            return round4(obj)
        except NumberError as exc:
            raise NumberError(f"{where or 'value'}: {exc}") from None
    raise TypeError(f"not JSON-able: {type(obj).__name__}")


def canonical_dumps(obj: Any) -> str:
    """Canonical JSON text of ``obj``."""
    return json.dumps(normalize(obj), sort_keys=True, indent=2, ensure_ascii=False) + "\n"


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def write_atomic(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` through a temp file and a rename: never a half-written file.

    The file gets the mode a plain write would give it: an existing file keeps its mode, a new
    one gets 0666 less the umask (0644 usually) — not the temp file's private 0600.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        mode = stat.S_IMODE(path.stat().st_mode)
    except OSError:
        mode = 0o666 & ~_umask()
    import tempfile  # (with shutil, bz2 and lzma: a check that writes nothing never needs it)

    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as handle:
            handle.write(text)
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def check_numbers(obj: Any, label: str, where: str = "") -> None:
    """Every number in a JSON value finite and below ``MAX_MAGNITUDE``, else a ``GateError``
    naming the file and the field (iterative: depth is checked separately)."""
    # A results file holds tens of thousands of numbers: a plain walk finds whether one is bad,
    # and only then the walk that names fields looks for which.
    if _all_writable(obj):
        return
    stack: list[tuple[Any, str]] = [(obj, where)]
    while stack:
        value, path = stack.pop()
        if isinstance(value, dict):
            stack += [(v, f"{path}.{k}" if path else str(k)) for k, v in value.items()]
        elif isinstance(value, list):
            stack += [(v, f"{path}[{i}]") for i, v in enumerate(value)]
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            try:
                round4(value)
            except NumberError as exc:
                raise NumberError(f"{label}: {path or '(top level)'}: {exc}") from None


def _all_writable(obj: Any) -> bool:
    """Whether every number in ``obj`` can be written (what ``round4`` accepts, without rounding)."""
    stack = [obj]
    while stack:
        value = stack.pop()
        kind = type(value)
        if kind is dict:
            stack.extend(value.values())
        elif kind is list:
            stack.extend(value)
        elif kind is float or kind is int:
            if not -MAX_MAGNITUDE < value < MAX_MAGNITUDE:  # NaN fails every comparison
                return False
        elif kind not in (str, bool, type(None)):
            return False  # anything else (a subclass, a tuple): the exact walk decides
    return True


def _check_depth(obj: Any, label: str, numbers: bool = False) -> bool:
    """Refuse JSON nested deeper than ``MAX_DEPTH``. With ``numbers``, also say whether every
    number in it can be written (:func:`_all_writable`), in the same pass: a results file is
    walked once, not twice."""
    level, depth, writable = [obj], 1, True
    while level:  # one level of nesting at a time: no tuple per value
        if depth > MAX_DEPTH:
            raise GateError(f"{label}: JSON nested deeper than {MAX_DEPTH} levels")
        inner: list[Any] = []
        for value in level:
            kind = type(value)  # json.loads makes plain dicts and lists, never subclasses
            if kind is dict:
                inner.extend(value.values())
            elif kind is list:
                inner.extend(value)
            elif numbers and (kind is float or kind is int) \
                    and not -MAX_MAGNITUDE < value < MAX_MAGNITUDE:  # NaN fails every comparison
                writable = False
        level, depth = inner, depth + 1
    return writable


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def load_json(data: bytes | str, label: str) -> Any:
    """Parse JSON from a file we did not write: one ``GateError`` line for every way it can be
    wrong (syntax, encoding, NaN/Infinity, nesting too deep, a number too long to read)."""
    return _load_json(data, label, numbers=False)[0]


def _load_json(data: bytes | str, label: str, numbers: bool) -> tuple[Any, bool]:
    """:func:`load_json`, and (with ``numbers``) whether every number in it can be written."""
    try:
        value = json.loads(data, parse_constant=_no_constant)
    except json.JSONDecodeError as exc:
        raise GateError(f"{label}:{exc.lineno}:{exc.colno}: invalid JSON: {exc.msg}") from exc
    except UnicodeDecodeError as exc:
        raise GateError(f"{label}: not UTF-8 text ({exc.reason})") from exc
    except RecursionError as exc:
        raise GateError(f"{label}: JSON nested too deeply") from exc
    except ValueError as exc:
        raise GateError(f"{label}: invalid JSON: {str(exc).splitlines()[0]}") from exc
    return value, _check_depth(value, label, numbers)


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
    """Why a maintainer accepted breaches; ``breaches`` lists their keys."""

    text: str
    breaches: list[str] = []


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
            if cell.gold_total != theirs.gold_total or cell.failed != theirs.failed:
                return False
            if cell.metrics != theirs.metrics and (
                    cell.metrics.keys() != theirs.metrics.keys()
                    or any(round4(v) != round4(theirs.metrics[k]) for k, v in cell.metrics.items())):
                return False
        return _small_fields(self) == _small_fields(other)


class Receipt(BaseModel):
    """Facts about one run that are not part of the measurement (never in a baseline).

    Information only: a foreign runner may leave fields out or add its own.
    """

    model_config = ConfigDict(extra="allow", defer_build=True)
    tool_version: str | None = None
    git_sha: str | None = None
    started_at: str | None = None
    duration_s: float | None = None
    adapter: str | None = None
    shard: str | None = None  # "I/N" for one shard of a run (run --shard); merge clears it
    merged_shards: int | None = None  # how many shards ``merge`` put together


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
    return f"{label}: {loc}: {err['msg']}{suffix}"


class UnknownSchemaVersion(GateError):
    """A baseline written by another version of this tool (rule 3: INCONCLUSIVE)."""

    def __init__(self, label: str, version: Any) -> None:
        super().__init__(
            f"{label}: schema_version {version!r} is not known to this version "
            f"(expected {SCHEMA_VERSION})",
            exit_code=3,
        )


_Model = TypeVar("_Model", Baseline, Results)


def _parse(model: type[_Model], data: bytes | str, label: str, version_required: bool) -> _Model:
    """Read and validate either file kind: the same errors, in the same order, for both. Only a
    baseline must state its ``schema_version``; a results file may leave it out."""
    raw, writable = _load_json(data, label, numbers=True)
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
    elif type(raw["schema_version"]) is not int or raw["schema_version"] != SCHEMA_VERSION:
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


def read_text(path: Path, label: str, what: str, hint: str = "") -> str:
    """A UTF-8 text file the user wrote (a config, a fixture): one ``GateError`` line naming
    ``what`` it is when it is missing or unreadable (``hint`` says what to do when missing)."""
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError as exc:
        raise GateError(f"{label}: {what} not found{hint}") from exc
    except (OSError, UnicodeDecodeError) as exc:
        raise GateError(f"{label}: cannot read {what}: {exc}") from exc


def read_file(path: Path, label: str | None = None) -> bytes:
    try:
        return path.read_bytes()
    except FileNotFoundError as exc:
        raise GateError(f"{label or path}: file not found") from exc
    except OSError as exc:
        raise GateError(f"{label or path}: cannot read: {exc.strerror}") from exc
