"""``[suites.behaviour]`` of ``membench.toml`` (docs/config.md)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, field_validator

from membench_gate.suites.common.options import Count, Repeats, SuiteOptions, problem

Condition = Literal["none", "conventions", "flatfile", "memory"]
CONDITIONS: tuple[Condition, ...] = ("none", "conventions", "flatfile", "memory")


# Passes of the suite unless its table says otherwise: an LLM's answers move from run to run, so
# the suite is stochastic by default. Five passes of the built-in nine scenarios (45 trials a
# cell) catch a memory that stops retrieving the veto at alpha 0.05 with power near 1, at
# 4 x 9 x 5 = 180 calls a run (docs/live.md, "Repeats and the statistical rule").
DEFAULT_REPEATS = 5


class BehaviourOptions(SuiteOptions):
    k: Count = 5
    repeats: Repeats | None = Field(default=DEFAULT_REPEATS,
                                    description="an integer from 2 to 1000")
    conditions: Annotated[list[Condition], Field(
        min_length=1, description="a non-empty list of 'none', 'conventions', 'flatfile', "
                                  "'memory'")] = list(CONDITIONS)

    @field_validator("conditions")
    @classmethod
    def _once(cls, conditions: list[Condition]) -> list[Condition]:
        twice = [c for c in conditions if conditions.count(c) > 1]
        if twice:
            raise problem(f"conditions: {twice[0]!r} is listed twice")
        return conditions
