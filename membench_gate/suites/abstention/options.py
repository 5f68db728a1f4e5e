"""``[suites.abstention]`` of ``membench.toml`` (docs/config.md)."""

from __future__ import annotations

from typing import Annotated

from pydantic import AfterValidator, Field

from membench_gate.suites.common.options import Count, SuiteOptions, problem

MAX_LAMBDA = 1000  # a λ of 1e30 is a mistake to name, not to run

Seed = Annotated[int, Field(ge=0, le=2**32 - 1, description=f"an integer from 0 to {2**32 - 1}")]


def _distinct(lambdas: list[float]) -> list[float]:
    if len({float(lam) for lam in lambdas}) != len(lambdas):
        raise problem("a value is repeated")
    return lambdas


# Integers stay integers: the options are recorded and hashed as written ([1, 2] is not [1.0, 2.0]).
Lambdas = Annotated[
    list[Annotated[int, Field(ge=0, le=MAX_LAMBDA)]
         | Annotated[float, Field(ge=0, le=MAX_LAMBDA, allow_inf_nan=False)]],
    Field(min_length=1, description=f"a non-empty list of finite numbers from 0 to {MAX_LAMBDA}"),
    AfterValidator(_distinct),
]


class AbstentionOptions(SuiteOptions):
    k: Count = 5
    lambdas: Lambdas = [1, 2, 5, 10]  # preregistered: part of the measurement
    shuffle_seed: Seed = 7
