"""The selftest's report (``selftest --json``): what each mutant breached, which metrics are blind."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class MutantResult(BaseModel):
    """What one mutant did: the metric keys (``cell:metric``) it breached, or why it could not run."""

    model_config = ConfigDict(extra="forbid", defer_build=True)
    description: str
    breached: list[str] = []
    error: str | None = None


class NullComparisons(BaseModel):
    """The measured false alarms of the statistical gate (docs/selftest.md, "Null comparisons"):
    A/A comparisons, both sides resampled from the unmutated run's per-item pass rates, judged
    as the gate judges a run (every stochastic cell, Holm-corrected). ``interval``: the Wilson
    95% interval of the false-alarm rate; ``ok`` unless its lower bound is above ``alpha``.
    ``power``: per mutant, the share of comparisons resampled from the unmutated rates (base)
    and the mutant's (head) that the gate flags."""

    model_config = ConfigDict(extra="forbid", defer_build=True)
    comparisons: int = Field(ge=1)
    false_alarms: int = Field(ge=0)
    rate: float
    alpha: float
    interval: tuple[float, float]
    seed: int
    power: dict[str, float] = {}

    @property
    def ok(self) -> bool:
        return self.interval[0] <= self.alpha


class SelftestReport(BaseModel):
    """The selftest's data (``selftest --json``), which the action's comment reads."""

    model_config = ConfigDict(extra="forbid", defer_build=True)
    covered: int = Field(ge=0)
    total: int = Field(ge=0)
    blind: list[str]
    # The blind metrics the unmutated run already scores at their worst value: no run can do
    # worse, so no mutant can breach them until the memory scores above it.
    at_worst: list[str] = []
    # The blind source-isolation metrics whose fixtures seed nothing of another source: no
    # answer can break isolation there (an id of another source would be one never ingested).
    nothing_foreign: list[str] = []
    metrics: dict[str, list[str]]  # cell:metric -> mutants that breach it
    kinds: dict[str, str]  # cell:metric -> gated | zero
    unmutated_breaches: list[str] = []
    mutants: dict[str, MutantResult]
    # Only for a config with a suite with repeats (left out of the file otherwise).
    null: NullComparisons | None = None

    @property
    def ok(self) -> bool:
        return not self.blind and (self.null is None or self.null.ok)
