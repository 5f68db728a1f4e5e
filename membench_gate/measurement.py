"""What a run measures with: the fixture files each suite reads, and ``fixtures_hash`` over them.

Kept apart from the fixture schemas (:mod:`membench_gate.fixtures`) so that ``check --results``
can tell whether a results file was measured on the working tree's fixtures, options and scorers
by hashing the files alone, without importing or building the schemas. Equal hashes mean the very
bytes that the producing run validated.
"""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from membench_gate.errors import GateError
from membench_gate.results import load_json, read_text

if TYPE_CHECKING:
    from membench_gate.config import Config

BUILTIN = "builtin"

# Each suite's scorer version, bumped when its scoring changes (which makes the next run a corpus
# change): part of every fixtures hash.
SCORER_VERSIONS = {"abstention": 2, "push": 1, "recall": 1, "veto": 2, "writeback": 2}

# The files each suite reads from one fixture folder: named JSON files, then every ``*.json`` of a
# subfolder (one conversation or session each) in name order.
SUITE_FILES: dict[str, tuple[tuple[str, ...], str | None]] = {
    "veto": (("decisions.json", "scenarios.json"), None),
    "abstention": (("facts.json", "probes.json"), None),
    "push": ((), "conversations"),
    "writeback": ((), "sessions"),
    "recall": (("corpus.json", "queries.json"), None),
}


def data_dir() -> Path:
    """Folder holding ``fixtures/`` and ``templates/``: inside the wheel, or the source checkout."""
    here = Path(__file__).resolve().parent  # the package's folder (no importlib.resources import)
    packaged = here / "_data"
    if (packaged / "fixtures").is_dir():
        return packaged
    return here.parent


class FixtureFile(NamedTuple):
    """One file of a suite's fixtures: a stable label (for hashing) and its parsed JSON."""

    label: str
    path: Path
    data: Any


def canonical_bytes(data: Any) -> bytes:
    """Formatting-independent bytes of a fixture's JSON (hashing ignores whitespace and key order)."""
    return json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def digest(payload: Any) -> str:
    return hashlib.sha256(canonical_bytes(payload)).hexdigest()[:16]


def suite_files(suite: str, entries: list[str], base_dir: Path) -> list[list[FixtureFile]]:
    """The parsed JSON files of each of a suite's fixture folders, in the order the suite reads
    them; nothing is validated beyond being JSON."""
    return [[FixtureFile(label, path, _read_json(path, label)) for path, label in folder]
            for folder in suite_paths(suite, entries, base_dir)]


def suite_paths(suite: str, entries: list[str], base_dir: Path) -> list[list[tuple[Path, str]]]:
    """The files of each of a suite's fixture folders with their labels, in the order the suite
    reads them: named JSON files, then every ``*.json`` of its subfolder in name order."""
    names, subfolder = SUITE_FILES[suite]
    folders = []
    for entry in entries:
        folder, label = _folder(entry, suite, base_dir)
        if not folder.is_dir():
            raise GateError(f"suites.{suite}.fixtures: folder {entry!r} not found ({label})")
        paths = [(folder / name, f"{label}/{name}") for name in names]
        if subfolder is not None:
            directory = folder / subfolder
            if not directory.is_dir():
                raise GateError(f"{label}/{subfolder}: folder not found")
            paths += [(path, f"{label}/{subfolder}/{path.name}")
                      for path in sorted(directory.glob("*.json"))]
        folders.append(paths)
    return folders


def _folder(entry: str, suite: str, base_dir: Path) -> tuple[Path, str]:
    if entry == BUILTIN:
        return data_dir() / "fixtures" / suite, f"fixtures/{suite}"
    folder = (base_dir / entry).resolve()
    return folder, entry.rstrip("/")


def _read_json(path: Path, label: str) -> Any:
    return load_json(read_text(path, label, "fixture file"), label)


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


def hash_of(config: Config, files: Mapping[str, list[FixtureFile]]) -> str:
    """``fixtures_hash`` of ``config`` over the files of each enabled suite."""
    return _hash(config, {name: [(file.label, file_digest(file.data)) for file in files[name]]
                          for name in files})


def _hash(config: Config, digests: Mapping[str, list[tuple[str, str]]]) -> str:
    """``fixtures_hash`` of ``config`` over each suite's files as ``(label, digest)``."""
    return fixtures_hash(config.include_holdout, [
        (name, SCORER_VERSIONS[name], config.suite_record(name), digests[name])
        for name in digests
    ])


def measurement_hash(config: Config) -> str:
    """``fixtures_hash`` of ``config`` read from the files alone (no item is validated): what
    ``check --results`` compares a results file's hash with.

    A file whose text is one this package ships (the built-in fixtures, recognised by the
    sha256 of its text) counts with the digest recorded for that text in
    ``shipped_fixtures.json``; any other is parsed and its canonical bytes hashed. Both are the
    same function of the text, so the hash is the same either way (the tests hold the record to
    the shipped files); the record only spares parsing and re-encoding them on every check.
    """
    shipped = _shipped_digests()

    def digest_of(path: Path, label: str) -> str:
        text = read_text(path, label, "fixture file")
        return shipped.get(_text_key(text)) or file_digest(load_json(text, label))

    return _hash(config, {
        name: [(label, digest_of(path, label))
               for folder in suite_paths(name, options.fixtures, config.base_dir)
               for path, label in folder]
        for name, options in config.suites.items()
    })


SHIPPED_DIGESTS = Path(__file__).resolve().parent / "shipped_fixtures.json"


@functools.cache
def _shipped_digests() -> dict[str, str]:
    try:
        record = json.loads(SHIPPED_DIGESTS.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        record = None
    # A damaged install: every file is then parsed and hashed.
    return record if isinstance(record, dict) else {}


def _text_key(text: str) -> str:
    """What a file's digest is recorded under: the sha256 of its text."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def shipped_digests() -> dict[str, str]:
    """sha256 of each shipped fixture file's text → its :func:`file_digest`, computed afresh
    (``python -m membench_gate.measurement`` writes it to ``shipped_fixtures.json``)."""
    out = {}
    for path in sorted((data_dir() / "fixtures").rglob("*.json")):
        text = path.read_text(encoding="utf-8")
        out[_text_key(text)] = file_digest(json.loads(text))
    return dict(sorted(out.items()))


if __name__ == "__main__":
    SHIPPED_DIGESTS.write_text(json.dumps(shipped_digests(), indent=2) + "\n", encoding="utf-8")
    print(SHIPPED_DIGESTS.name)
