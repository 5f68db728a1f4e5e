"""Canonical JSON: keys sorted, 2-space indent, trailing newline, floats rounded half-up to 4
decimals, integral values written as integers. Same inputs give the same bytes on any machine."""

from __future__ import annotations

import json
from decimal import ROUND_HALF_UP, Decimal
from typing import Any

from membench_gate.files import MAX_MAGNITUDE, NumberError, number_problem

_QUANTUM = Decimal("0.0001")


def round4(value: float) -> float | int:
    """Round half-up to 4 decimals; integral results become ``int``."""
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int) and abs(value) < MAX_MAGNITUDE:
        return value
    problem = number_problem(value)
    if problem is not None:
        raise NumberError(problem)
    rounded = Decimal(repr(float(value))).quantize(_QUANTUM, rounding=ROUND_HALF_UP)
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
