"""Canonical JSON (docs/gate.md, "Files"): half-up to 4 decimals, integral values as integers, sorted keys,
2-space indent, trailing newline, sorted ``failed`` lists — and a real results file is canonical."""

from __future__ import annotations

import json

import pytest

from membench_gate.model.canonical import canonical_dumps, round4
from membench_gate.model.results import Cell


@pytest.mark.parametrize(("value", "expected"), [
    (0.00005, 0.0001),
    (2.5e-05, 0),
    (0.00004999, 0),
    (0.12345, 0.1235),     # round() would give 0.1234 (binary float): half-up works on the decimal
    (1.00005, 1.0001),
    (0.99995, 1),
    (1.0, 1),
    (3, 3),
    (-0.0, 0),
    (0.1, 0.1),
    (2 / 3, 0.6667),
])
def test_round4(value: float, expected: float) -> None:
    rounded = round4(value)
    assert rounded == expected
    assert type(rounded) is type(expected)


def test_integral_values_are_written_as_integers() -> None:
    assert canonical_dumps({"a": 1.0, "b": 0.99999, "c": 2.5e-05}) == \
        '{\n  "a": 1,\n  "b": 1,\n  "c": 0\n}\n'


def test_keys_sorted_indent_and_trailing_newline() -> None:
    text = canonical_dumps({"zeta": [0.33333, True, None], "alpha": {"y": "é", "x": 1 / 3}})
    assert text == (
        '{\n  "alpha": {\n    "x": 0.3333,\n    "y": "é"\n  },\n'
        '  "zeta": [\n    0.3333,\n    true,\n    null\n  ]\n}\n'
    )
    assert canonical_dumps(json.loads(text)) == text


def test_non_finite_numbers_are_refused() -> None:
    with pytest.raises(Exception, match="non-finite"):
        canonical_dumps({"x": float("nan")})


def test_failed_lists_are_sorted() -> None:
    cell = Cell(metrics={"m": 0.5}, gold_total=3, failed=["scn-10", "scn-02", "scn-1"])
    assert cell.failed == ["scn-02", "scn-1", "scn-10"]
