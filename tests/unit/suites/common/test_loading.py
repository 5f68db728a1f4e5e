"""How a suite's fixtures load fast and still mean the same: a large file is validated in one
call, yet a bad item is named as before; an item's digest payload is pydantic's own dump; a
date is parsed once per distinct text, and a wrong one is reported in the same words."""

from __future__ import annotations

import copy
import hashlib
import json
from pathlib import Path

import pytest
from pydantic import BaseModel, Field, computed_field, field_serializer

from membench_gate.config import parse_config
from membench_gate.errors import GateError
from membench_gate.run.runner import load_fixtures
from membench_gate.suites import NAMES, get
from membench_gate.suites.common import fixtures as common
from membench_gate.suites.common.fixtures import BATCH, Item, dump, items_of, parse_time
from membench_gate.suites.recall.fixtures import CorpusItem, RecallQuery
from tests.support.paths import REPO


def _corpus(count: int) -> list[dict[str, object]]:
    return [{"id": f"t{i}", "text": f"turn {i}", "session": f"s{i // 4}",
             "created_at": f"2024-01-{1 + i // 400:02d}T09:00:00Z"} for i in range(count)]


def _items(model: type[BaseModel], raw: list[dict[str, object]]) -> list[BaseModel]:
    """The items as one ``model_validate`` each would make them (the definition)."""
    return [model.model_validate(obj) for obj in raw]


def test_a_large_file_is_validated_in_one_call_into_the_same_items() -> None:
    raw = _corpus(BATCH + 5)
    common._list_of.cache_clear()
    assert items_of(CorpusItem, raw, "fx/corpus.json") == _items(CorpusItem, raw)
    assert common._list_of.cache_info().currsize == 1  # the one-call path ran
    small = raw[:BATCH - 1]
    common._list_of.cache_clear()
    assert items_of(CorpusItem, small, "fx/corpus.json") == _items(CorpusItem, small)
    assert common._list_of.cache_info().currsize == 0  # and a small file went item by item


@pytest.mark.parametrize(("change", "message"), [
    ({"text": ""}, r"fx/corpus\.json: item 1501 \(t1500\): text"),
    ({"holdout": "yes"}, r"fx/corpus\.json: item 1501 \(t1500\): holdout"),
    ({"extra": 1}, r"fx/corpus\.json: item 1501 \(t1500\): extra"),
    ({"created_at": "yesterday"}, r"item 1501 \(t1500\).*'yesterday' is not an ISO date or time"),
    (None, r"fx/corpus\.json: item 1501: expected a JSON object"),
])
def test_a_bad_item_in_a_large_file_is_named_as_one_at_a_time_names_it(
        change: dict[str, object] | None, message: str) -> None:
    raw = _corpus(BATCH * 2)
    raw[1500] = [] if change is None else {**raw[1500], **change}  # type: ignore[assignment]
    with pytest.raises(GateError, match=message) as large:
        items_of(CorpusItem, raw, "fx/corpus.json")
    with pytest.raises(GateError) as alone:  # the same item in a small file: the same line
        items_of(CorpusItem, raw[1500:1501], "fx/corpus.json")
    assert str(large.value).replace("item 1501", "item 1") == str(alone.value)


class _Nested(BaseModel):
    a: int


class _WithNested(Item):
    id: str
    inner: _Nested
    tags: tuple[str, ...] = ()


class _Computed(Item):
    id: str

    @computed_field  # type: ignore[prop-decorator]
    @property
    def twice(self) -> str:
        return self.id * 2


class _Serialized(Item):
    id: str
    secret: str = Field(default="s", exclude=True)
    name: str = "n"

    @field_serializer("name")
    def _upper(self, value: str) -> str:
        return value.upper()


@pytest.mark.parametrize("item", [
    CorpusItem(id="t", text="x", session="s"),
    CorpusItem(id="t", text="x", session="s", created_at="2024-01-01", holdout=True),
    RecallQuery(id="q", question="?", gold=["a", "b"], haystack=["s"], category="c"),
    RecallQuery(id="q", question="?", gold=[]),
    _WithNested(id="w", inner=_Nested(a=1), tags=("x",)),
    _Computed(id="c"),
    _Serialized(id="z"),
])
def test_an_items_digest_payload_is_pydantics_dump(item: BaseModel) -> None:
    assert dump(item) == item.model_dump(exclude_none=True)


