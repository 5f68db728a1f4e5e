"""The built-in host's reading of request lines: an ``ingest`` batch as the gate writes it is
read straight into records, which are what the general path builds, field for field; any other
line takes the general path, with its errors in its words."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest

from membench_gate.adapter import host, rpc
from membench_gate.adapter.types import Record, record_for_encoder, record_from_wire

RECORDS = [
    Record(id="r1", text="ünïcode — \u2028 and a \x01 control", source="team", files=("a.py",),
           created_at=datetime(2026, 1, 2, 3, 4, 5, 600, tzinfo=timezone.utc),
           reviewed_at=datetime(1, 1, 1, tzinfo=timezone.utc), relevance=0.1 + 0.2,
           entity="Ada", aliases=("A. L.", "Lovelace"),
           meta={"n": 10**30, "f": 1e-7, "nested": [None, {"k": True}]}),
    Record(id="r2", text="a naive time", created_at=datetime(2026, 1, 2, 3)),
    Record(id="r3", text="another zone",
           created_at=datetime(2026, 1, 2, 3, tzinfo=timezone(timedelta(hours=-5)))),
    Record(id="r4", text="NaN and Infinity are words here", relevance=1),
    Record(id="r5", text="", meta={"session": "s-1"}),
]


def _line(records: list[Any], **envelope: Any) -> bytes:
    """An ingest request as the gate writes it, long enough for the host's fast reader."""
    padding = [record_for_encoder(Record(id=f"pad-{n}", text="x" * 200)) for n in range(400)]
    return rpc.dumps({"jsonrpc": "2.0", "id": 7, "method": "ingest",
                      "params": {"records": [*records, *padding]}, **envelope}) + b"\n"


def _general(line: bytes) -> list[Record]:
    return [record_from_wire(r) for r in json.loads(line)["params"]["records"]]


def test_a_batch_the_gate_writes_is_read_into_the_records_the_general_path_builds() -> None:
    line = _line([record_for_encoder(r) for r in RECORDS])
    assert len(line) >= host.FAST_DECODE_BYTES
    message = host._loads(line)
    built = message["params"]["records"]
    assert type(built) is host._Built and message["id"] == 7
    expected = _general(line)
    assert built == expected
    for ours, theirs in zip(built, expected, strict=True):
        assert type(ours) is Record
        assert list(vars(ours).items()) == list(vars(theirs).items())  # order and values
        assert [type(v) for v in vars(ours).values()] == [type(v) for v in vars(theirs).values()]
        for name in ("created_at", "reviewed_at"):
            if getattr(ours, name) is not None:
                assert getattr(ours, name).tzinfo is timezone.utc


@pytest.mark.parametrize("change", [
    {"source": None}, {"source": ""}, {"files": None}, {"aliases": "Ada"}, {"entity": 3},
    {"relevance": True}, {"relevance": "high"}, {"meta": None}, {"meta": []}, {"id": 5},
    {"created_at": 20260101}, {"created_at": "not a time"}, {"files": ["a.py", 3]},
])
def test_any_other_record_takes_the_general_path(change: dict[str, Any]) -> None:
    wire = {**record_for_encoder(RECORDS[1]), **change}
    line = _line([wire])
    try:
        expected: Any = _general(line)
    except (ValueError, TypeError, KeyError) as exc:
        expected = type(exc), str(exc)
    message = host._loads(line)
    records = message["params"]["records"]
    assert type(records) is not host._Built
    try:
        got: Any = [record_from_wire(r) for r in records]
    except (ValueError, TypeError, KeyError) as exc:
        got = type(exc), str(exc)
    assert got == expected


def test_a_record_without_every_field_or_another_method_takes_the_general_path() -> None:
    short = {"id": "r", "text": "t"}  # what another client may send: the defaults apply
    message = host._loads(_line([short]))
    assert type(message["params"]["records"]) is not host._Built
    assert record_from_wire(message["params"]["records"][0]) == Record("r", "t")
    other = host._loads(_line([record_for_encoder(RECORDS[0])]).replace(
        b'"method":"ingest"', b'"method":"search"', 1))
    assert other["method"] == "search" and type(other["params"]["records"]) is not host._Built


def test_a_bad_line_is_refused_in_the_usual_words() -> None:
    line = _line([record_for_encoder(RECORDS[0])])[:-200]  # cut short
    with pytest.raises(ValueError) as fast:
        host._loads(line)
    with pytest.raises(ValueError) as plain:
        json.loads(line)
    assert type(fast.value) is type(plain.value) and str(fast.value) == str(plain.value)


def test_a_relevance_too_large_for_a_float_is_the_general_paths_error() -> None:
    wire = {**record_for_encoder(RECORDS[1]), "relevance": 2**1024}
    message = host._loads(_line([wire]))
    assert type(message["params"]["records"]) is not host._Built
    with pytest.raises(OverflowError):
        record_from_wire(message["params"]["records"][0])


def test_a_pydantic_core_that_cannot_build_the_reader_leaves_the_general_path(
        monkeypatch: pytest.MonkeyPatch) -> None:
    def too_old() -> None:
        raise AttributeError("module 'pydantic_core' has no attribute 'tuple_schema'")

    monkeypatch.setattr(host, "_build_ingest_schema", too_old)
    monkeypatch.setattr(host, "_ingest_validator", None)
    line = _line([record_for_encoder(r) for r in RECORDS])
    records = host._loads(line)["params"]["records"]
    assert host._ingest_validator is False and type(records) is not host._Built
    assert [record_from_wire(r) for r in records] == _general(line)
