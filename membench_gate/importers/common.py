"""What every importer shares: reading the source, one-line errors, deterministic output."""

from __future__ import annotations

import hashlib
import json
import re
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from membench_gate.errors import GateError
from membench_gate.files import read_text

IMPORTER_VERSION = 1


class SourceError(GateError):
    """A source file that is not in the expected format: one line naming file, item and field."""


@dataclass
class Imported:
    """A converted data set: the fixture files of one suite and what ``SOURCE.json`` records."""

    format: str
    suite: str
    files: dict[str, Any]  # fixture file name -> JSON data
    sources: list[Path]
    mapping: dict[str, str]
    counts: dict[str, int] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    root: Path | None = None  # inputs are named relative to this folder (else by file name)
    # Files whose text depends on where they are written (a path to paste into membench.toml).
    render: Callable[[Path], dict[str, str]] | None = None
    # Subfolders the import owns: a ``*.json`` left there by an earlier import is removed.
    replaces: tuple[str, ...] = ()
    # Suite -> its fixture folders under OUT, loaded before anything is written (default: OUT
    # itself as the fixtures of ``suite``).
    loads: dict[str, list[str]] | None = None
    enable: str = ""  # how to enable the folder, when not one [suites.<suite>] line ({out})

    def summary(self) -> str:
        counts = ", ".join(f"{value:,} {key}" for key, value in self.counts.items())
        return f"{self.format} → {self.suite} fixtures: {counts}"


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def read_json(path: Path, expected: str) -> Any:
    """Parse a JSON source file; any failure names the file and the format expected."""
    text = read_text(path, str(path), "file")
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise SourceError(f"{path}:{exc.lineno}:{exc.colno}: invalid JSON: {exc.msg} "
                          f"(expected {expected})") from exc


def read_json_array(path: Path, expected: str, items: str) -> list[Any]:
    """A source file that is one JSON array of ``items``; anything else names the format."""
    data = read_json(path, expected)
    if not isinstance(data, list):
        raise SourceError(f"{path}: expected a JSON array of {items} ({expected})")
    return data


def read_jsonl(path: Path, expected: str) -> list[tuple[int, Any]]:
    """(line number, parsed object) for every non-blank line of a JSON Lines file."""
    text = read_text(path, str(path), "file")
    rows = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            rows.append((number, json.loads(line)))
        except json.JSONDecodeError as exc:
            raise SourceError(f"{path}:{number}: invalid JSON line: {exc.msg} "
                              f"(expected {expected})") from exc
    return rows


class Fields:
    """Typed access to one source object, with errors that name the item and the format."""

    def __init__(self, obj: Any, where: str, expected: str) -> None:
        if not isinstance(obj, dict):
            raise SourceError(f"{where}: expected a JSON object ({expected})")
        self.obj = obj
        self.where = where
        self.expected = expected

    def fail(self, message: str) -> SourceError:
        return SourceError(f"{self.where}: {message} (expected {self.expected})")

    def _get(self, key: str, types: tuple[type, ...], kind: str, required: bool) -> Any:
        if key not in self.obj or self.obj[key] is None:
            if required:
                raise self.fail(f"missing field {key!r}")
            return None
        value = self.obj[key]
        if not isinstance(value, types) or (isinstance(value, bool) and bool not in types):
            raise self.fail(f"field {key!r} must be {kind}, not {type(value).__name__}")
        return value

    def text(self, key: str, required: bool = True) -> Any:
        return self._get(key, (str,), "a string", required)

    def id(self, key: str) -> str:
        """An identifier: strings as they are, integers as their decimal form."""
        value = self._get(key, (str, int), "a string or an integer", True)
        return str(value)

    def array(self, key: str, required: bool = True) -> Any:
        return self._get(key, (list,), "a list", required)

    def number(self, key: str, required: bool = True) -> Any:
        return self._get(key, (int, float), "a number", required)

    def has(self, key: str) -> bool:
        return self.obj.get(key) is not None


