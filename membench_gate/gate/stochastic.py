"""The statistical gate of stochastic cells (docs/gate.md, "Stochastic cells") — pure.

A cell of a suite with ``repeats`` is compared by its pooled counts: passes out of trials (every
gold item times R), head against base. The test is Fisher's exact test, one-sided (the
alternative: head passes less often than base), from scipy (``scipy.stats.fisher_exact``): exact
at any count, conditional on the total passes, so it never relies on a normal approximation
that small cells break; it is conservative, which is the side a gate errs on. Boschloo's test is
more powerful but orders of magnitude slower, and the selftest runs hundreds of comparisons per
cell. The cells of one run are one family: Holm's step-down correction (written out below; scipy
ships Benjamini–Hochberg, which controls the false discovery rate, not the family-wise error the
gate promises) keeps the chance of any false alarm in a run at or below alpha. Intervals are
Wilson score intervals at confidence 1 − alpha (``scipy.stats.binomtest``).

scipy is imported on the first comparison, never by a deterministic check.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Sequence

from membench_gate.errors import GateError
from membench_gate.model.verdict import StochasticCell

INSTALL = 'pip install "membench-gate[live]"'


def require(where: str) -> None:
    """Refuse, in one line naming ``where``, a stochastic run without scipy installed: checked
    before the adapter starts, so no run is spent on a comparison that cannot be made."""
    if importlib.util.find_spec("scipy") is None:
        raise GateError(f"{where}: repeats need scipy for the statistical gate: {INSTALL}")


def p_adverse(head_passes: int, head_trials: int, base_passes: int, base_trials: int) -> float:
    """The one-sided p-value of head passing less often than base: the probability, under equal
    rates and the margins observed, of head passing at most ``head_passes`` times."""
    from scipy.stats import fisher_exact

    table = [[head_passes, head_trials - head_passes], [base_passes, base_trials - base_passes]]
    return float(fisher_exact(table, alternative="less").pvalue)


def wilson(passes: int, trials: int, confidence: float) -> tuple[float, float]:
    """The Wilson score interval of a pass rate."""
    from scipy.stats import binomtest

    interval = binomtest(passes, trials).proportion_ci(confidence_level=confidence,
                                                       method="wilson")
    return float(interval.low), float(interval.high)


def holm(pvalues: Sequence[float]) -> list[float]:
    """Holm-adjusted p-values, in the order given: the i-th smallest times (m − i + 1), made
    non-decreasing, at most 1. A cell is significant when its adjusted value is ≤ alpha."""
    order = sorted(range(len(pvalues)), key=lambda i: (pvalues[i], i))
    adjusted = [1.0] * len(pvalues)
    running = 0.0
    for rank, index in enumerate(order):
        running = max(running, min(1.0, (len(pvalues) - rank) * pvalues[index]))
        adjusted[index] = running
    return adjusted


Counts = tuple[int, int]  # (passes, trials)


def adjusted(cells: Sequence[tuple[str, Counts, Counts]]) -> list[tuple[float, float]]:
    """Each ``(cell, base counts, head counts)``'s one-sided p-value and its Holm adjustment
    across all of them (cells with trials on both sides)."""
    raw = [p_adverse(head[0], head[1], base[0], base[1]) for _, base, head in cells]
    return list(zip(raw, holm(raw), strict=True))


def compare(cells: Sequence[tuple[str, Counts, Counts]], alpha: float,
            gated: bool = True) -> list[StochasticCell]:
    """Each ``(cell, base counts, head counts)`` tested, Holm-corrected across all of them;
    ``gated``: whether a significant drop of these cells is a breach or only reported."""
    tested = [(cell, base, head) for cell, base, head in cells if base[1] and head[1]]
    return [StochasticCell(
        cell=cell, base_passes=base[0], base_trials=base[1], head_passes=head[0],
        head_trials=head[1], base_interval=wilson(*base, 1 - alpha),
        head_interval=wilson(*head, 1 - alpha), p_value=p_value, adjusted_p=adjusted_p,
        alpha=alpha, significant=adjusted_p <= alpha, gated=gated)
        for (cell, base, head), (p_value, adjusted_p) in zip(tested, adjusted(tested), strict=True)]
