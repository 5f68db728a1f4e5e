"""``history.json``: the base branch's last blessed baselines, as ``check --history-out`` writes
them for a report rendered in another process (the action's step, ``comment --from-artifact``).

Each version holds what the scoreboard's history block shows and no more: the commit's short
sha and date, the start of its justification, and its gated metrics. The file may come from an
artifact a fork's run uploaded, so the model bounds everything: at most :data:`MAX_VERSIONS`
versions, bounded names and text, finite numbers, no field it does not know.
"""

from __future__ import annotations

import math
import re
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from membench_gate.errors import GateError
from membench_gate.files import MAX_MAGNITUDE, load_json
from membench_gate.model.canonical import canonical_dumps

HISTORY_FILE = "history.json"
MAX_VERSIONS = 10  # the versions check reads for the scoreboard (the newest)
EXCERPT_CHARS = 60  # characters of a justification kept
MAX_BYTES = 1 << 20  # a larger file is refused before it is parsed
MAX_CELLS, MAX_METRICS = 1024, 128  # per version; per cell
# A cell (``suite/condition``) or metric name: no space, control character or markup.
NAME = re.compile(r"^[A-Za-z0-9_./-]{1,200}$")
_Name = Annotated[str, Field(pattern=NAME.pattern)]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True, defer_build=True)


class HistoryVersion(_Strict):
    """One blessed baseline: the commit that wrote it and what it gated."""

    sha: str = Field(pattern=r"^[0-9a-f]{12}$")  # the first 12 hex digits
    # The commit date as git records it (ISO 8601, the committer's offset).
    date: str = Field(pattern=r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(Z|[+-]\d{2}:\d{2})$")
    justification: str = Field(default="", max_length=EXCERPT_CHARS)  # on one line, cut
    # cell -> gated metric -> value (zero-gated ones included, report-only ones not)
    metrics: dict[_Name, Annotated[dict[_Name, float], Field(max_length=MAX_METRICS)]] = \
        Field(max_length=MAX_CELLS)

    @field_validator("metrics")
    @classmethod
    def _finite(cls, value: dict[str, dict[str, float]]) -> dict[str, dict[str, float]]:
        for cell, found in value.items():
            for name, number in found.items():
                if not math.isfinite(number) or abs(number) >= MAX_MAGNITUDE:
                    raise ValueError(f"{cell}:{name}: {number!r} is not a finite number "
                                     "below 1e15")
        return value

    def value(self, cell: str, name: str) -> float | None:
        return self.metrics.get(cell, {}).get(name)


class History(_Strict):
    """The versions, oldest first; none when the base has no blessed baseline yet."""

    versions: list[HistoryVersion] = Field(max_length=MAX_VERSIONS)


def dumps_history(history: History) -> str:
    return canonical_dumps(history.model_dump(mode="json"))


def parse_history(data: bytes, label: str) -> History:
    """A ``history.json``'s bytes, validated; ``GateError`` (one line) when they are not one."""
    from membench_gate.model.results import validation_message

    if len(data) > MAX_BYTES:
        raise GateError(f"{label}: more than {MAX_BYTES} bytes, more than a history holds")
    try:
        return History.model_validate(load_json(data, label))
    except ValidationError as exc:
        raise GateError(validation_message(label, exc)) from exc
