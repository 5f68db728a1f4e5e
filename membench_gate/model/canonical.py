"""Canonical JSON: keys sorted, 2-space indent, trailing newline, floats rounded half-up to 4
decimals, integral values written as integers. Same inputs give the same bytes on any machine."""

from __future__ import annotations

import json
import json.encoder
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
    """Canonical JSON text of ``obj``: exactly ``json.dumps(normalize(obj), sort_keys=True,
    indent=2, ensure_ascii=False) + "\n"``, written in one pass.

    The standard library writes an indented document with its pure-Python encoder (its C
    encoder knows no indent), after :func:`normalize` has copied the whole tree: for a results
    file of a few hundred thousand values that was a tenth of a second of every run. Here each
    value is normalized as it is written, strings by the standard library's own C function, so
    the text is the same byte for byte (a test compares the two on generated documents). A
    number that cannot be written is reported by :func:`normalize`, which names its path."""
    out: list[str] = []
    try:
        _write(obj, out, "\n")
    except (_Unusual, NumberError, TypeError):
        # Anything but plain JSON values (a subclass, a key that is not a string, a number that
        # cannot be written): the definition itself, which also says what is wrong as it does.
        return json.dumps(normalize(obj), sort_keys=True, indent=2, ensure_ascii=False) + "\n"
    out.append("\n")
    return "".join(out)


class _Unusual(Exception):
    """A value the one-pass writer leaves to the definition."""


_quote = json.encoder.encode_basestring  # what json.dumps uses with ensure_ascii=False
_INDENT = "  "


def _write(obj: Any, out: list[str], newline: str) -> None:
    """Append ``obj``'s canonical text to ``out``; ``newline`` is a line break and the indent of
    the line ``obj`` is on. Plain JSON values only (exact types, string keys): anything else
    raises :class:`_Unusual`."""
    kind = type(obj)
    if kind is str:
        out.append(_quote(obj))
    elif kind is dict:
        if not obj:
            out.append("{}")
            return
        if not all(type(key) is str for key in obj):
            raise _Unusual
        inner = newline + _INDENT
        if all(type(value) is str for value in obj.values()):  # item digests: one join
            out.append("{" + inner + ("," + inner).join(
                [_quote(key) + ": " + _quote(obj[key]) for key in sorted(obj)]) + newline + "}")
            return
        first = True
        for key in sorted(obj):
            out.append(("{" if first else ",") + inner + _quote(key) + ": ")
            first = False
            _write(obj[key], out, inner)
        out.append(newline + "}")
    elif kind is list or kind is tuple:
        if not obj:
            out.append("[]")
            return
        inner = newline + _INDENT
        first = True
        for value in obj:
            out.append(("[" if first else ",") + inner)
            first = False
            _write(value, out, inner)
        out.append(newline + "]")
    elif obj is None:
        out.append("null")
    elif kind is bool:
        out.append("true" if obj else "false")
    elif kind is int or kind is float:
        number = round4(obj)
        out.append(int.__repr__(number) if type(number) is int else float.__repr__(number))
    else:
        raise _Unusual
