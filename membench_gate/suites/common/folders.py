"""The fixture files each suite reads from its folders, in the order it reads them.

Kept apart from the fixture schemas (:mod:`membench_gate.suites.common.fixtures`) so that
``check --results`` can hash a measurement's files (:mod:`membench_gate.run.measure`) without
importing or building the schemas.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from membench_gate.defaults import BUILTIN
from membench_gate.errors import GateError
from membench_gate.files import data_dir, load_json, read_text

if TYPE_CHECKING:
    pass

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


class FixtureFile(NamedTuple):
    """One file of a suite's fixtures: a stable label (for hashing) and its parsed JSON."""

    label: str
    path: Path
    data: Any


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
