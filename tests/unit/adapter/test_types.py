"""What the adapter contract accepts from a Python memory."""

from __future__ import annotations

import gc
import json
from dataclasses import FrozenInstanceError, fields
from datetime import datetime, timedelta, timezone
from unittest import mock

import numpy as np
import pytest

from membench_gate.adapter.types import (
    Answer,
    Hit,
    Record,
    answer_to_wire,
    collector_paused,
    new_record,
    record_from_wire,
    record_to_wire,
    time_to_wire,
)


def test_numpy_scalars_from_an_adapter_are_accepted() -> None:
    # What the host sends for a Python adapter: numpy scores and bools become JSON numbers/bools.
    wire = answer_to_wire(Answer(hits=[Hit("f1", np.float32(0.5))], abstain=np.False_))
    assert wire == {"hits": [{"id": "f1", "score": 0.5}], "abstain": False}
    assert type(wire["hits"][0]["score"]) is float
    with pytest.raises(ValueError, match="not a number"):
        answer_to_wire(Answer(hits=[Hit("f1", "high")], abstain=False))  # type: ignore[arg-type]


def test_a_record_read_from_the_wire_is_the_record_sent() -> None:
    plus_two = timezone(timedelta(hours=2))
    sent = Record(id="r1", text="note", source="team", files=("a.py", "b.py"),
                  created_at=datetime(2026, 1, 2, tzinfo=timezone.utc),
                  reviewed_at=datetime(2026, 1, 3, 5, tzinfo=plus_two), relevance=0.5,
                  entity="Ada", aliases=("A. L.",), meta={"k": [1]})
    read = record_from_wire(json.loads(json.dumps(record_to_wire(sent))))
    assert read == sent and read.reviewed_at == datetime(2026, 1, 3, 3, tzinfo=timezone.utc)
    # Field for field what the dataclass's own constructor makes, frozen like it.
    assert vars(read).keys() == {f.name for f in fields(Record)}
    assert vars(record_from_wire({"id": "r2", "text": "t"})) == vars(Record("r2", "t"))
    with pytest.raises(FrozenInstanceError):
        read.text = "changed"  # type: ignore[misc]
    with pytest.raises(ValueError, match="files must be a list of strings"):
        record_from_wire({"id": "r3", "text": "t", "files": ["a.py", 3]})
    with pytest.raises(ValueError, match="aliases must be a list of strings"):
        record_from_wire({"id": "r3", "text": "t", "aliases": "Ada"})


def test_a_record_built_in_one_step_is_the_dataclass_s_own() -> None:
    full = {"id": "r1", "text": "note", "source": "team", "files": ("a.py",),
            "created_at": datetime(2026, 1, 2, tzinfo=timezone.utc), "reviewed_at": None,
            "relevance": 0.5, "entity": "Ada", "aliases": ("A. L.",), "meta": {"k": 1}}
    for given in ({"id": "r2", "text": "t"}, {"id": "r3", "text": "t", "source": "s",
                                             "meta": {"session": "x"}}, full):
        built, own = new_record(**given), Record(**given)
        assert built == own and type(built) is Record
        assert list(vars(built).items()) == list(vars(own).items())  # the same order too
        with pytest.raises(FrozenInstanceError):
            built.text = "changed"  # type: ignore[misc]
    assert new_record("r4", "t").meta == {} and new_record("r4", "t").meta is not \
        new_record("r4", "t").meta  # a dict of its own, as default_factory gives
    assert vars(new_record("r5", "t", meta=None)) == vars(Record("r5", "t", meta=None))  # type: ignore


def test_times_go_on_the_wire_in_utc_however_they_were_given() -> None:
    instant = datetime(2026, 6, 1, tzinfo=timezone.utc)
    assert time_to_wire(instant) == "2026-06-01T00:00:00Z"
    # The same instant in another zone, after the first was formatted: the same text.
    assert time_to_wire(instant.astimezone(timezone(timedelta(hours=2)))) == "2026-06-01T00:00:00Z"
    # A naive time is UTC as written, never taken for an aware one.
    assert time_to_wire(datetime(2026, 6, 1, 2)) == "2026-06-01T02:00:00Z"
    assert time_to_wire(None) is None


def test_the_collector_is_paused_then_restored_as_it_was() -> None:
    assert gc.isenabled()
    with collector_paused():
        assert not gc.isenabled()
    assert gc.isenabled()
    with pytest.raises(KeyError), collector_paused():
        raise KeyError("x")
    assert gc.isenabled()
    gc.disable()
    try:
        with collector_paused():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()


