"""``membench-gate merge``: the shards of one run, put back together exactly.

Every cell is recomputed by the suite's own ``score`` from the union of the shards' item records,
never averaged from the shards' metrics, so the merged file is byte-identical to an unsharded run
apart from its receipt. A merge refuses anything that would not give that guarantee: parts of
different measurements (``fixtures_hash``, ``config``) or commits, a part that is not a shard, a
shard given twice or missing, an item in two parts or in the wrong shard, and a part whose own
cells do not follow from its items. :func:`check_parts` then holds each part to the working
tree's fixtures: every item record must follow from the answer it recorded, and the ids and
digests must be the fixtures' (:mod:`membench_gate.run.rederive`).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from membench_gate import __version__
from membench_gate.errors import GateError
from membench_gate.files import read_file
from membench_gate.model.canonical import canonical_dumps, normalize
from membench_gate.model.cells import scope_parts
from membench_gate.model.results import Cell, Receipt, Results, parse_results
from membench_gate.run.rederive import check_cells, records_by_suite, rederive, score_scope
from membench_gate.run.shard import Shard, parse_shard
from membench_gate.suites.common.repeats import as_cell
from membench_gate.suites.common.suite import Records

if TYPE_CHECKING:
    from membench_gate.config import Config

# What merge recomputes or writes anew; every other field (schema_version, fixtures_hash,
# config, …) must be the same in every part.
_PER_PART = ("cells", "digests", "items", "receipt")


def load_parts(paths: Sequence[Path]) -> list[tuple[str, Results]]:
    """Read and validate each part file; its label is the path as given."""
    return [(str(path), parse_results(read_file(path), str(path))) for path in paths]


def _shard(label: str, results: Results) -> Shard:
    if results.receipt.shard is None:
        raise GateError(f"{label}: receipt.shard: not a shard (write parts with run --shard I/N)")
    return parse_shard(results.receipt.shard, f"{label}: receipt.shard")


def _check_shards(parts: Sequence[tuple[str, Results, Shard]]) -> int:
    """Same N everywhere, each index once, none missing; returns N."""
    first_label, _, first = parts[0]
    seen: dict[int, str] = {}
    for label, _, shard in parts:
        if shard.count != first.count:
            raise GateError(f"{label}: receipt.shard: {shard} is not one of {first.count} shards "
                            f"like {first_label} ({first})")
        if shard.index in seen:
            raise GateError(f"{label}: receipt.shard: shard {shard} is also {seen[shard.index]}")
        seen[shard.index] = label
    missing = [str(i) for i in range(1, first.count + 1) if i not in seen]
    if missing:
        raise GateError(f"merge: shard{'s' if len(missing) > 1 else ''} {', '.join(missing)} "
                        f"of {first.count} missing")
    return first.count


def _check_same(parts: Sequence[tuple[str, Results, Shard]]) -> None:
    first_label, first, _ = parts[0]
    for label, results, _ in parts[1:]:
        for field in (f for f in Results.model_fields if f not in _PER_PART):
            if normalize(getattr(results, field)) != normalize(getattr(first, field)):
                raise GateError(f"{label}: {field} differs from {first_label}: the parts are not "
                                f"shards of one measurement")
        if results.receipt.git_sha != first.receipt.git_sha:
            raise GateError(f"{label}: receipt.git_sha {results.receipt.git_sha} differs from "
                            f"{first_label} ({first.receipt.git_sha}): shards of different commits")


def _records(label: str, results: Results, shard: Shard) -> dict[str, Records]:
    """The part's item records by scope (derived cells left out), each checked to be the
    shard's (an item's shard is its suite's and id's, whatever the seam)."""
    by_scope = records_by_suite(label, results)
    for scope, cells in by_scope.items():
        seam, suite = scope_parts(scope)
        for cell, items in cells.items():
            for ident in items:
                if not shard.holds(suite, ident):
                    where = f"{seam}/{cell}" if seam else cell
                    raise GateError(f"{label}: items.{where}: item {ident!r} is not in shard "
                                    f"{shard}")
    return by_scope


def merge(parts: Sequence[tuple[str, Results]]) -> Results:
    """The exact results of the run the ``parts`` are shards of."""
    if not parts:
        raise GateError("merge: no part files given")
    sharded = [(label, results, _shard(label, results)) for label, results in parts]
    count = _check_shards(sharded)
    _check_same(sharded)
    first = sharded[0][1]
    records: dict[str, Records] = {}
    digests: dict[str, dict[str, str]] = {}
    for label, results, shard in sharded:
        part_records = _records(label, results, shard)
        check_cells(label, results, part_records)  # no edited or foreign parts
        for scope, cells in part_records.items():
            for cell, items in cells.items():
                # Disjoint: each part holds only its own shard's items, and no shard comes twice.
                records.setdefault(scope, {}).setdefault(cell, {}).update(items)
        for cell, cell_digests in results.digests.items():
            digests.setdefault(cell, {}).update(cell_digests)
    cells: dict[str, Cell] = {}
    items: dict[str, dict[str, dict[str, Any]]] = {}
    for scope in sorted(records):
        run = score_scope(scope, records[scope], first.config, "merge")
        for name, cell in run.cells.items():
            cells[name] = as_cell(cell)
        items.update(run.items)
    return first.model_copy(update={
        "cells": cells,
        "items": items,
        "digests": {cell: {ident: digests[cell][ident] for ident in items[cell]
                           if ident in digests[cell]}
                    for cell in cells if cell in digests},
        "receipt": _receipt([results for _, results, _ in sharded], count),
    })


def check_parts(parts: Sequence[tuple[str, Results]], config: Config) -> None:
    """Each part against the fixtures of ``config`` (the working tree's): the parts must be of
    its measurement, and every item of a part must follow from the answer it recorded, with every
    gold item of the part's shard there and no other (:func:`membench_gate.run.rederive.rederive`)."""
    from membench_gate.run.measure import measurement_hash

    label, first = parts[0]  # (merge found every part of one measurement)
    measured = config.with_holdout(first.config.get("include_holdout") is True)
    if canonical_dumps(first.config) != canonical_dumps(measured.record()):
        raise GateError(f"{label}: config: the parts were produced under another config than "
                        f"{config.path.name} (suites, holdout or adapter differ): their items "
                        "cannot be checked against its fixtures")
    if first.fixtures_hash != measurement_hash(measured):
        raise GateError(f"{label}: fixtures_hash differs from the working tree's: the parts were "
                        "produced on other fixtures or another scorer version")
    for label, results in parts:
        rederive(label, results, measured, _shard(label, results))


def _receipt(parts: Sequence[Results], count: int) -> Receipt:
    """The merged run's receipt: when it began and how long its slowest shard took."""
    started = [p.receipt.started_at for p in parts if p.receipt.started_at]
    durations = [p.receipt.duration for p in parts if p.receipt.duration is not None]
    adapters = {p.receipt.adapter for p in parts}
    isolations = {p.receipt.isolation for p in parts}
    return Receipt(
        tool_version=__version__,
        git_sha=parts[0].receipt.git_sha,
        started_at=min(started) if started else None,
        duration=max(durations) if durations else None,
        adapter=adapters.pop() if len(adapters) == 1 else None,
        merged_shards=count,
        # sealed only if every shard was: one unsealed shard's answers could be anything
        isolation="sealed" if isolations == {"sealed"} else
        "unsealed" if isolations - {None} else None,
    )
