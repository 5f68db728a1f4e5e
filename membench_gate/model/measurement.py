"""``fixtures_hash``: what a run measured with, as one sha256 (pure: the caller reads the files).

Canonical bytes make hashing independent of whitespace and key order; the hash covers the holdout
flag and, per suite, its scorer version, its canonical options and each fixture file's digest.
"""

from __future__ import annotations

import functools
import hashlib
import json
from typing import Any


def canonical_bytes(data: Any) -> bytes:
    """Formatting-independent bytes of a fixture's JSON (hashing ignores whitespace and key order):
    exactly ``json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    .encode()``.

    Every fixture item is hashed as it loads (a LongMemEval corpus has 100,000s), and the standard
    library spent 16-25 µs on each. Plain JSON values (exact types, string keys, no floats) are
    copied with their keys in sorted order and written by pydantic-core's encoder, which writes
    compact JSON with the same escapes as the standard library's (a test compares the two on
    every code point and on generated documents); anything else is left to the definition
    itself, which also fails as it does (a lone surrogate, a key that is not a string)."""
    try:
        return _encoder()(_sorted(data))
    except (_Unusual, TypeError, ValueError, RecursionError):  # pydantic-core's errors are ValueErrors
        return _definition(data)


def _definition(data: Any) -> bytes:
    return json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


class _Unusual(Exception):
    """A value the fast path leaves to the definition."""


_PLAIN = (str, bool, type(None))  # exact types (a subclass or an enum is not plain)
_INT_LIMIT = 2**64  # integers beyond: the definition (which also refuses one of 4,300 digits)


def _sorted(value: Any) -> Any:
    """``value`` with every object's keys in sorted order (what ``sort_keys`` writes); raises
    :class:`_Unusual` for anything but plain JSON values other than floats (the standard
    library writes floats with ``repr``, pydantic-core with its own shortest form)."""
    kind = type(value)
    if kind is dict:
        out = {}
        for key in sorted(value):  # keys of mixed types raise TypeError: the definition's case
            if type(key) is not str:
                raise _Unusual
            item = value[key]
            out[key] = item if type(item) in _PLAIN else _sorted(item)
        return out
    if kind is list or kind is tuple:
        return [item if type(item) in _PLAIN else _sorted(item) for item in value]
    if kind in _PLAIN or (kind is int and -_INT_LIMIT < value < _INT_LIMIT):
        return value
    raise _Unusual


@functools.cache
def _encoder() -> Any:
    from pydantic_core import to_json  # not imported by a command that hashes nothing

    return to_json


def digest(payload: Any) -> str:
    return hashlib.sha256(canonical_bytes(payload)).hexdigest()[:16]


def sorted_digest(data: dict[str, Any]) -> str | None:
    """``digest(data)`` for an object whose keys are already in sorted order and whose values
    are all strings, booleans or integers within ±2⁶⁴ — one step, no sorted copy (a corpus
    turn's fields); ``None`` when a value is anything else or the encoder refuses one (a lone
    surrogate): :func:`digest` then says what it says."""
    for value in data.values():
        kind = type(value)
        if not (kind is str or kind is bool or (kind is int and -_INT_LIMIT < value < _INT_LIMIT)):
            return None
    try:
        return hashlib.sha256(_encoder()(data)).hexdigest()[:16]
    except ValueError:
        return None


def file_digest(data: Any) -> str:
    """A fixture file's part of ``fixtures_hash``: the sha256 of its canonical bytes.

    A file that is an array (a corpus, a query set) is hashed an element at a time — the same
    bytes, ``[`` + the elements' canonical bytes joined by ``,`` + ``]``, as the compact dump
    writes an array — so that neither a sorted copy of the whole file nor its whole encoding is
    ever held: for a 116,000-turn corpus (116 MB of canonical JSON) that was 0.5–0.6 s and as
    many megabytes again as the parsed file. An element whose keys are already in sorted order
    and whose values are strings, booleans, null or integers (a corpus turn as importers write
    it) is encoded as it is, without the sorted copy."""
    if type(data) is not list:
        return hashlib.sha256(canonical_bytes(data)).hexdigest()
    h = hashlib.sha256(b"[")
    update, encode = h.update, _encoder()
    for index, element in enumerate(data):
        if index:
            update(b",")
        if _flat_and_sorted(element):
            try:
                update(encode(element))
                continue
            except ValueError:  # a lone surrogate: the definition's own failure, below
                pass
        update(canonical_bytes(element))
    update(b"]")
    return h.hexdigest()


def _flat_and_sorted(value: Any) -> bool:
    """Whether ``value`` is a dict that the canonical dump writes as it stands: string keys in
    sorted order, every value a string, boolean, null or an integer within ±2⁶⁴."""
    if type(value) is not dict:
        return False
    last = None
    for key, item in value.items():
        if type(key) is not str or (last is not None and key <= last):
            return False
        kind = type(item)
        if not (kind in _PLAIN or (kind is int and -_INT_LIMIT < item < _INT_LIMIT)):
            return False
        last = key
    return True


def fixtures_hash(include_holdout: bool,
                  suites: list[tuple[str, int, dict[str, Any], list[tuple[str, str]]]]) -> str:
    """sha256 over the measurement: holdout flag, then per suite (name order) its name, scorer
    version, canonical options and each fixture file's digest (:func:`file_digest`), given
    with its label, in label order."""
    h = hashlib.sha256()
    h.update(b"membench-gate fixtures v1\n")
    h.update(f"include_holdout={str(include_holdout).lower()}\n".encode())
    for name, version, options, files in sorted(suites, key=lambda s: s[0]):
        h.update(f"suite={name}\nscorer={version}\n".encode())
        h.update(canonical_bytes(options) + b"\n")
        for label, sha in sorted(files, key=lambda f: f[0]):
            h.update(f"file={label}\n".encode())
            h.update(sha.encode() + b"\n")
    return h.hexdigest()
