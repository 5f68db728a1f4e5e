"""Property tests (hypothesis) of the canonical files and the gate."""

from __future__ import annotations

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from membench_gate.gate.rules import decide
from membench_gate.model.results import Baseline, Cell, Justification, dumps_baseline, parse_baseline

# Hypothesis property tests: seconds each.
pytestmark = pytest.mark.slow

ids = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789-._", min_size=1, max_size=12)
values = st.one_of(
    st.integers(min_value=-10**6, max_value=10**6),
    st.floats(min_value=-1e6, max_value=1e6, allow_nan=False, allow_infinity=False),
)
metric_names = st.sampled_from(["veto_recall_at_k", "mrr", "net_at_1", "net_at_2.5", "coverage",
                                "push_precision", "false_fire_rate", "avg_injected_tokens"])
cell_names = st.sampled_from(["veto/files_known", "veto/files_unknown", "abstention/default",
                              "push/default"])


@st.composite
def cells(draw: st.DrawFn) -> Cell:
    items = draw(st.lists(ids, max_size=8, unique=True))
    failed = draw(st.lists(st.sampled_from(items), unique=True) if items else st.just([]))
    return Cell(metrics=draw(st.dictionaries(metric_names, values, max_size=5)),
                gold_total=len(items), failed=failed)


@st.composite
def baselines(draw: st.DrawFn) -> Baseline:
    cell_map = draw(st.dictionaries(cell_names, cells(), min_size=1, max_size=4))
    justification = draw(st.one_of(st.none(), st.builds(
        Justification, text=st.text(max_size=60), breaches=st.lists(ids, max_size=3))))
    return Baseline(schema_version=1, fixtures_hash=draw(st.sampled_from(["h1", "h2"])),
                    config={"suites": {}, "include_holdout": draw(st.booleans())},
                    cells=cell_map, justification=justification)


@settings(max_examples=150, deadline=None)
@given(baselines())
def test_canonical_write_read_round_trips_byte_for_byte(baseline: Baseline) -> None:
    text = dumps_baseline(baseline)
    assert text.endswith("\n")
    again = dumps_baseline(parse_baseline(text, "baseline.json"))
    assert again == text


@settings(max_examples=150, deadline=None)
@given(baselines())
def test_a_run_compared_with_its_own_baseline_always_passes(run: Baseline) -> None:
    # Zero-gated metrics are not drawn here, so nothing but the comparison can fail.
    reloaded = parse_baseline(dumps_baseline(run), "baseline.json")
    verdict = decide(reloaded, reloaded, run)
    assert verdict.verdict == "pass", verdict.breaches


@settings(max_examples=150, deadline=None)
@given(baselines(), baselines(), st.data())
def test_adding_a_failure_never_turns_a_regression_into_a_pass(
        base: Baseline, actual: Baseline, data: st.DataObject) -> None:
    before = decide(base, base, actual)
    assume(before.verdict == "regression")
    name = data.draw(st.sampled_from(sorted(actual.cells)))
    cell = actual.cells[name]
    extra = data.draw(ids)
    worse = actual.model_copy(deep=True)
    worse.cells[name] = Cell(metrics=cell.metrics, gold_total=cell.gold_total,
                             failed=[*cell.failed, extra])
    assert decide(base, base, worse).verdict == "regression"
