"""gate.decide on cells of several seams (``<seam>/<suite>/<condition>``): the rules read a
seam's cell as they read a two-part one, and a seam added or dropped is cells added or dropped."""

from __future__ import annotations

from typing import Any

from membench_gate.gate.rules import decide, floors_of
from membench_gate.model.results import Baseline, Cell, Receipt, Results

SEAMS = ("mcp", "cli")


def seam_cells(seam: str, recall: float = 0.9, failed: tuple[str, ...] = ("scn-09",),
               leaks: int = 0) -> dict[str, Cell]:
    return {
        f"{seam}/veto/files_known": Cell(metrics={"veto_recall_at_k": recall, "mrr": 0.7},
                                         gold_total=10, failed=list(failed)),
        f"{seam}/push/default": Cell(metrics={"push_precision": 0.9,
                                              "source_isolation_violations": leaks},
                                     gold_total=2, failed=["c1.t1"] if leaks else []),
    }


def make(*cell_tables: dict[str, Cell], items: dict[str, Any] | None = None) -> Results:
    cells = {name: c for table in cell_tables for name, c in table.items()}
    return Results(schema_version=1, fixtures_hash="h1",
                   config={"suites": {}, "adapters": {s: {} for s in SEAMS}}, cells=cells,
                   digests={name: {} for name in cells}, receipt=Receipt(),
                   items=items or {})


def breach_kinds(verdict: Any) -> list[tuple[str, str]]:
    return sorted((b.key, b.kind) for b in verdict.breaches)


def test_one_seam_regressing_is_a_regression_naming_that_seams_cell() -> None:
    base = make(seam_cells("mcp"), seam_cells("cli"))
    actual = make(seam_cells("mcp"), seam_cells("cli", recall=0.8, failed=("scn-04", "scn-09")))
    verdict = decide(base, base, actual)
    assert verdict.verdict == "regression"
    assert breach_kinds(verdict) == [("cli/veto/files_known#scn-04", "newly-failed"),
                                     ("cli/veto/files_known:veto_recall_at_k", "metric")]
    assert verdict.newly_failed == {"cli/veto/files_known": ["scn-04"]}


def test_a_seam_added_is_new_cells_reported_not_a_breach() -> None:
    base = make(seam_cells("mcp"))
    actual = make(seam_cells("mcp"), seam_cells("cli", recall=0.1))
    verdict = decide(base, base, actual)
    assert (verdict.verdict, verdict.breaches) == ("pass", [])
    assert "new cell: cli/veto/files_known (reported, not gated)" in verdict.notes


def test_a_seam_dropped_is_its_cells_missing() -> None:
    base = make(seam_cells("mcp"), seam_cells("cli"))
    actual = make(seam_cells("mcp"))
    verdict = decide(base, base, actual)
    assert verdict.verdict == "regression"
    assert breach_kinds(verdict) == [("cli/push/default", "cell-missing"),
                                     ("cli/veto/files_known", "cell-missing")]


def test_an_invariant_broken_in_a_seam_names_that_seams_offending_items_only() -> None:
    def leaked(page: str) -> dict[str, Any]:
        return {"outcome": "fail", "foreign": [page]}

    items = {"cli/push/default": {"c1.t1": leaked("other:cli-page"), "c1.t2": {"foreign": []}},
             "mcp/push/default": {"c1.t1": {"foreign": []}, "c1.t2": leaked("other:mcp-page")}}
    base = make(seam_cells("mcp"), seam_cells("cli"))
    actual = make(seam_cells("mcp", leaks=1), seam_cells("cli", leaks=1), items=items)
    verdict = decide(base, base, actual)
    zero = {b.key: [(o.cell, o.id, o.ids) for o in b.offenders]
            for b in verdict.breaches if b.kind == "zero"}
    assert zero == {
        "cli/push/default:source_isolation_violations": [
            ("cli/push/default", "c1.t1", ["other:cli-page"])],
        "mcp/push/default:source_isolation_violations": [
            ("mcp/push/default", "c1.t2", ["other:mcp-page"])]}


def test_a_floor_on_a_seams_cell_holds_that_seam_only() -> None:
    base = make(seam_cells("mcp"), seam_cells("cli"))
    actual = make(seam_cells("mcp", recall=0.6), seam_cells("cli"))
    floors = floors_of({}, {"cli/veto/files_known:veto_recall_at_k": 0.85})
    assert decide(base, actual, actual, floors=floors,
                  allow_regression="local try").verdict == "pass"
    floors = floors_of({"mcp/veto/files_known:veto_recall_at_k": 0.85}, {})
    verdict = decide(base, actual, actual, floors=floors)
    assert verdict.verdict == "regression"
    assert ("mcp/veto/files_known:veto_recall_at_k", "floor") in breach_kinds(verdict)


def test_a_baseline_of_one_adapter_against_seams_is_every_cell_missing() -> None:
    base = Baseline(schema_version=1, fixtures_hash="h1", config={"suites": {}},
                    cells={"veto/files_known": seam_cells("x")["x/veto/files_known"]})
    verdict = decide(base, base, make(seam_cells("mcp")))
    assert ("veto/files_known", "cell-missing") in breach_kinds(verdict)