def recall_fixtures(format_: str, source: Path, corpus: list[dict[str, Any]],
                    queries: list[dict[str, Any]], *, mapping: dict[str, str],
                    counts: dict[str, int], notes: list[str]) -> Imported:
    """The recall suite's two files from one source file. The query counts are taken from what is
    written, not from the importer's own tallies, so every recall summary opens alike and cannot
    disagree with the fixtures."""
    return Imported(
        format=format_, suite="recall",
        files={"corpus.json": corpus, "queries.json": queries},
        sources=[source],
        mapping=mapping,
        counts={"queries": len(queries),
                "unanswerable": sum(1 for query in queries if not query["gold"]), **counts},
        notes=notes,
    )


def tally_notes(*tallies: tuple[int, str]) -> list[str]:
    """One note per ``(count, template)`` whose count is not 0, the count put in the template's
    ``{}``: what an importer left out or changed is said only when it happened."""
    return [template.format(count) for count, template in tallies if count]


def category_name(value: str) -> str:
    """A source's category or type as a cell name: anything but letters, digits, ``_ . -`` → ``-``."""
    cleaned = re.sub(r"[^A-Za-z0-9_.-]+", "-", value).strip("-.")
    return cleaned or "default"


def iso(moment: datetime) -> str:
    """``2023-05-20T02:21:00Z``."""
    return moment.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def dumps_items(items: Any) -> str:
    """Fixture JSON: one item per line (diffable, compact), keys sorted, UTF-8, trailing newline."""
    if isinstance(items, list):
        if not items:
            return "[]\n"
        lines = ",\n".join("  " + json.dumps(i, sort_keys=True, ensure_ascii=False) for i in items)
        return "[\n" + lines + "\n]\n"
    return json.dumps(items, sort_keys=True, ensure_ascii=False, indent=2) + "\n"


def source_record(imported: Imported) -> dict[str, Any]:
    return {
        "format": imported.format,
        "suite": imported.suite,
        "importer_version": IMPORTER_VERSION,
        "inputs": [{"file": _input_name(path, imported.root), "sha256": sha256_file(path)}
                   for path in imported.sources],
        "mapping": imported.mapping,
        "counts": imported.counts,
        "notes": imported.notes,
    }


def _input_name(path: Path, root: Path | None) -> str:
    return path.relative_to(root).as_posix() if root is not None else path.name


def write_folder(imported: Imported, out: Path) -> None:
    """Write the fixture files and ``SOURCE.json`` (each atomically; nothing before all is built)."""
    from membench_gate.files import write_atomic

    if out.exists() and not out.is_dir():
        raise GateError(f"--out {out}: exists and is not a folder")
    texts = {name: dumps_items(data) for name, data in imported.files.items()}
    loads = {imported.suite: ["."]} if imported.loads is None else imported.loads
    _check_loadable(loads, texts, out)
    if imported.render is not None:
        texts.update(imported.render(out))
    texts["SOURCE.json"] = json.dumps(source_record(imported), sort_keys=True,
                                      ensure_ascii=False, indent=2) + "\n"
    for name, text in texts.items():
        write_atomic(out / name, text)
    for sub in imported.replaces:
        for stale in sorted((out / sub).glob("*.json")):
            if stale.relative_to(out).as_posix() not in texts:
                stale.unlink()


def _check_loadable(loads: dict[str, list[str]], texts: dict[str, str], out: Path) -> None:
    """Load the fixtures exactly as a run will, before writing anything: what the source holds
    but a fixture may not (a stale trap aimed at a superseded decision, …) is an error now."""
    from membench_gate.suites.common.fixtures import load_suite

    if not loads:
        return
    with tempfile.TemporaryDirectory(prefix="membench-import-") as scratch:
        for name, text in texts.items():
            (Path(scratch) / name).parent.mkdir(parents=True, exist_ok=True)
            (Path(scratch) / name).write_text(text, encoding="utf-8")
        try:
            for suite, folders in loads.items():
                # Folders named by their scratch path, so that an error names them under OUT.
                load_suite(suite, [str(Path(scratch) / f) for f in folders], Path(scratch),
                           include_holdout=True)
        except GateError as exc:
            raise GateError(str(exc).replace(scratch, str(out))) from exc
