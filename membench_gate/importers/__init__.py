"""Importers: the data sets memory teams already have → ordinary fixture folders.

``membench-gate import FORMAT SRC… --out DIR`` reads the user's own copy of a published data set (it
is never bundled: licences vary) and writes the fixture files of one suite (BrainBench: of the
push and writeback suites, with the ``[suites.*]`` tables to paste) plus ``SOURCE.json``:
each input file's name and sha256, the importer's version and the field mapping, so a fixture
folder always says where it came from. Import is deterministic — the same input gives the same
bytes — and a file of the wrong shape is one error line naming the file, the item, the missing
field and the format that was expected.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from membench_gate.importers.common import Imported, write_folder


@dataclass(frozen=True)
class Format:
    """One importable format: how many source files it takes and what they are."""

    name: str
    suite: str
    sources: tuple[str, ...]
    convert: Callable[[list[Path]], Imported]


def formats() -> dict[str, Format]:
    """Format name → its importer (modules imported on demand)."""
    from membench_gate.importers import brainbench, locomo, longmemeval, veribench, vetobench

    return {
        "vetobench": Format("vetobench", "veto", ("CORPUS", "SCENARIOS"), vetobench.convert),
        "veribench": Format("veribench", "abstention", ("ANSWERABLE.jsonl", "UNANSWERABLE.jsonl"),
                            veribench.convert),
        "longmemeval": Format("longmemeval", "recall", ("FILE",), longmemeval.convert),
        "locomo": Format("locomo", "recall", ("FILE",), locomo.convert),
        "brainbench": Format("brainbench", "push, writeback", ("DIR",), brainbench.convert),
    }


def import_data(name: str, sources: list[Path], out: Path) -> Imported:
    """Convert ``sources`` with the named importer and write the fixture folder ``out``."""
    from membench_gate.errors import GateError

    spec = formats().get(name)
    if spec is None:
        raise GateError(f"import: unknown format {name!r} (one of {', '.join(formats())})")
    if len(sources) != len(spec.sources):
        raise GateError(f"import {name}: expected {len(spec.sources)} source file(s) "
                        f"({' '.join(spec.sources)}), got {len(sources)}")
    imported = spec.convert(sources)
    write_folder(imported, out)
    return imported
