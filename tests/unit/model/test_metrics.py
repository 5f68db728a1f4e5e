"""``membench_gate/model/metrics.py``: the one metric registry — every metric with a direction, a
gate kind and a glossary line, every cell a suite produces known — and what it answers about a
metric name."""

from __future__ import annotations

import json
from typing import get_args

import pytest

from membench_gate import suites
from membench_gate.model.metrics import (
    CELLS,
    CONDITIONS,
    DERIVED_CELLS,
    REGISTRY,
    SHARED_INVARIANTS,
    Direction,
    GateKind,
    Unit,
    at_worst,
    explain,
    family,
    format_number,
    gate_kind,
    is_adverse,
    known_cell,
    label,
    net_metric,
    span,
    spec,
    violations,
)
from tests.support.paths import REPO

# -- the registry's invariants --------------------------------------------------------------------


@pytest.mark.parametrize("name", REGISTRY)
def test_every_metric_has_a_direction_a_gate_kind_and_a_glossary_line(name: str) -> None:
    metric = REGISTRY[name]
    assert metric.name == name
    assert metric.direction in get_args(Direction)
    assert metric.kind in get_args(GateKind)
    assert metric.unit in get_args(Unit)
    assert metric.glossary.endswith(".") and "\n" not in metric.glossary
    assert metric.suite in CONDITIONS
    assert set(metric.gated_in) <= set(CONDITIONS[metric.suite])  # conditions that exist


def test_a_zero_gated_metric_is_a_count_that_must_not_rise() -> None:
    zero = [m for m in REGISTRY.values() if m.kind == "zero"]
    assert zero
    assert all((m.direction, m.unit) == ("lower", "count") for m in zero)


def test_the_registry_lists_the_cells_of_every_registered_suite_and_no_other() -> None:
    assert set(CONDITIONS) == set(suites.NAMES)
    assert set(CELLS) >= DERIVED_CELLS
    assert all(known_cell(cell) for cell in CELLS)
    assert {m.suite for m in REGISTRY.values()} == set(CONDITIONS)  # every suite has a metric


def test_every_cell_and_metric_of_the_committed_baseline_is_known() -> None:
    # The baseline the dogfood gate blessed: what the suites produce on the built-in fixtures
    # (every suite but the live ones, which need an LLM).
    cells = json.loads((REPO / "baselines" / "main.json").read_text(encoding="utf-8"))["cells"]
    live = {name for name in suites.NAMES if suites.get(name).live}
    assert {cell.partition("/")[0] for cell in cells} == set(CONDITIONS) - live
    for cell, content in cells.items():
        assert known_cell(cell), cell
        suite = cell.partition("/")[0]
        for name in content["metrics"]:
            # (a zero-gated metric another suite registers may be reported too, declared so)
            assert spec(name).suite == suite or name in SHARED_INVARIANTS.get(suite, ()), \
                (cell, name)


def test_a_name_the_registry_does_not_hold_is_shown_not_gated() -> None:
    assert spec("recall_at_k").name == "?"
    assert gate_kind("veto/files_known", "recall_at_k") == "report"
    with pytest.raises(KeyError, match=r"unknown metric 'recall_at_k' \(did you mean '[a-z_]+'\?\); "
                                        r"known metrics: .*mrr"):
        explain("recall_at_k")
    with pytest.raises(KeyError, match=r"unknown metric 'veto_recal' \(did you mean "
                                        r"'veto_recall_at_k'\?\)"):
        explain("veto_recal")
    with pytest.raises(KeyError, match=r"unknown metric 'zzzz'; known"):
        explain("zzzz")


def test_every_net_lambda_is_the_one_net_metric() -> None:
    assert spec("net_at_5") is spec("net_at_2.5") is REGISTRY["net_at_<λ>"]
    assert family("net_at_5") == family("net_at_1") == "net_at_<λ>"
    assert family("mrr") == "mrr"


def test_the_glossary_has_one_line_per_metric() -> None:
    lines = explain().splitlines()
    assert [line.split(" ", 1)[0] for line in lines] == list(REGISTRY)
    assert explain("net_at_5").startswith("net_at_5 (abstention, ↑ better, gated on default, "
                                          "report elsewhere): NET(λ)")


# -- what a metric is ---------------------------------------------------------------------------


