"""``[suites.behaviour]`` of ``membench.toml`` (docs/config.md)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, field_validator

from membench_gate.suites.common.options import Count, SuiteOptions, problem

Condition = Literal["none", "conventions", "flatfile", "memory"]
CONDITIONS: tuple[Condition, ...] = ("none", "conventions", "flatfile", "memory")


class BehaviourOptions(SuiteOptions):
    k: Count = 5
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
