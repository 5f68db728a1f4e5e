"""The built-in host's reading of request lines: an ``ingest`` batch as the gate writes it is
read straight into records, which are what the general path builds, field for field; any other
line takes the general path, with its errors in its words."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

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


@pytest.fixture(autouse=True, params=["msgspec", "pydantic-core"])
def reader(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Every test here holds for both fast readers: msgspec's, and pydantic-core's where
    msgspec is not installed (the memory's own environment need not have it)."""
    monkeypatch.setattr(host, "_ingest_decoder", None if request.param == "msgspec" else False)
    return str(request.param)


def _line(records: list[Any], **envelope: Any) -> bytes:
    """An ingest request as the gate writes it, long enough for the host's fast reader."""
    padding = [record_for_encoder(Record(id=f"pad-{n}", text="x" * 200)) for n in range(400)]
    return rpc.dumps({"jsonrpc": "2.0", "id": 7, "method": "ingest",
                      "params": {"records": [*records, *padding]}, **envelope}) + b"\n"


def _general(line: bytes) -> list[Record]:
    return [record_from_wire(r) for r in json.loads(line)["params"]["records"]]


def _same(built: list[Record], expected: list[Record]) -> None:
    assert built == expected
    for ours, theirs in zip(built, expected, strict=True):
        assert type(ours) is Record
        assert list(vars(ours).items()) == list(vars(theirs).items())  # order and values
        assert [type(v) for v in vars(ours).values()] == [type(v) for v in vars(theirs).values()]
        for name in ("created_at", "reviewed_at"):
            if getattr(ours, name) is not None:
                assert getattr(ours, name).tzinfo == getattr(theirs, name).tzinfo


def test_a_batch_the_gate_writes_is_read_into_the_records_the_general_path_builds() -> None:
    line = _line([record_for_encoder(r) for r in RECORDS])
    assert len(line) >= host.FAST_DECODE_BYTES
    message = host._loads(line)
    built = message["params"]["records"]
    assert type(built) is host._Built and message["id"] == 7
    _same(built, _general(line))
    assert all(r.created_at is None or r.created_at.tzinfo is timezone.utc for r in built)


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


@pytest.mark.parametrize("time", [
    "2026-01-02T03:04:05", "2026-01-02T03:04:05.1234567Z", "2026-01-02T03:04:05.9999995Z",
    "2026-01-02T03:04:05.1Z", "2026-01-02t03:04:05z", "2026-01-02 03:04:05+05:30",
    "2026-01-02T03:04:05-00:00", "9999-12-31T23:59:59.9999999Z", "2026-01-02",
])
def test_a_time_the_gate_never_writes_reads_as_the_general_path_reads_it(time: str) -> None:
    """No zone (UTC), more or fewer digits of a second, another separator or zone, not RFC
    3339: whichever way the batch is read, each time is the general path's."""
    wire = {**record_for_encoder(RECORDS[1]), "created_at": time, "reviewed_at": time}
    line = _line([wire])
    records = host._loads(line)["params"]["records"]
    _same([r if type(r) is Record else record_from_wire(r) for r in records], _general(line))


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
    monkeypatch.setattr(host, "_ingest_decoder", False)  # (and no msgspec)
    line = _line([record_for_encoder(r) for r in RECORDS])
    records = host._loads(line)["params"]["records"]
    assert host._ingest_validator is False and type(records) is not host._Built
    assert [record_from_wire(r) for r in records] == _general(line)


def test_without_msgspec_pydantic_cores_reader_reads_the_batch(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "msgspec", None)  # (import msgspec: ImportError)
    monkeypatch.setattr(host, "_ingest_decoder", None)
    line = _line([record_for_encoder(r) for r in RECORDS])
    records = host._loads(line)["params"]["records"]
    assert host._ingest_decoder is False and type(records) is host._Built
    _same(records, _general(line))


def test_with_msgspec_its_reader_reads_the_batch(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(host, "_ingest_decoder", None)
    def gone() -> None:
        raise ImportError("no pydantic_core")

    monkeypatch.setattr(host, "_build_ingest_schema", gone)
    monkeypatch.setattr(host, "_ingest_validator", None)
    line = _line([record_for_encoder(r) for r in RECORDS])
    records = host._loads(line)["params"]["records"]
    assert host._ingest_decoder and type(records) is host._Built
    assert host._ingest_validator is None  # (never needed)
    _same(records, _general(line))


FREED = """
import resource, sys
from membench_gate.adapter import host, rpc
from membench_gate.adapter.types import Record
from membench_gate.reference import ReferenceMemory
host._ingest_decoder = host._msgspec_decoder() or False  # (the first long line would keep)
if sys.argv[1] == "keep":
    host._keep_freed_memory()
words = [f"w{n}" for n in range(5000)]
lines = [rpc.dumps({"jsonrpc": "2.0", "id": b, "method": "ingest", "params": rpc._batch([
    Record(id=f"r{b}-{i}", text=" ".join(words[(i * 7 + b + j * 13) % 5000] for j in range(60)))
    for i in range(2000)])}) for b in range(8)]
memory = ReferenceMemory()
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for line in lines:
    memory.ingest(host._loads(line)["params"]["records"])
print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
"""


@pytest.mark.skipif(not (getattr(os, "confstr", None) and os.confstr_names.get(
    "CS_GNU_LIBC_VERSION")), reason="glibc only")
def test_once_a_corpus_arrives_what_a_batch_frees_is_kept_for_the_next(reader: str) -> None:
    if reader != "msgspec":
        pytest.skip("one reader is enough")
    def faults(mode: str) -> int:
        return int(subprocess.run([sys.executable, "-c", FREED, mode], capture_output=True,
                                  text=True, check=True).stdout)

    default, kept = faults("default"), faults("keep")
    assert kept < default / 2  # (22,000 page faults against 7,800 for 10 batches)


_TEXT = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=8)
_JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False,
                                                                            allow_infinity=False)
                     | _TEXT, lambda inner: st.lists(inner, max_size=3)
                     | st.dictionaries(_TEXT, inner, max_size=3), max_leaves=6)


