"""Canonical JSON (docs/gate.md, "Files"): half-up to 4 decimals, integral values as integers, sorted keys,
2-space indent, trailing newline, sorted ``failed`` lists — and a real results file is canonical."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import run_cli

from membench_gate.model.canonical import canonical_dumps, round4
from membench_gate.model.results import Cell, parse_results

REPO = Path(__file__).resolve().parent.parent


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


def test_a_results_file_is_canonical(tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    proc = run_cli("run", "--out", out, cwd=REPO, timeout=120)
    assert proc.returncode == 0, proc.stderr
    text = out.read_text(encoding="utf-8")
    assert text.endswith("}\n")
    assert not text.endswith("\n\n")
    data = json.loads(text)
    assert canonical_dumps(data) == text  # a fixed point: keys sorted, numbers already rounded
    results = parse_results(text, str(out))
    for name, cell in data["cells"].items():
        assert cell["failed"] == sorted(cell["failed"]), name
        assert cell["failed"] == results.cells[name].failed

    def numbers(node: object) -> list[float]:
        if isinstance(node, dict):
            return [n for v in node.values() for n in numbers(v)]
        if isinstance(node, list):
            return [n for v in node for n in numbers(v)]
        return [node] if isinstance(node, float) else []

    floats = numbers({k: v for k, v in data.items() if k != "receipt"})
    assert floats
    assert all(f == round(f, 4) and not f.is_integer() for f in floats)