_MIXED_TIMES = [
    Record(id="r1", text="ünïcode — \u2028 and a \x01 control", source="team", files=("a.py",),
           created_at=datetime(2026, 1, 2, 3, 4, 5, 600, tzinfo=timezone.utc),
           reviewed_at=datetime(1, 1, 1, tzinfo=timezone.utc), relevance=0.1 + 0.2,
           entity="Ada", aliases=("A. L.",), meta={"n": 10**30, "f": 1e-7, "nested": [None]}),
    Record(id="r2", text="a naive time", created_at=datetime(2026, 1, 2, 3)),
    Record(id="r3", text="another zone",
           created_at=datetime(2026, 1, 2, 3, tzinfo=timezone(timedelta(hours=-5)))),
    Record(id="r4", text="NaN and Infinity are words here", relevance=1),
]


@pytest.mark.parametrize("record", _MIXED_TIMES, ids=lambda r: r.id)
def test_the_gates_encoder_sends_exactly_the_records_wire_form(record: Record) -> None:
    from membench_gate.adapter import rpc
    from membench_gate.adapter.types import record_for_encoder

    line = rpc.dumps({"records": [record_for_encoder(record)]})
    wire = json.loads(line)["records"][0]
    assert wire == record_to_wire(record)
    assert record_from_wire(wire) == record_from_wire(record_to_wire(record))
    # Read back by the host's fast reader: the same values.
    from pydantic_core import from_json

    assert from_json(line) == json.loads(line)


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -float("inf")])
def test_a_request_json_cannot_carry_is_refused_as_before(bad: float) -> None:
    from membench_gate.adapter import rpc

    with pytest.raises(ValueError, match="JSON compliant"):
        rpc.dumps({"records": [record_for_wire_with(bad)]})


def record_for_wire_with(relevance: float) -> object:
    from membench_gate.adapter.types import record_for_encoder

    return record_for_encoder(Record(id="r", text="t", relevance=relevance))


def test_nan_or_infinity_in_a_batch_is_refused_unless_its_records_say_it_is_text() -> None:
    from membench_gate.adapter import rpc
    from membench_gate.adapter.types import finite_record

    plain = [*_MIXED_TIMES, Record(id="r5", text="t", relevance=0.5,
                                   meta={"rejected": ["a"], "status": None, "ok": True})]
    assert all(map(finite_record, plain))
    nan, inf = float("nan"), float("inf")
    unknown = [Record(id="n1", text="t", relevance=nan),
               Record(id="n2", text="t", relevance=inf),
               Record(id="n3", text="t", meta={"deep": [{"x": -inf}]}),
               # Any field of the wrong type (a bug of the gate's own) is not known either.
               Record(id="n4", text=nan), Record(id="n5", text="t", source=inf),  # type: ignore
               Record(id="n6", text="t", entity=nan), Record(id="n7", text="t", files=(nan,)),
               Record(id="n8", text="t", aliases=(-inf,)),  # type: ignore[arg-type]
               Record(id="n9", text="t", meta={1: "a key JSON writes as a string"}),
               Record(id="n10", text="t", relevance=np.float64(0.5)),  # not known: scanned
               Record(id="n11", text="t", meta={"when": datetime(2026, 1, 1)})]
    assert not any(map(finite_record, unknown))
    # A meta that holds itself, or one nested past the depth checked: not known, no
    # RecursionError (the encoder then says what it says of them).
    cyclic: dict[str, object] = {}
    cyclic["self"] = cyclic
    deep: object = "leaf"
    for _ in range(900):
        deep = [deep]
    assert not finite_record(Record(id="c", text="t", meta=cyclic))
    assert not finite_record(Record(id="d", text="t", meta={"d": deep}))
    marked = rpc._batch(plain)
    assert type(marked) is rpc.RecordBatch and marked.records == plain
    line = rpc.dumps({"jsonrpc": "2.0", "id": 1, "method": "ingest", "params": marked})
    assert json.loads(line)["params"]["records"] == [record_to_wire(r) for r in plain]
    # The words as text: the records are checked, and the fast encoder's bytes stand (the
    # standard encoder is never asked).
    words = [Record(id="w1", text="NaN, said the grandmother"),
             Record(id="w2", text="t", meta={"film": "Infinity War", "note": "-Infinity"})]
    with mock.patch.object(rpc, "_encode", side_effect=AssertionError("the standard encoder")):
        line = rpc.dumps({"jsonrpc": "2.0", "id": 1, "method": "ingest",
                          "params": rpc._batch([*plain, *words])})
        # ... but a plain dict holding those words is written the standard way.
        with pytest.raises(AssertionError, match="the standard encoder"):
            rpc.dumps({"jsonrpc": "2.0", "id": 1, "method": "ingest",
                       "params": {"records": [record_to_wire(r) for r in words]}})
    assert json.loads(line)["params"]["records"] == [record_to_wire(r) for r in [*plain, *words]]
    # One record not known to be finite: what the fast encoder wrote holds the word, so a NaN
    # deep in a meta is still refused in the standard words.
    for record in unknown[:8]:
        batch = rpc._batch([plain[0], record])
        with pytest.raises(ValueError, match="JSON compliant"):
            rpc.dumps({"jsonrpc": "2.0", "id": 1, "method": "ingest", "params": batch})
