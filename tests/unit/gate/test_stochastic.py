"""The statistical gate of stochastic cells (docs/gate.md, "Stochastic cells"): pure, no git."""

from __future__ import annotations

import math

import pytest
from pydantic import ValidationError

from membench_gate.gate.rules import decide
from membench_gate.gate.stochastic import compare, holm, p_adverse
from membench_gate.model.results import Baseline, Cell, Justification, Results
from membench_gate.selftest.null import null_comparisons
from membench_gate.suites.common.repeats import as_cell, pool
from membench_gate.suites.common.suite import SuiteRun

pytestmark = pytest.mark.slow  # scipy's first import takes seconds

R = 5
ITEMS = 20  # 100 trials per cell


def spread(total: int, items: int = ITEMS, repeats: int = R) -> dict[str, int]:
    """``total`` passes over ``items`` items, as evenly as they go."""
    return {f"s{i:02d}": total // items + (i < total % items) for i in range(items)}


def stochastic(total: int, metric: float | None = None) -> Cell:
    passes = spread(total)
    rate = total / (ITEMS * R)
    return Cell(metrics={"veto_recall_at_k": rate if metric is None else metric},
                gold_total=ITEMS, failed=[i for i, n in passes.items() if n < R], repeats=R,
                passes=passes)


CELLS = ("veto/files_known", "veto/files_unknown", "veto/lifecycle")
GATED = {"veto_recall_at_k": 0.5}  # a gated metric: the cells the gate (and its null) can flag


def run_of(totals: dict[str, int], hash_: str = "h1") -> Baseline:
    return Baseline(schema_version=1, fixtures_hash=hash_, config={"suites": {}},
                    cells={name: stochastic(total) for name, total in totals.items()},
                    digests={name: {i: f"d-{i}" for i in spread(0)} for name in totals})


def test_the_p_value_is_the_exact_one_sided_tail_computed_by_hand() -> None:
    # Head 3/10 against base 9/10: under equal rates, given 12 passes in 20 trials, the chance
    # that head's 10 trials hold at most 3 of them (hypergeometric).
    by_hand = sum(math.comb(12, x) * math.comb(8, 10 - x) for x in range(0, 4)) / math.comb(20, 10)
    assert by_hand == pytest.approx(1826 / 184756)
    assert p_adverse(3, 10, 9, 10) == pytest.approx(by_hand, rel=1e-12)
    # One-sided: the same move the good way is no evidence of a regression at all.
    assert p_adverse(9, 10, 3, 10) > 0.99


def test_holm_is_step_down() -> None:
    assert holm([0.01, 0.04, 0.03]) == pytest.approx([0.03, 0.06, 0.06])
    assert holm([0.0003, 0.0367]) == pytest.approx([0.0006, 0.0367])
    assert holm([]) == []


def test_a_significant_drop_is_a_stochastic_regression_with_p_value_and_intervals() -> None:
    base, head = run_of({"veto/files_known": 90}), run_of({"veto/files_known": 70})
    verdict = decide(base, base, head)
    assert verdict.verdict == "regression"
    [breach] = verdict.breaches
    assert (breach.key, breach.kind, breach.base, breach.head) == \
        ("veto/files_known", "stochastic-regression", 0.9, 0.7)
    assert "90/100" in breach.detail and "70/100" in breach.detail and "Wilson 95%" in breach.detail
    assert "p = 0.0003" in breach.detail
    [tested] = verdict.stochastic
    assert tested.significant and tested.p_value == pytest.approx(p_adverse(70, 100, 90, 100))
    low, high = tested.head_interval
    assert low < 0.7 < high and tested.base_interval[0] < 0.9 < tested.base_interval[1]
    # Per item, nothing is compared: the items failing now are not "newly failed" breaches.
    assert verdict.newly_failed == {}


def test_a_move_within_the_noise_is_reported_not_a_breach() -> None:
    base, head = run_of({"veto/files_known": 90}), run_of({"veto/files_known": 86})
    verdict = decide(base, base, head)
    assert verdict.verdict == "pass" and not verdict.breaches
    [tested] = verdict.stochastic
    assert not tested.significant and tested.head_passes == 86
    # The per-pass mean of the gated metric dropped, and an item fails more often: not gated.
    assert head.cells["veto/files_known"].metrics["veto_recall_at_k"] < 0.9


def test_a_significant_improvement_is_not_a_breach() -> None:
    base, head = run_of({"veto/files_known": 60}), run_of({"veto/files_known": 95})
    assert decide(base, base, head).verdict == "pass"


def test_holm_keeps_three_borderline_cells_from_being_three_false_alarms() -> None:
    # Each cell alone is significant at 0.05 (p ≈ 0.025); as one family of three, none is.
    alone = run_of({"veto/files_known": 90}), run_of({"veto/files_known": 79})
    assert [b.kind for b in decide(alone[0], alone[0], alone[1]).breaches] == \
        ["stochastic-regression"]
    base, head = run_of(dict.fromkeys(CELLS, 90)), run_of(dict.fromkeys(CELLS, 79))
    verdict = decide(base, base, head)
    assert verdict.verdict == "pass" and not verdict.breaches
    assert all(t.p_value < 0.05 < t.adjusted_p for t in verdict.stochastic)


def test_holm_steps_down_where_bonferroni_would_not() -> None:
    base = run_of({"veto/files_known": 90, "veto/files_unknown": 90})
    head = run_of({"veto/files_known": 70, "veto/files_unknown": 80})
    verdict = decide(base, base, head)
    assert sorted(b.key for b in verdict.breaches) == ["veto/files_known", "veto/files_unknown"]


def test_alpha_is_the_configured_one() -> None:
    base, head = run_of({"veto/files_known": 90}), run_of({"veto/files_known": 80})
    assert decide(base, base, head, alpha=0.05).verdict == "regression"  # p ≈ 0.037
    assert decide(base, base, head, alpha=0.01).verdict == "pass"


def test_a_stochastic_regression_is_blessable_with_a_justification() -> None:
    base, head = run_of({"veto/files_known": 90}), run_of({"veto/files_known": 70})
    text = ("veto/files_known fails more often since the ranking favours recent decisions; "
            "accepted while the recency weight is tuned back down")
    committed = head.model_copy(update={"justification": Justification(
        text=text, breaches=["veto/files_known"])})
    verdict = decide(base, committed, head)
    assert verdict.verdict == "pass" and verdict.blessed
    assert decide(base, head, head).verdict == "regression"  # no justification


def test_under_a_corpus_change_the_cell_is_still_tested() -> None:
    base = run_of({"veto/files_known": 90})
    head = run_of({"veto/files_known": 70}, hash_="h2")
    verdict = decide(base, head, head)
    assert verdict.mode == "corpus-bless"
    assert [b.kind for b in verdict.breaches] == ["stochastic-regression"]


def test_a_zero_gated_violation_in_any_pass_is_a_regression() -> None:
    def one(violations: int) -> SuiteRun:
        run = SuiteRun()
        outcome = "fail" if violations else "pass"
        run.add("push/push", {"push_precision": 1.0, "source_isolation_violations": violations},
                {"t1": {"outcome": outcome, "foreign": ["other/page"] if violations else []}})
        return run

    pooled = pool([one(0), one(0), one(1), one(0), one(0)])
    cell = as_cell(pooled.cells["push/push"])
    assert cell.metrics == {"push_precision": 1.0, "source_isolation_violations": 1}
    assert (cell.repeats, cell.passes, cell.failed) == (5, {"t1": 4}, ["t1"])
    assert pooled.items["push/push"]["t1"]["passes"] == 4
    clean = Baseline(schema_version=1, fixtures_hash="h", config={"suites": {}},
                     cells={"push/push": as_cell(pool([one(0)] * 5).cells["push/push"])})
    actual = Results(**clean.model_dump(), receipt={}, items=pooled.items)
    actual.cells["push/push"] = cell
    verdict = decide(clean, clean, actual, allow_regression="testing it locally")
    assert verdict.verdict == "regression"
    [breach] = verdict.breaches
    assert breach.kind == "zero"
    # The offending item is named from the pass that leaked.
    assert [(o.id, o.ids) for o in breach.offenders] == [("t1", ["other/page"])]


def test_counts_must_fit_the_cell() -> None:
    with pytest.raises(ValidationError, match="not from 0 to 5"):
        Cell(metrics={}, gold_total=1, failed=[], repeats=5, passes={"a": 6})
    with pytest.raises(ValidationError, match="go together"):
        Cell(metrics={}, gold_total=1, failed=[], repeats=5)
    assert Cell(metrics={}, gold_total=3, failed=["a"]).counts() == (2, 3)


def test_null_comparisons_keep_false_alarms_at_alpha() -> None:
    # Heterogeneous items (some always pass, some never, most in between): 400 A/A comparisons.
    cells = {name: Cell(metrics=GATED, gold_total=10, failed=[], repeats=R, passes={
        f"i{i}": n for i, n in enumerate([5, 5, 4, 4, 3, 3, 2, 1, 0, 5])}) for name in CELLS}
    base = Baseline(schema_version=1, fixtures_hash="h", config={"suites": {}}, cells=cells)
    null = null_comparisons(base, {}, alpha=0.05, count=400)
    assert null is not None and null.ok
    assert null.rate <= 0.05 + 2 * math.sqrt(0.05 * 0.95 / 400)
    assert null.interval[0] <= null.rate <= null.interval[1]
    again = null_comparisons(base, {}, alpha=0.05, count=400)
    assert again == null  # seeded


def test_power_against_a_regression_is_measured() -> None:
    def of(passes: list[int]) -> Baseline:
        return Baseline(schema_version=1, fixtures_hash="h", config={"suites": {}},
                        cells={"veto/files_known": Cell(
                            metrics=GATED, gold_total=len(passes), failed=[], repeats=R,
                            passes={f"i{i:02d}": n for i, n in enumerate(passes)})})

    null = null_comparisons(of([5] * 18 + [4, 4]), {"worse": of([2] * 20), "same": of(
        [5] * 18 + [4, 4])}, alpha=0.05)
    assert null is not None
    assert null.power["worse"] == 1.0 and null.power["same"] <= 0.1


def test_a_false_alarm_rate_above_alpha_fails() -> None:
    from membench_gate.model.selftest import NullComparisons

    def made(false_alarms: int) -> NullComparisons:
        from membench_gate.gate.stochastic import wilson

        return NullComparisons(comparisons=200, false_alarms=false_alarms,
                               rate=false_alarms / 200, alpha=0.05,
                               interval=wilson(false_alarms, 200, 0.95), seed=1)

    assert made(10).ok and made(16).ok  # 8%: within the sampling error of 200 comparisons
    assert not made(20).ok


def test_compare_skips_a_cell_without_trials() -> None:
    assert compare([("a/b", (0, 0), (0, 0))], 0.05) == []


def test_a_yardstick_cell_is_reported_never_a_breach_nor_in_the_gated_family() -> None:
    # behaviour/none reports veto_respected_rate (DESIGN §5c: only behaviour/memory is gated):
    # its collapse is shown, not a breach, and does not enter the Holm family of the gated cell.
    def behaviour(totals: dict[str, int]) -> Baseline:
        run = run_of(totals)
        for cell in run.cells.values():
            cell.metrics = {"veto_respected_rate": cell.metrics.pop("veto_recall_at_k")}
        return run

    base = behaviour({"behaviour/memory": 90, "behaviour/none": 90})
    head = behaviour({"behaviour/memory": 79, "behaviour/none": 10})
    verdict = decide(base, base, head)
    assert [(b.key, b.kind) for b in verdict.breaches] == \
        [("behaviour/memory", "stochastic-regression")]  # p ≈ 0.025, alone in its family
    tested = {t.cell: t for t in verdict.stochastic}
    assert tested["behaviour/none"].significant and not tested["behaviour/none"].gated
    assert tested["behaviour/memory"].gated
    assert tested["behaviour/memory"].adjusted_p == pytest.approx(tested["behaviour/memory"].p_value)


def test_the_level_is_the_bases_and_a_changed_level_is_an_easing_breach() -> None:
    # A pull request lowering [live] alpha would make every drop "within the noise": the base's
    # preregistered level judges it, and the change itself is a breach to justify.
    def live(run: Baseline, alpha: float, hash_: str) -> Baseline:
        return run.model_copy(update={"fixtures_hash": hash_, "config": {
            "suites": {}, "live": {"alpha": alpha, "model": "m", "temperature": 0.7}}})

    base = live(run_of({"veto/files_known": 90}), 0.05, "h1")
    head = live(run_of({"veto/files_known": 70}), 1e-9, "h2")
    verdict = decide(base, head, head, alpha=1e-9)
    kinds = sorted((b.key, b.kind) for b in verdict.breaches)
    assert kinds == [("live:option:alpha", "option"),
                     ("veto/files_known", "stochastic-regression")]
    [tested] = verdict.stochastic
    assert tested.alpha == 0.05 and tested.significant
