"""What every suite's options table shares: how a table of ``membench.toml`` is validated.

The config (:mod:`membench_gate.config`) builds ``[suites]`` from each suite's model and uses
the same :class:`Table` for its own tables, so every table refuses unknown keys and converts
nothing.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field
from pydantic_core import PydanticCustomError


def problem(message: str) -> PydanticCustomError:
    """A validation error whose message is ours (pydantic's would prefix "Value error, ")."""
    return PydanticCustomError("config", "{message}", {"message": message})


class Table(BaseModel):
    """A TOML table: unknown keys refused, values taken as written (no conversion).

    Validators are built on first use, once for the whole file: start-up stays lean.
    """

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True, defer_build=True)


# A field's ``description`` says what a value must be: the error for a bad value is built from it
# (for a table of values, such as [floors], it says what each value must be).
Count = Annotated[int, Field(ge=1, le=1000, description="an integer from 1 to 1000")]
Name = Annotated[str, Field(min_length=1)]
Repeats = Annotated[int, Field(ge=2, le=1000)]


class SuiteOptions(Table):
    """What every suite's table holds. All of a suite's options, defaults included, are recorded
    in results and baselines and hashed into ``fixtures_hash``: a run is described by its file."""

    fixtures: Annotated[list[Name], Field(min_length=1,
                                          description="a non-empty list of folder names")] = \
        ["builtin"]
    # Passes of the whole suite (docs/gate.md, "Stochastic cells"): when set, its cells are
    # compared by a statistical test of the pooled counts. Unset, it is not recorded at all, so a
    # deterministic suite's files and hash read as they did before the option existed.
    repeats: Repeats | None = Field(default=None, description="an integer from 2 to 1000")
