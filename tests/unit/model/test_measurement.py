"""``membench_gate/model/measurement.py``: ``fixtures_hash`` ignores how the JSON is written and
the order things are given in, and changes with anything the measurement is made of."""

from __future__ import annotations

import json
from typing import Any

import pytest

from membench_gate.model.measurement import canonical_bytes, file_digest, fixtures_hash

FACTS = [{"id": "f1", "text": "Use Postgres", "tags": ["db", "ops"]}, {"id": "f2", "text": "é"}]


def suites(facts: Any = FACTS, version: int = 3, options: dict[str, Any] | None = None,
           label: str = "fx/facts.json") -> list[tuple[str, int, dict[str, Any], list[tuple[str, str]]]]:
    return [
        ("veto", 2, {"k": 5}, [("fx/veto/decisions.json", file_digest({"d": 1}))]),
        ("abstention", version, options if options is not None else {"k": 5, "lambdas": [1, 2]},
         [(label, file_digest(facts)), ("fx/probes.json", file_digest([]))]),
    ]


BASE = fixtures_hash(False, suites())


def test_whitespace_and_key_order_of_a_file_do_not_matter() -> None:
    rewritten = json.loads(json.dumps([dict(reversed(list(f.items()))) for f in FACTS], indent=7))
    assert json.dumps(rewritten) != json.dumps(FACTS)
    assert canonical_bytes(rewritten) == canonical_bytes(FACTS)
    assert fixtures_hash(False, suites(rewritten)) == BASE


def test_the_order_suites_and_files_are_given_in_does_not_matter() -> None:
    reordered = [(name, version, options, list(reversed(files)))
                 for name, version, options, files in reversed(suites())]
    assert fixtures_hash(False, reordered) == BASE


def test_key_order_of_the_options_does_not_matter() -> None:
    assert fixtures_hash(False, suites(options={"lambdas": [1, 2], "k": 5})) == BASE


@pytest.mark.parametrize("change", [
    {"facts": [{**FACTS[0], "text": "Use Postgres "}, FACTS[1]]},  # one value, one space
    {"facts": [FACTS[0], {"id": "f2", "text": "e"}]},
    {"facts": [FACTS[1], FACTS[0]]},  # a list's order is content
    {"facts": [{**FACTS[0], "tags": ["db"]}, FACTS[1]]},
    {"options": {"k": 6, "lambdas": [1, 2]}},
    {"options": {"k": 5, "lambdas": [1, 2], "shuffle_seed": 7}},
    {"options": {"k": 5, "lambdas": [2, 1]}},
    {"version": 4},
    {"label": "fx/other.json"},
])
def test_any_value_option_scorer_version_or_file_label_changes_the_hash(
        change: dict[str, Any]) -> None:
    assert fixtures_hash(False, suites(**change)) != BASE


def test_the_holdout_flag_changes_the_hash() -> None:
    assert fixtures_hash(True, suites()) != BASE


def test_a_suite_left_out_changes_the_hash() -> None:
    assert fixtures_hash(False, suites()[:1]) != BASE


def test_the_hash_is_a_sha256_and_file_digests_are_too() -> None:
    for digest in (BASE, file_digest(FACTS)):
        assert len(digest) == 64 and set(digest) <= set("0123456789abcdef")
    assert fixtures_hash(False, suites()) == BASE  # the same measurement, the same hash
