"""Canonical JSON (docs/gate.md, "Files"): half-up to 4 decimals, integral values as integers, sorted keys,
2-space indent, trailing newline, sorted ``failed`` lists — and a real results file is canonical."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from membench_gate.files import NumberError
from membench_gate.model.canonical import canonical_dumps, normalize, round4
from membench_gate.model.results import Cell
from tests.support.jsondocs import documents, outcome


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


def _reference(obj: object) -> str:
    """What canonical JSON is defined as: the standard library's indented dump of the
    normalized value."""
    return json.dumps(normalize(obj), sort_keys=True, indent=2, ensure_ascii=False) + "\n"


_scalars = st.one_of(
    st.none(), st.booleans(), st.integers(min_value=-(10**15) + 1, max_value=10**15 - 1),
    st.floats(allow_nan=False, allow_infinity=False, min_value=-1e12, max_value=1e12),
    st.floats(min_value=-1e-3, max_value=1e-3),
    st.text(alphabet=st.characters(exclude_categories=("Cs",)), max_size=12),
)
_documents = documents(_scalars, st.one_of(st.text(max_size=6), st.integers(-3, 3)),
                       max_keys=4)


@settings(max_examples=400, deadline=None)
@given(_documents)
def test_the_one_pass_writer_is_the_standard_dump_byte_for_byte(document: object) -> None:
    assert canonical_dumps(document) == _reference(document)


def test_a_real_results_file_is_written_byte_for_byte_as_the_standard_dump(tmp_path) -> None:
    from membench_gate.config import load_config
    from membench_gate.run.runner import run

    (tmp_path / "membench.toml").write_text(
        '[suites.veto]\nfixtures = ["builtin"]\n[suites.push]\nfixtures = ["builtin"]\n',
        encoding="utf-8")
    data = json.loads(json.dumps(run(load_config(tmp_path / "membench.toml")).model_dump(
        mode="json")))
    assert canonical_dumps(data) == _reference(data)
    # And a mutation the writer must show: one value changed is another text.
    data["cells"]["veto/files_known"]["gold_total"] += 1
    assert canonical_dumps(data) == _reference(data)


def test_a_number_that_cannot_be_written_is_named_by_its_path() -> None:
    with pytest.raises(NumberError, match=r"a\.b\[1\]"):
        canonical_dumps({"a": {"b": [1, float("inf")]}})


class _Items(dict):
    def items(self):  # type: ignore[override]
        return [("x", 2)]


@pytest.mark.parametrize("document", [
    {1: float("nan"), "1": 0.5},          # a key that is not a string: normalized in order
    {"b": float("inf"), "a": object()},  # the first problem in insertion order is the one named
    _Items(x=1),                          # a subclass: read as the definition reads it
    {True: 1, "z": [(1, 2)]},
])
def test_unusual_documents_are_written_or_refused_exactly_as_the_definition(
        document: object) -> None:
    assert outcome(canonical_dumps, document) == outcome(_reference, document)
