"""Stochastic cells in the scoreboard and the terminal report: counts, intervals, p-values, and
the word "stochastic" where a per-item comparison would otherwise be read."""

from __future__ import annotations

import pytest

from membench_gate.gate.rules import decide
from membench_gate.model.results import Baseline, Cell, Results
from membench_gate.model.verdict import Verdict
from membench_gate.report.render import render
from membench_gate.report.summary import verdict_summary

pytestmark = pytest.mark.slow  # scipy's first import takes seconds

R = 5


def cell(passes: list[int]) -> Cell:
    counts = {f"scn-{i:02d}": n for i, n in enumerate(passes)}
    return Cell(metrics={"veto_recall_at_k": sum(passes) / (R * len(passes))},
                gold_total=len(passes), failed=[i for i, n in counts.items() if n < R],
                repeats=R, passes=counts)


def results(known: list[int], unknown: list[int]) -> Results:
    return Results(schema_version=1, fixtures_hash="h", config={"suites": {}},
                   cells={"veto/files_known": cell(known), "veto/files_unknown": cell(unknown)},
                   receipt={"tool_version": "0"}, items={})


def gated() -> tuple[Verdict, Results, Baseline]:
    base = results([5] * 18 + [4, 4], [3] * 20).to_baseline()
    head = results([3] * 20, [3] * 19 + [2])
    return decide(base, base, head), head, base


def test_the_scoreboard_shows_counts_intervals_and_p_values() -> None:
    verdict, head, base = gated()
    text = render(verdict, head, base, limit=None)
    assert "### Stochastic cells: compared by their pooled counts, not item by item" in text
    known = next(line for line in text.splitlines() if line.startswith("| veto/files\\_known |"))
    assert "98/100 (98%)" in known and "60/100 (60%)" in known and "❌ significant drop" in known
    assert "\\[0.930, 0.994\\]" in known  # the base's Wilson 95% interval, escaped
    assert "&lt; 0.0001" in known  # the p-value: "<" escaped as every value is
    unknown = next(line for line in text.splitlines()
                   if line.startswith("| veto/files\\_unknown |"))
    assert "✅ lower, within the noise" in unknown
    assert "stochastic: 60/100 passes (20 gold items × 5 repeats)" in text
    assert "| ❌ stochastic |" in text and "| ✅ stochastic |" in text
    # Items that fail some repeats are not listed as newly failing.
    assert "Newly failing items" not in text
    assert "(stochastic, significant)" in text.splitlines()[2]  # the headline


def test_the_terminal_report_says_stochastic() -> None:
    verdict, head, base = gated()
    text = verdict_summary(verdict, head, base)
    assert "stochastic cells, compared by their pooled counts" in text
    assert "veto/files_known: 98/100 → 60/100 passes, p < 0.0001 (Holm): a significant drop" \
        in text


def test_a_deterministic_scoreboard_has_no_stochastic_section() -> None:
    plain = Results(schema_version=1, fixtures_hash="h", config={"suites": {}},
                    cells={"veto/files_known": Cell(metrics={"veto_recall_at_k": 0.9},
                                                    gold_total=10, failed=["a"])},
                    receipt={"tool_version": "0"}, items={})
    verdict = decide(plain.to_baseline(), plain.to_baseline(), plain)
    assert "stochastic" not in verdict.model_dump_json()
    assert "tochastic" not in render(verdict, plain, plain.to_baseline(), limit=None)


def test_when_every_cell_is_stochastic_no_item_is_said_to_be_compared_one_to_one() -> None:
    verdict, head, base = gated()
    text = render(verdict, head, base, limit=None)
    assert "Every cell is stochastic: each is compared by its pooled counts, not item by item." \
        in text
    assert "every gold item is compared one to one" not in text
    summary = verdict_summary(verdict, head, base)
    assert "; same fixtures and options as the base\n" in summary
    assert "items compared one to one" not in summary
    # With a deterministic cell beside them, its items are compared one to one, and the
    # stochastic cells are the exception.
    mixed = head.model_copy(update={"cells": {**head.cells, "veto/plain": Cell(
        metrics={"veto_recall_at_k": 0.9}, gold_total=10, failed=["a"])}})
    mixed_base = mixed.model_copy(update={"cells": {**base.cells, "veto/plain": Cell(
        metrics={"veto_recall_at_k": 0.9}, gold_total=10, failed=["a"])}}).to_baseline()
    verdict = decide(mixed_base, mixed_base, mixed)
    text = render(verdict, mixed, mixed_base, limit=None)
    assert "every gold item is compared one to one. Stochastic cells are the exception" in text
    assert "items compared one to one" in verdict_summary(verdict, mixed, mixed_base)