_RECORD = st.builds(
    Record, id=_TEXT, text=_TEXT, source=st.sampled_from(["default", "team"]),
    files=st.lists(_TEXT, max_size=2).map(tuple),
    created_at=st.none() | st.datetimes(min_value=datetime(1, 1, 2), timezones=st.sampled_from(
        [timezone.utc, timezone(timedelta(hours=5, minutes=30))]) | st.none()),
    reviewed_at=st.none() | st.datetimes(min_value=datetime(1, 1, 2)),
    relevance=st.none() | st.floats(allow_nan=False, allow_infinity=False) | st.integers(-9, 9),
    entity=st.none() | _TEXT, aliases=st.lists(_TEXT, max_size=2).map(tuple),
    meta=st.dictionaries(_TEXT, _JSON, max_size=3))


@st.composite
def _odd_time(draw: st.DrawFn) -> str:
    """A time in a form the gate never writes: another number of digits of a second, another
    separator or zone, no zone, or not RFC 3339 at all."""
    moment = draw(st.datetimes(min_value=datetime(1, 1, 2), max_value=datetime(9999, 12, 30)))
    digits = draw(st.sampled_from([1, 3, 5, 7, 9]))
    fraction = f"{moment.microsecond:06d}{draw(st.integers(0, 999)):03d}"[:digits]
    text = moment.strftime("%Y-%m-%d") + draw(st.sampled_from(["T", "t", " "])) + \
        moment.strftime("%H:%M:%S") + draw(st.sampled_from(["", f".{fraction}"]))
    zone = draw(st.sampled_from(["Z", "z", "+00:00", "-00:00", "+05:30", "", "Q"]))
    return draw(st.sampled_from([text + zone, text + zone, moment.strftime("%Y-%m-%d")]))


_ODD = {  # a field's value as another client might write it
    "id": st.integers(), "source": st.sampled_from(["", None]), "files": st.none(),
    "created_at": _odd_time() | st.integers(), "reviewed_at": _odd_time(),
    "relevance": st.booleans() | st.integers(-2**70, 2**70) | st.just(2**1024),
    "entity": st.integers(), "aliases": st.text(max_size=3), "meta": st.none() | st.lists(_JSON),
}


@st.composite
def _wire_record(draw: st.DrawFn) -> dict[str, Any]:
    """A record as the gate writes it, with up to two fields written otherwise, then perhaps
    reordered or with fields left out."""
    record = json.loads(_line([record_for_encoder(draw(_RECORD))]))["params"]["records"][0]
    for name in draw(st.lists(st.sampled_from(list(_ODD)), max_size=2, unique=True)):
        record[name] = draw(_ODD[name])
    form = draw(st.sampled_from(["in order", "in order", "reordered", "fields left out"]))
    if form == "reordered":
        return {key: record[key] for key in draw(st.permutations(list(record)))}
    if form == "fields left out":
        kept = draw(st.sets(st.sampled_from(list(record)[2:])))
        return {key: value for key, value in record.items() if key in ("id", "text") or key in kept}
    return record


def _outcome(read: Any) -> Any:
    try:
        return read(), None
    except (ValueError, TypeError, KeyError, OverflowError) as exc:
        return None, (type(exc), str(exc))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_wire_record(), min_size=1, max_size=4))
def test_whatever_reads_a_batch_it_builds_what_the_general_path_builds(
        records: list[dict[str, Any]]) -> None:
    """Records in every form a client could write — the gate's, or fields missing, reordered,
    of another type, times in forms the gate never writes — read by the host's fast reader or
    handed on: the records (or the error) of the general path, field for field."""
    padding = [record_for_encoder(Record(id=f"pad-{n}", text="x" * 200)) for n in range(400)]
    line = json.dumps({"jsonrpc": "2.0", "id": 7, "method": "ingest",
                       "params": {"records": [*records, *padding]}}).encode() + b"\n"
    expected, error = _outcome(lambda: _general(line))
    message = host._loads(line)
    got, got_error = _outcome(lambda: [r if type(r) is Record else record_from_wire(r)
                                       for r in message["params"]["records"]])
    assert got_error == error
    if expected is not None:
        _same(got, expected)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_RECORD, min_size=1, max_size=4))
def test_any_batch_the_gate_writes_is_read_fast_into_the_general_paths_records(
        records: list[Record]) -> None:
    line = _line([record_for_encoder(r) for r in records])
    built = host._loads(line)["params"]["records"]
    assert type(built) is host._Built
    _same(built, _general(line))


@pytest.mark.parametrize(("score", "said"), [
    ("0.44", "that is not a number (a string): '0.44'"), (None, "that is not a number (null)"),
    (True, "that is not a number (a boolean)"), ([1], "that is not a number (an array)"),
    (1e15, "out of range: 1000000000000000.0"), (0.5, None), (-3, None),
])
def test_a_score_that_is_not_a_number_says_what_it_is(score: Any, said: str | None) -> None:
    problem = rpc.score_problem(score)
    assert problem == said if said is None or said.startswith("out") else \
        problem is not None and problem.startswith(said)
