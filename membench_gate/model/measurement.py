"""``fixtures_hash``: what a run measured with, as one sha256 (pure: the caller reads the files).

Canonical bytes make hashing independent of whitespace and key order; the hash covers the holdout
flag and, per suite, its scorer version, its canonical options and each fixture file's digest.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any


def canonical_bytes(data: Any) -> bytes:
    """Formatting-independent bytes of a fixture's JSON (hashing ignores whitespace and key order)."""
    return json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def digest(payload: Any) -> str:
    return hashlib.sha256(canonical_bytes(payload)).hexdigest()[:16]


def file_digest(data: Any) -> str:
    """A fixture file's part of ``fixtures_hash``: the sha256 of its canonical bytes."""
    return hashlib.sha256(canonical_bytes(data)).hexdigest()


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
