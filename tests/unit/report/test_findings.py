"""``membench_gate/report/findings.py``: what a verdict means in words — keys read as cell, metric
and item, moves said as people say them, and why an item failed — as plain, unescaped data."""

from __future__ import annotations

import pytest

from membench_gate.model.results import Baseline, Cell
from membench_gate.report.findings import (
    delta,
    delta_text,
    judgement,
    option_k,
    split_key,
    suite_options,
)


@pytest.mark.parametrize(("key", "parts"), [
    ("veto/files_known:mrr", ("veto/files_known", "mrr", None)),
    ("veto/files_known#scn:option:k", ("veto/files_known", None, "scn:option:k")),  # an id
    ("push/default", ("push/default", None, None)),
    ("veto:option:k", ("veto:option:k", None, None)),  # not a cell: whole
    ("gate:baseline-moved", ("gate:baseline-moved", None, None)),
])
def test_split_key_reads_cell_metric_and_item(key: str,
                                              parts: tuple[str, str | None, str | None]) -> None:
    assert split_key(key) == parts


@pytest.mark.parametrize(("name", "base", "head", "text"), [
    ("veto_recall_at_k", 0.9655, 0.7241, "−24.1 pts"),
    ("false_fire_rate", 0.1, 0.05, "−5 pts"),
    ("source_isolation_violations", 0, 2, "+2"),   # a count moves in units
    ("mrr", 0.5, 0.50001, "0"),                  # equal once rounded to 4 decimals
    ("mrr", None, 0.5, "—"), ("mrr", 0.5, "n/a", "—"), ("mrr", True, 0.5, "—"),
])
def test_delta_text_says_the_move_as_people_say_it(name: str, base: object, head: object,
                                                    text: str) -> None:
    assert delta_text(name, base, head) == text


def test_delta_is_rounded_and_none_when_a_side_is_not_a_number() -> None:
    assert delta("mrr", 0.1, 0.3) == 0.2
    assert delta("mrr", float("nan"), 0.3) is None


@pytest.mark.parametrize(("name", "base", "head", "word"), [
    ("veto_recall_at_k", 0.8, 0.9, "better"), ("veto_recall_at_k", 0.9, 0.8, "worse"),
    ("false_fire_rate", 0.2, 0.1, "better"), ("false_fire_rate", 0.1, 0.2, "worse"),
    ("mrr", 0.5, 0.5, ""), ("mrr", None, 0.5, ""),
])
def test_judgement_reads_the_metrics_direction(name: str, base: object, head: object,
                                               word: str) -> None:
    assert judgement(name, base, head) == word


def test_suite_options_and_k_come_from_the_cells_suite() -> None:
    config = {"suites": {"veto": {"k": 5}, "push": {"budget": 3}, "recall": {"k": True}}}
    baseline = Baseline(schema_version=1, fixtures_hash="f", config=config,
                        cells={"veto/files_known": Cell(metrics={}, gold_total=0, failed=[])})
    assert suite_options(baseline, "veto/lifecycle") == {"k": 5}
    assert suite_options(baseline, "writeback/fidelity") == {}
    assert suite_options(None, "veto/lifecycle") == {}
    assert (option_k(baseline, "veto/files_known"), option_k(baseline, "push/default"),
            option_k(baseline, "recall/temporal")) == (5, None, None)


def test_why_names_what_outranked_the_gold() -> None:
    from membench_gate.report.findings import ItemStory

    hits = [("d-1", 0.9), ("d-2", 0.8), ("gold", 0.7)]
    assert ItemStory("c/x", "i", gold=["gold"], came_back=hits).why(5) == \
        "gold gold: rank 3; ranked above it: d-1 (0.9), d-2 (0.8)"
    assert ItemStory("c/x", "i", gold=["gold"], came_back=hits[2:], abstained=True).why(5) == \
        "gold gold: rank 1; the memory abstained"
    assert ItemStory("c/x", "i", gold=["gold"], came_back=hits[:2]).why(5) == \
        "gold gold: not in the top 5; came back instead: d-1 (0.9), d-2 (0.8)"


def test_the_why_line_gives_rank_before_and_after_only_when_the_rank_fell_out() -> None:
    from membench_gate.report.findings import ItemStory

    abstained = ItemStory("abstention/default", "p1", gold=["f1"], rank=1,
                          came_back=[("f1", 0.9)], abstained=True)
    assert abstained.why(5, 5) == "gold f1: rank 1; the memory abstained"  # the cause: abstaining
    fell = ItemStory("veto/files_known", "scn-1", gold=["d1"], rank=7,
                     came_back=[("d2", 0.5), ("d3", 0.4)])
    assert fell.why(5, 5).startswith("gold d1: in the top 5 at base → rank 7 now; ")
    assert fell.why(5, None).startswith("gold d1: rank 7; ")  # no base: no before
