"""``membench_gate/files.py``: atomic writes, safe JSON, numbers a file can hold, user text files."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from membench_gate import files
from membench_gate.errors import GateError
from membench_gate.files import (
    MAX_DEPTH,
    NumberError,
    check_numbers,
    load_json,
    number_problem,
    read_text,
    write_atomic,
)


def _one_line(info: pytest.ExceptionInfo[GateError]) -> str:
    message = str(info.value)
    assert "\n" not in message
    return message


# -- write_atomic --------------------------------------------------------------------------------


def test_write_atomic_writes_the_text_exactly(tmp_path: Path) -> None:
    path = tmp_path / "new" / "verdict.json"  # its folder made too
    write_atomic(path, "é\n{}\r\n")
    assert path.read_bytes() == "é\n{}\r\n".encode()  # UTF-8, no newline translation
    assert os.listdir(path.parent) == ["verdict.json"]


def test_a_directory_in_the_way_is_named_and_no_temp_file_is_left(tmp_path: Path) -> None:
    (tmp_path / "out").mkdir()
    with pytest.raises(GateError) as caught:
        write_atomic(tmp_path / "out", "{}\n")
    assert _one_line(caught) == f"{tmp_path / 'out'}: is a directory"
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["out"]


def test_an_existing_file_keeps_its_mode(tmp_path: Path) -> None:
    path = tmp_path / "main.json"
    path.write_text("old")
    path.chmod(0o640)
    write_atomic(path, "new")
    assert (path.read_text(), stat.S_IMODE(path.stat().st_mode)) == ("new", 0o640)


def test_a_new_file_gets_the_mode_of_a_plain_write_not_the_temp_files(tmp_path: Path) -> None:
    mask = os.umask(0o027)
    try:
        write_atomic(tmp_path / "r.json", "{}")
    finally:
        os.umask(mask)
    assert stat.S_IMODE((tmp_path / "r.json").stat().st_mode) == 0o640


def test_a_failed_write_leaves_the_old_file_and_no_temp_file(tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "main.json"
    path.write_text("old")

    def fail(src: object, dst: object) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(files.os, "replace", fail)
    with pytest.raises(OSError, match="disk full"):
        write_atomic(path, "new")
    assert path.read_text() == "old"
    assert os.listdir(tmp_path) == ["main.json"]


# -- load_json -----------------------------------------------------------------------------------


@pytest.mark.parametrize("constant", ["NaN", "Infinity", "-Infinity"])
def test_nan_and_infinity_are_refused(constant: str) -> None:
    with pytest.raises(GateError) as info:
        load_json('{"x": [1, ' + constant + ']}', "r.json")
    assert _one_line(info) == f"r.json: invalid JSON: {constant} is not a JSON number"


def test_nesting_deeper_than_max_depth_is_refused_and_max_depth_is_read() -> None:
    assert load_json("[" * MAX_DEPTH + "]" * MAX_DEPTH, "r.json") is not None
    deeper = "[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1)
    with pytest.raises(GateError) as info:
        load_json(deeper, "r.json")
    assert _one_line(info) == f"r.json: JSON nested deeper than {MAX_DEPTH} levels"


def test_nesting_too_deep_for_the_parser_is_one_line_too() -> None:
    with pytest.raises(GateError) as info:
        load_json("[" * 100_000 + "]" * 100_000, "r.json")
    assert _one_line(info).startswith("r.json: JSON nested")


def test_bytes_that_are_not_utf8_are_refused() -> None:
    with pytest.raises(GateError) as info:
        load_json(b'{"id": "caf\xe9"}', "facts.json")
    assert _one_line(info).startswith("facts.json: not UTF-8 text (")


def test_a_syntax_error_names_its_line_and_column() -> None:
    with pytest.raises(GateError) as info:
        load_json('{\n  "a": 1,\n  "b": }\n', "base.json")
    assert _one_line(info) == "base.json:3:8: invalid JSON: Expecting value"


def test_valid_json_is_read_as_it_is() -> None:
    assert load_json(b'{"a": [1, 2.5, "\xc3\xa9", null, true]}', "x") == \
        {"a": [1, 2.5, "é", None, True]}


# -- check_numbers / number_problem ---------------------------------------------------------------


@pytest.mark.parametrize("value", [float("nan"), float("inf"), -float("inf"), 10**400])
def test_a_non_finite_number_cannot_be_written(value: float) -> None:
    assert (number_problem(value) or "").startswith("cannot write a non-finite number")


@pytest.mark.parametrize(("value", "problem"), [
    (1e15, "1e+15 is out of range"), (-1e15, "-1e+15 is out of range"), (1e15 - 1, None),
    (0, None), (-0.5, None), (999_999_999_999_999, None),
])
def test_numbers_at_or_past_max_magnitude_are_out_of_range(value: float,
                                                           problem: str | None) -> None:
    found = number_problem(value)
    assert (found.split(" (")[0] if found else None) == problem


def test_check_numbers_names_the_file_and_the_field() -> None:
    data = {"cells": {"veto/files_known": {"metrics": {"mrr": 0.5, "x": [1, float("nan")]}}}}
    with pytest.raises(NumberError) as info:
        check_numbers(data, "r.json")
    assert _one_line(info) == ("r.json: cells.veto/files_known.metrics.x[1]: cannot write a "
                               "non-finite number (nan)")


def test_check_numbers_prefixes_the_field_and_names_a_bad_top_level() -> None:
    with pytest.raises(NumberError, match=r"^results: items\.a: 1e\+16 is out of range"):
        check_numbers({"a": 1e16}, "results", "items")
    with pytest.raises(NumberError, match=r"^x: \(top level\): cannot write a non-finite"):
        check_numbers(float("inf"), "x")


def test_check_numbers_passes_what_a_file_can_hold() -> None:
    check_numbers({"a": [0, -1.5, 1e15 - 1, True, None, "NaN"], "b": {}}, "r.json")


# -- read_text -----------------------------------------------------------------------------------


def test_a_missing_file_is_one_line_naming_what_it_is_with_the_hint(tmp_path: Path) -> None:
    with pytest.raises(GateError) as info:
        read_text(tmp_path / "membench.toml", "membench.toml", "config",
                  " (run membench-gate init to create one)")
    assert _one_line(info) == "membench.toml: config not found (run membench-gate init to " \
                              "create one)"


def test_an_unreadable_file_is_one_line_naming_what_it_is(tmp_path: Path) -> None:
    path = tmp_path / "facts.json"
    path.write_bytes(b"caf\xe9")
    with pytest.raises(GateError) as info:
        read_text(path, "fx/facts.json", "fixture file")
    assert _one_line(info).startswith("fx/facts.json: cannot read fixture file: ")


def test_read_text_reads_utf8(tmp_path: Path) -> None:
    (tmp_path / "a.toml").write_bytes("k = \"é\"\n".encode())
    assert read_text(tmp_path / "a.toml", "a.toml", "config") == 'k = "é"\n'


@pytest.mark.parametrize("data", [
    b'{"a": 1}\n', b'{"a":\r\n 1}\r\n', b'{"a":\r 1}\r', b'\xef\xbb\xbf{"a": 1}', b"mixed\r\n\r\r\n\n",
    b"caf\xc3\xa9 \xe2\x80\xa8", b"", b"ok\xffnot utf-8", b"\xc3",
])
def test_a_file_reads_as_python_reads_a_text_file(tmp_path: Path, data: bytes) -> None:
    """``read_text`` is UTF-8 text with its line ends as Python's text files give them, and the
    same error for bytes that are not UTF-8, as ``Path.read_text`` would."""
    path = tmp_path / "f.json"
    path.write_bytes(data)
    try:
        expected: object = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        expected = f"f.json: cannot read fixture file: {exc}"
    try:
        got: object = read_text(path, "f.json", "fixture file")
    except GateError as exc:
        got = str(exc)
    assert got == expected
