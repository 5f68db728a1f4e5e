"""Null comparisons: the statistical gate's false-alarm rate, measured (docs/selftest.md).

A stochastic cell is gated by a test whose false-alarm rate is alpha only if its assumptions
hold. So the selftest measures it: from the unmutated run's per-item pass rates it draws both
sides of an A/A comparison (each item's passes out of R, binomial at its rate), judges the pair
as the gate judges a run — every stochastic cell, Holm-corrected
(:func:`membench_gate.gate.stochastic.compare`) — and counts the comparisons with any breach.
The same draws, head from a mutant's rates, give the gate's power against that mutant.

Seeded (:data:`SEED`): the same runs give the same report, byte for byte.
"""

from __future__ import annotations

from collections.abc import Mapping

from membench_gate.gate.stochastic import adjusted, wilson
from membench_gate.model.results import Baseline
from membench_gate.model.selftest import NullComparisons

COMPARISONS = 200  # at least: the false-alarm rate's sampling error is then about 1.5 points
SEED = 26
# The false-alarm rate's interval (Wilson): selftest fails when even its lower bound is above
# alpha, i.e. the rate exceeds alpha beyond its sampling error.
CONFIDENCE = 0.95

Rates = dict[str, tuple[int, list[float]]]  # cell -> (repeats, each gold item's pass rate)


def rates(baseline: Baseline) -> Rates:
    """Each gated stochastic cell's repeats and its items' pass rates, in item order (the cells
    the gate can flag: one whose metrics are all reported is never a breach)."""
    from membench_gate.model import metrics

    return {name: (cell.repeats, [cell.passes[item] / cell.repeats
                                  for item in sorted(cell.passes)])
            for name, cell in sorted(baseline.cells.items())
            if cell.repeats is not None and cell.passes is not None
            and any(metrics.gate_kind(name, metric) == "gated" for metric in cell.metrics)}


def _flagged(base: Rates, head: Rates, alpha: float, count: int, seed: int) -> int:
    """How many of ``count`` comparisons, base drawn from ``base`` and head from ``head``, the
    gate flags (any stochastic cell significant)."""
    import numpy

    rng = numpy.random.default_rng(seed)
    cells = [name for name in base if name in head and len(head[name][1]) == len(base[name][1])]
    flagged = 0
    for _ in range(count):
        pairs = []
        for name in cells:
            repeats, before = base[name]
            after = head[name][1]
            trials = repeats * len(before)
            pairs.append((name, (int(rng.binomial(repeats, before).sum()), trials),
                          (int(rng.binomial(repeats, after).sum()), trials)))
        # What the gate's compare() decides, without the intervals it also reports.
        flagged += any(adjusted_p <= alpha for _, adjusted_p in adjusted(pairs))
    return flagged


def null_comparisons(base: Baseline, mutated: Mapping[str, Baseline], alpha: float,
                     count: int = COMPARISONS, seed: int = SEED) -> NullComparisons | None:
    """The false-alarm rate of ``count`` A/A comparisons from ``base``'s rates, and the power
    against each of ``mutated`` (mutant name → its run); None when nothing is stochastic."""
    null = rates(base)
    if not null:
        return None
    false_alarms = _flagged(null, null, alpha, count, seed)
    return NullComparisons(
        comparisons=count, false_alarms=false_alarms, rate=false_alarms / count, alpha=alpha,
        interval=wilson(false_alarms, count, CONFIDENCE), seed=seed,
        power={name: _flagged(null, rates(run), alpha, count, seed) / count
               for name, run in mutated.items()})
