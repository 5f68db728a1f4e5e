"""The fixture files a suite reads from its folders, in the order it reads them.

Which files those are is the suite's declaration (:class:`~membench_gate.suites.common.suite.Suite`,
``files`` and ``subfolder``), read from the registry without importing the suite's fixture schema:
``check --results`` hashes a measurement's files (:mod:`membench_gate.run.measure`) without
importing or building any schema.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, NamedTuple

from membench_gate.defaults import BUILTIN
from membench_gate.errors import GateError
from membench_gate.files import data_dir, decode_text, load_json, read_raw, read_text
from membench_gate.suites import get


class FixtureFile(NamedTuple):
    """One file of a suite's fixtures: a stable label (for hashing) and its parsed JSON."""

    label: str
    path: Path
    data: Any


# A suite's fixture files as read, not yet parsed (:func:`read_suite`): each folder's files,
# each as (path, label, its bytes or the error reading it gave).
ReadFolders = list[list[tuple[Path, str, "bytes | GateError"]]]


def suite_files(suite: str, entries: list[str], base_dir: Path,
                read: ReadFolders | None = None) -> list[list[FixtureFile]]:
    """The parsed JSON files of each of a suite's fixture folders, in the order the suite reads
    them; nothing is validated beyond being JSON. With ``read`` (what :func:`read_suite` gave),
    those bytes are parsed (and let go of) and the folders are not looked at again."""
    if read is None:
        return [[FixtureFile(label, path, _read_json(path, label)) for path, label in folder]
                for folder in suite_paths(suite, entries, base_dir)]
    parsed = []
    for folder in read:
        files = []
        for at, (path, label, data) in enumerate(folder):
            if isinstance(data, GateError):
                raise data
            text = decode_text(data, label, FIXTURE_FILE)
            folder[at] = (path, label, b"")  # its bytes are not kept once they are text
            del data
            files.append(FixtureFile(label, path, load_json(text, label)))
        parsed.append(files)
    return parsed


def read_suite(suite: str, entries: list[str], base_dir: Path) -> ReadFolders:
    """Every file :func:`suite_files` would parse, read now: which files there are and their
    bytes, fixed before anything else runs (docs/gate.md, "Inputs before the pull request's
    code")."""
    return [[(path, label, _raw(path, label)) for path, label in folder]
            for folder in suite_paths(suite, entries, base_dir)]


def _raw(path: Path, label: str) -> bytes | GateError:
    """A file's bytes, or why it cannot be read: raised when its turn to be parsed comes."""
    try:
        return read_raw(path, label, FIXTURE_FILE)
    except GateError as exc:
        return exc


def suite_paths(suite: str, entries: list[str], base_dir: Path) -> list[list[tuple[Path, str]]]:
    """The files of each of a suite's fixture folders with their labels, in the order the suite
    reads them: named JSON files, then every ``*.json`` of its subfolders in name order."""
    declared = get(suite)
    names = declared.files
    subfolders = (*((declared.subfolder,) if declared.subfolder else ()), *declared.subfolders)
    folders = []
    for entry in entries:
        folder, label = _folder(entry, suite, base_dir)
        if not folder.is_dir():
            raise GateError(f"suites.{suite}.fixtures: folder {entry!r} not found ({label})")
        paths = [(folder / name, f"{label}/{name}") for name in names]
        present = [name for name in subfolders if (folder / name).is_dir()]
        if subfolders and not present:
            either = " or ".join(f"{label}/{name}" for name in subfolders)
            raise GateError(f"{either}: folder not found")
        for name in present:
            paths += [(path, f"{label}/{name}/{path.name}")
                      for path in sorted((folder / name).glob("*.json"))]
        folders.append(paths)
    return folders


def _folder(entry: str, suite: str, base_dir: Path) -> tuple[Path, str]:
    if entry == BUILTIN:
        return data_dir() / "fixtures" / suite, f"fixtures/{suite}"
    folder = (base_dir / entry).resolve()
    return folder, entry.rstrip("/")


FIXTURE_FILE = "fixture file"


def _read_json(path: Path, label: str) -> Any:
    return load_json(read_text(path, label, FIXTURE_FILE), label)
