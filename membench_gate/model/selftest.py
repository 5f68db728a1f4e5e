"""The selftest's report (``selftest --json``): what each mutant breached, which metrics are blind."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class MutantResult(BaseModel):
    """What one mutant did: the metric keys (``cell:metric``) it breached, or why it could not run."""

    model_config = ConfigDict(extra="forbid", defer_build=True)
    description: str
    breached: list[str] = []
    error: str | None = None


class SelftestReport(BaseModel):
    """The selftest's data (``selftest --json``), which the action's comment reads."""

    model_config = ConfigDict(extra="forbid", defer_build=True)
    covered: int = Field(ge=0)
    total: int = Field(ge=0)
    blind: list[str]
    # The blind metrics the unmutated run already scores at their worst value: no run can do
    # worse, so no mutant can breach them until the memory scores above it.
    at_worst: list[str] = []
    metrics: dict[str, list[str]]  # cell:metric -> mutants that breach it
    kinds: dict[str, str]  # cell:metric -> gated | zero
    unmutated_breaches: list[str] = []
    mutants: dict[str, MutantResult]

    @property
    def ok(self) -> bool:
        return not self.blind