def test_recall_metrics_are_registered_once() -> None:
    assert gate_kind("recall/temporal", "recall_any_at_k") == "gated"
    assert gate_kind("recall/1", "recall_all_at_k") == "gated"
    assert gate_kind("recall/default", "ndcg_at_k") == "report"
    assert gate_kind("recall/5", "false_answer_rate") == "gated"
    assert gate_kind("veto/lifecycle", "stale_surfaced") == "gated"
    assert "↓ better" in explain("false_answer_rate") and "↓ better" in explain("stale_surfaced")
    assert known_cell("recall/knowledge-update") and known_cell("veto/lifecycle")
    assert not known_cell("recall/") and not known_cell("veto/other")


def test_controls_passing_is_zero_gated() -> None:
    # What makes a control that stops failing a REGRESSION in every run.
    assert gate_kind("abstention/default", "controls_passing") == "zero"
    assert gate_kind("push/default", "source_isolation_violations") == "zero"


def test_net_is_gated_on_the_default_cell_only() -> None:
    assert gate_kind("abstention/default", "net_at_2") == "gated"
    assert gate_kind("abstention/control_shuffled", "net_at_2") == "report"


@pytest.mark.parametrize(("name", "value", "worst"), [
    ("veto_recall_at_k", 0.0, True), ("veto_recall_at_k", 0.1, False),
    ("false_fire_rate", 1.0, True), ("false_fire_rate", 0.9, False),
    ("net_at_5", -5.0, True), ("net_at_5", -4.9, False), ("net_at_1", 0.0, False),
    ("source_isolation_violations", 0.0, False), ("stale_surfaced", 0.0, False),
])
def test_at_worst_knows_each_metrics_direction_and_range(name: str, value: float,
                                                         worst: bool) -> None:
    from membench_gate.model.metrics import at_worst

    assert at_worst(name, value) is worst


def test_an_unknown_metric_is_never_at_its_worst() -> None:
    assert not at_worst("recall_at_k", 0.0)


@pytest.mark.parametrize(("name", "base", "head", "adverse"), [
    ("veto_recall_at_k", 0.9, 0.8, True), ("veto_recall_at_k", 0.8, 0.9, False),
    ("false_fire_rate", 0.1, 0.2, True), ("false_fire_rate", 0.2, 0.1, False),
    ("mrr", 0.5, 0.5, False), ("false_fire_rate", 0.5, 0.5, False),
])
def test_an_adverse_move_reads_the_metrics_direction(name: str, base: float, head: float,
                                                     adverse: bool) -> None:
    assert is_adverse(name, base, head) is adverse


def test_spans_of_a_rate_and_of_net() -> None:
    assert (span("mrr"), span("net_at_2.5"), span("controls_passing")) == (1.0, 3.5, 1.0)


@pytest.mark.parametrize(("name", "options", "shown"), [
    ("veto_recall_at_k", {"k": 5}, "veto recall@5"),
    ("veto_recall_at_k", None, "veto recall@k"),
    ("veto_recall_at_k", {"k": True}, "veto recall@k"),  # a bool is not a k
    ("recall_any_at_k", {"k": 10}, "recall any@10"),
    ("net_at_2.5", None, "NET(2.5)"),
    ("false_fire_rate", None, "false fire rate"),
    ("mrr", None, "MRR"),
    ("some_new_at_k", {"k": 3}, "some new@3"),  # an unknown name, read from its spelling
])
def test_labels_are_what_people_call_a_metric(name: str, options: dict | None,
                                              shown: str) -> None:
    assert label(name, options) == shown


@pytest.mark.parametrize(("lam", "name"), [(1, "net_at_1"), (1.0, "net_at_1"), (2.5, "net_at_2.5"),
                                           (0.00001, "net_at_0.00001"), (10, "net_at_10")])
def test_net_names_are_plain_decimals(lam: float, name: str) -> None:
    assert net_metric(lam) == name
    assert format_number(lam) == name.removeprefix("net_at_")


def test_a_shared_invariant_names_its_offenders_in_the_suite_that_reports_it() -> None:
    assert [m.name for m, _ in violations("writeback")] == ["source_isolation_violations"]
    assert "source_isolation_violations" in [m.name for m, _ in violations("push")]
    assert violations("veto") == []
