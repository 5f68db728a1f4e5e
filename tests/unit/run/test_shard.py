"""``membench_gate/run/shard.py``: which items one job of a matrix scores — a mapping that depends
on the suite, the id and N alone, and covers every item exactly once."""

from __future__ import annotations

import pytest

from membench_gate.errors import GateError
from membench_gate.run.shard import MAX_SHARDS, Shard, parse_shard, shard_index
from membench_gate.suites.common.fixtures import SuiteFixtures

IDS = [f"scn-{i:03d}" for i in range(200)]


def test_the_shard_of_an_item_is_its_sha256_mod_n() -> None:
    # sha256("veto/scn-001") as an integer, mod 4, plus one: documented in docs/shards.md.
    import hashlib

    value = int(hashlib.sha256(b"veto/scn-001").hexdigest(), 16)
    assert shard_index("veto", "scn-001", 4) == value % 4 + 1
    assert Shard(value % 4 + 1, 4).holds("veto", "scn-001")
    assert [Shard(i, 4).holds("veto", "scn-001") for i in range(1, 5)].count(True) == 1


@pytest.mark.parametrize("text", ["0/3", "4/3", "1/0", "3", "a/b", "1/3/", "-1/3", " 1/3",
                                  "1/1001", "１/3"])
def test_bad_shard_values_are_one_line_errors(text: str) -> None:
    with pytest.raises(GateError, match=r"--shard: .* is not a shard I/N"):
        parse_shard(text)



@pytest.mark.parametrize("count", [1, 2, 3, 7])
def test_the_shards_cover_every_item_exactly_once(count: int) -> None:
    held = [[item for item in IDS if Shard(index, count).holds("veto", item)]
            for index in range(1, count + 1)]
    assert sorted(item for shard in held for item in shard) == sorted(IDS)
    if count > 1:
        assert all(shard for shard in held)  # 200 items: no shard of a few is empty


def test_an_items_shard_depends_on_its_suite_and_id_alone() -> None:
    # Not on the other items: shard_index sees nothing else. The suite is part of the key.
    assert shard_index("veto", "x-1", 1000) != shard_index("push", "x-1", 1000)
    assert shard_index("veto", "x-1", 1000) == shard_index("veto", "x-1", 1000)


@pytest.mark.parametrize(("text", "shard"), [("1/1", Shard(1, 1)), ("3/4", Shard(3, 4)),
                                             ("1000/1000", Shard(1000, MAX_SHARDS))])
def test_good_shard_values_parse_and_print_back(text: str, shard: Shard) -> None:
    assert parse_shard(text) == shard
    assert str(shard) == text


def test_a_bad_shard_value_names_the_label_given() -> None:
    with pytest.raises(GateError, match=r"^receipt\.shard: '2/1' is not a shard I/N with 1 <= I "
                                        r"<= N <= 1000$"):
        parse_shard("2/1", "receipt.shard")


def test_restrict_keeps_this_shards_items_and_the_whole_corpus() -> None:
    fixtures = SuiteFixtures(suite="veto", files=[], digests={i: f"d-{i}" for i in IDS},
                             corpus={"dec-1": "c1"})
    part = Shard(2, 3).restrict("veto", fixtures)
    assert part.digests == {i: f"d-{i}" for i in IDS if shard_index("veto", i, 3) == 2}
    assert part.corpus == fixtures.corpus
    assert len(fixtures.digests) == len(IDS)  # the fixtures given are left as they were
