"""The scoreboard groups a seam's cells under a heading of its own; one adapter has none."""

from __future__ import annotations

from membench_gate.gate.rules import decide
from membench_gate.model.results import Cell, Receipt, Results
from membench_gate.report.render import COMMENT_LIMIT, render


def results(recall: dict[str, float]) -> Results:
    cells = {f"{prefix}veto/files_known": Cell(metrics={"veto_recall_at_k": value},
                                               gold_total=10, failed=[])
             for prefix, value in recall.items()}
    cells.update({f"{prefix}veto/files_unknown": Cell(metrics={"veto_recall_at_k": 0.5},
                                                      gold_total=10, failed=[])
                  for prefix in recall})
    return Results(schema_version=1, fixtures_hash="h", config={"suites": {"veto": {"k": 5}}},
                   cells=cells, digests={c: {} for c in cells}, receipt=Receipt(), items={})


def headings(markdown: str) -> list[str]:
    return [line for line in markdown.splitlines() if line.startswith("####")]


def test_each_seams_cells_come_under_its_heading() -> None:
    base = results({"cli/": 0.9, "mcp/": 0.9})
    head = results({"cli/": 0.8, "mcp/": 0.9})
    shown = headings(render(decide(base, base, head), head, base, limit=COMMENT_LIMIT))
    assert shown[:2] == ["#### Seam cli", "##### cli/veto/files\\_known — 10/10 gold items pass"]
    # The cells without breaches, folded: each seam's under its heading again.
    assert shown[2:] == ["#### Seam cli", "##### cli/veto/files\\_unknown — 10/10 gold items pass",
                         "#### Seam mcp", "##### mcp/veto/files\\_known — 10/10 gold items pass",
                         "##### mcp/veto/files\\_unknown — 10/10 gold items pass"]


def test_one_adapter_keeps_its_headings() -> None:
    base = results({"": 0.9})
    head = results({"": 0.8})
    shown = headings(render(decide(base, base, head), head, base, limit=COMMENT_LIMIT))
    assert shown == ["#### veto/files\\_known — 10/10 gold items pass",
                     "#### veto/files\\_unknown — 10/10 gold items pass"]