def test_every_builtin_fixture_item_dumps_as_pydantic_dumps_it() -> None:
    config = parse_config("".join(f'[suites.{name}]\nfixtures = ["builtin"]\n'
                                  for name in NAMES if not get(name).live), REPO / "membench.toml")
    seen = 0
    for fixtures in load_fixtures(config)[1].values():
        for value in vars(fixtures).values():
            for item in value if isinstance(value, list) else ():
                if isinstance(item, BaseModel):
                    assert dump(item) == item.model_dump(exclude_none=True), item
                    seen += 1
    assert seen > 500


def test_a_dump_is_a_copy() -> None:
    query = RecallQuery(id="q", question="?", gold=["a"])
    payload = dump(query)
    payload["gold"].append("b")
    assert query.gold == ["a"]


def test_a_date_is_parsed_once_and_a_wrong_one_is_named_each_time() -> None:
    common._utc.cache_clear()
    first = parse_time("2024-05-01T10:00:00+02:00", "created_at")
    assert parse_time("2024-05-01T10:00:00+02:00", "as_of") is first
    assert first.isoformat() == "2024-05-01T08:00:00+00:00"
    assert common._utc.cache_info().hits == 1
    assert parse_time("2024-05-01", "x").isoformat() == "2024-05-01T00:00:00+00:00"
    for where in ("created_at", "as_of"):
        with pytest.raises(ValueError, match=rf"^{where}: 'May 1' is not an ISO date or time"):
            parse_time("May 1", where)
    with pytest.raises(ValueError, match=r"out of the range of dates"):
        parse_time("0001-01-01T00:00:00+14:00", "at")


def test_a_large_recall_corpus_loads_to_the_digests_item_by_item_gives(tmp_path: Path) -> None:
    """The whole path — one-call validation, dumps, fast hashing — against the definitions."""
    raw = _corpus(BATCH + 200)
    raw[7]["text"] = "é \u2028 \x01 \"quoted\""
    queries = [{"id": "q1", "question": "what?", "gold": ["s3"], "haystack": ["s3", "s4"]},
               {"id": "q2", "question": "none?", "gold": []}]
    folder = tmp_path / "fx"
    folder.mkdir()
    (folder / "corpus.json").write_text(json.dumps(raw), encoding="utf-8")
    (folder / "queries.json").write_text(json.dumps(queries), encoding="utf-8")
    config = parse_config('[suites.recall]\nfixtures = ["fx"]\n', tmp_path / "membench.toml")
    fixtures = load_fixtures(config)[1]["recall"]
    expected = {obj["id"]: hashlib.sha256(json.dumps(
        CorpusItem.model_validate(copy.deepcopy(obj)).model_dump(exclude_none=True),
        sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()).hexdigest()[:16]
        for obj in raw}
    assert fixtures.corpus == expected


class _Mixed(Item):
    id: str
    score: float | None = None
    tags: list[str] = Field(default_factory=list)
    count: int = 0
    flag: bool = False
    note: str | None = None


@pytest.mark.parametrize("fields", [
    {}, {"note": "é \u2028 \x01"}, {"count": 2**70}, {"count": -3, "flag": True},
    {"score": 0.1 + 0.2}, {"tags": ["b", "a"]}, {"score": None, "note": None},
])
def test_an_items_digest_in_one_step_is_the_two_steps(fields: dict) -> None:
    from membench_gate.model.measurement import digest

    item = _Mixed(id="i", **fields)
    assert common.item_digest(item) == digest(dump(item))
    turn = CorpusItem(id="t", text="x", session="s", **({"created_at": "2024-05-01"}
                                                       if fields else {}))
    assert common.item_digest(turn) == digest(dump(turn))


def test_an_item_the_encoder_refuses_fails_in_one_step_as_in_two() -> None:
    from membench_gate.model.measurement import digest

    # (validation refuses one; an item built past it still fails as the definition does)
    turn = CorpusItem.model_construct(id="t", text="a lone \ud800 surrogate", session="s",
                                      source="default", created_at=None)
    with pytest.raises(UnicodeEncodeError) as two:
        digest(dump(turn))
    with pytest.raises(UnicodeEncodeError) as one:
        common.item_digest(turn)
    assert str(one.value) == str(two.value)
