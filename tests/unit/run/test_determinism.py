"""``membench_gate/run/determinism.py``: where two runs of the same config differ — the first
cell, item and field, per-item detail first — or None when they agree."""

from __future__ import annotations

from typing import Any

from membench_gate.model.results import Cell, Receipt, Results
from membench_gate.run.determinism import first_difference


def hits(*pairs: tuple[str, float]) -> list[dict[str, Any]]:
    return [{"id": i, "score": s} for i, s in pairs]


def results(items: dict[str, dict[str, dict[str, Any]]] | None = None, mrr: float = 0.5,
            sha: str = "a" * 40) -> Results:
    items = items if items is not None else {"veto/files_known": {
        "scn-1": {"outcome": "pass", "hits": hits(("d1", 0.9), ("d2", 0.8))},
        "scn-2": {"outcome": "fail", "hits": hits(("d3", 0.7))}}}
    return Results(schema_version=1, fixtures_hash="f" * 64, config={"suites": {}},
                   cells={"veto/files_known": Cell(metrics={"mrr": mrr}, gold_total=2,
                                                   failed=["scn-2"])},
                   digests={}, items=items, receipt=Receipt(tool_version="t", git_sha=sha))


def test_runs_that_agree_have_no_difference_whatever_their_receipts() -> None:
    assert first_difference(results(), results(sha="b" * 40)) is None


def test_a_tie_ordered_the_other_way_is_named_by_item_and_field() -> None:
    swapped = results({"veto/files_known": {
        "scn-1": {"outcome": "pass", "hits": hits(("d2", 0.8), ("d1", 0.9))},
        "scn-2": {"outcome": "fail", "hits": hits(("d3", 0.7))}}})
    assert first_difference(results(), swapped) == \
        "veto/files_known#scn-1 field hits[0].id: 'd1' then 'd2'"


def test_a_different_length_is_named_with_both_lengths() -> None:
    shorter = results({"veto/files_known": {
        "scn-1": {"outcome": "pass", "hits": hits(("d1", 0.9))},
        "scn-2": {"outcome": "fail", "hits": hits(("d3", 0.7))}}})
    assert first_difference(results(), shorter) == \
        "veto/files_known#scn-1 field hits (length 2 then 1)"


def test_an_item_in_one_run_only_is_named() -> None:
    fewer = results({"veto/files_known": {"scn-1": {"outcome": "pass",
                                                    "hits": hits(("d1", 0.9), ("d2", 0.8))}}})
    assert first_difference(results(), fewer) == "veto/files_known#scn-2: present in one run only"


def test_items_come_before_cells() -> None:
    # The metric moved too, but the item detail is where a tie order shows.
    other = results({"veto/files_known": {
        "scn-1": {"outcome": "pass", "hits": hits(("d1", 0.9), ("d2", 0.8))},
        "scn-2": {"outcome": "pass", "hits": hits(("d3", 0.7))}}}, mrr=0.25)
    assert first_difference(results(), other) == \
        "veto/files_known#scn-2 field outcome: 'fail' then 'pass'"


def test_a_cell_difference_is_named_when_the_items_agree() -> None:
    assert first_difference(results(), results(mrr=0.25)) == \
        "cells.veto/files_known.metrics.mrr: 0.5 then 0.25"


def test_numbers_are_compared_as_the_file_writes_them() -> None:
    # Rounded to 4 decimals: what differs below that is not in the file either.
    assert first_difference(results(mrr=0.5), results(mrr=0.50001)) is None
