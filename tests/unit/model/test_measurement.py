"""``membench_gate/model/measurement.py``: ``fixtures_hash`` ignores how the JSON is written and
the order things are given in, and changes with anything the measurement is made of."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from membench_gate.model.measurement import canonical_bytes, file_digest, fixtures_hash
from tests.support.jsondocs import documents, outcome

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


def _definition(data: Any) -> bytes:
    """What a fixture's canonical bytes are defined as."""
    return json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


_scalars = st.one_of(
    st.none(), st.booleans(), st.integers(min_value=-(2**80), max_value=2**80),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(alphabet=st.characters(exclude_categories=("Cs",)), max_size=12),
)
_documents = documents(_scalars, st.text(max_size=6), max_keys=5)


@settings(max_examples=400, deadline=None)
@given(_documents)
def test_canonical_bytes_are_the_standard_compact_dump_byte_for_byte(document: Any) -> None:
    assert canonical_bytes(document) == _definition(document)


def test_every_character_is_escaped_as_the_standard_library_escapes_it() -> None:
    text = "".join(chr(c) for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF)
    document = {text[:4096]: [text], "k": {"z": text[-70:], "a": text[:40]}}
    assert canonical_bytes(document) == _definition(document)
    # A control: the fast path is what runs (a key order it got wrong would differ).
    assert canonical_bytes({"b": 1, "a": 2}) == b'{"a":2,"b":1}'


class _Str(str):
    pass


@pytest.mark.parametrize("document", [
    {1: "x", "1": "y"},              # keys that are not strings
    {1: 2, "a": 3},                  # mixed key types: the definition's own TypeError
    "\ud800",                        # a lone surrogate: the definition's UnicodeEncodeError
    {"a": _Str("s")},                # a subclass
    [1.5, 1e16, -0.0, 5e-324],       # floats: the standard library's repr
    {"a": object()},
])
def test_unusual_values_hash_or_fail_exactly_as_the_definition(document: Any) -> None:
    assert outcome(canonical_bytes, document) == outcome(_definition, document)


def test_a_sorted_plain_objects_digest_in_one_step_is_the_digest() -> None:
    from membench_gate.model.measurement import digest, sorted_digest

    plain = {"a": "é \u2028 \x01", "b": True, "c": -(2**63), "d": ""}
    assert sorted_digest(plain) == digest(plain)
    for unusual in ({"a": 0.5}, {"a": 2**64}, {"a": ["x"]}, {"a": None}, {"a": "\ud800"}):
        assert sorted_digest(unusual) is None  # left to digest(), which says what it says


def _whole(data: Any) -> str:
    """A file's digest as defined: the sha256 of its canonical bytes, in one piece."""
    import hashlib

    return hashlib.sha256(_definition(data)).hexdigest()


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(_documents, st.dictionaries(st.text(max_size=4), _scalars, max_size=4)),
                max_size=6))
def test_an_array_file_hashed_an_element_at_a_time_has_its_whole_digest(data: list[Any]) -> None:
    assert file_digest(data) == _whole(data)


@pytest.mark.parametrize("data", [
    [],
    [{"a": 1, "b": "x", "c": None, "d": True}],          # flat and sorted: encoded as it stands
    [{"b": 1, "a": 2}],                                  # unsorted: the sorted copy
    [{"a": 1, "a\x00": 2, "": 3}, {"é": "\u2028"}],
    [{"a": 2**64}, {"a": 0.5}, {"a": [1]}, 7, "s", None],
    [{"a": "\ud800"}],                                   # the definition's UnicodeEncodeError
])
def test_an_array_file_with_unusual_elements_hashes_or_fails_as_the_definition(data: Any) -> None:
    mine, defined = outcome(file_digest, data), outcome(_whole, data)
    # (an error's position is counted in the element, not the file)
    assert mine[0] == defined[0] if isinstance(defined, tuple) else mine == defined
    # A control: the order of the elements is part of the file.
    if len(data) > 1:
        assert file_digest(data) != file_digest(data[::-1])
