"""The abstention suite's fixtures: ``facts.json`` (the corpus) and ``probes.json`` (questions, each
answered by one fact or by none)."""

from __future__ import annotations

from dataclasses import dataclass, field

from pydantic import Field

from membench_gate.errors import GateError
from membench_gate.model.measurement import digest
from membench_gate.suites.common.fixtures import Item, SuiteFixtures, load_array, unique
from membench_gate.suites.common.folders import FixtureFile


class Fact(Item):
    id: str = Field(min_length=1)
    text: str = Field(min_length=1)


class Probe(Item):
    id: str = Field(min_length=1)
    question: str = Field(min_length=1)
    gold_fact_id: str | None


@dataclass
class Fixtures(SuiteFixtures):
    """The abstention suite's items: facts and probes."""

    facts: list[Fact] = field(default_factory=list)
    probes: list[Probe] = field(default_factory=list)


def load(fx: Fixtures, files: list[FixtureFile]) -> None:
    facts_file, probes_file = files
    fx.facts += load_array(fx, facts_file, Fact)
    fx.probes += load_array(fx, probes_file, Probe)


def validate(fx: Fixtures, include_holdout: bool) -> None:
    unique(fx.origins, "abstention item")
    facts = {f.id: f for f in fx.facts}
    for probe in fx.probes:
        gold = facts.get(probe.gold_fact_id) if probe.gold_fact_id is not None else None
        if probe.gold_fact_id is not None and gold is None:
            raise GateError(
                f"{fx.label(probe.id)}: probe {probe.id}: gold_fact_id "
                f"{probe.gold_fact_id!r} does not exist"
            )
        if include_holdout or not (probe.holdout or (gold is not None and gold.holdout)):
            fx.digests[probe.id] = digest(
                {"probe": probe.model_dump(), "gold": gold.model_dump() if gold else None}
            )
    if not include_holdout:
        fx.facts = [f for f in fx.facts if not f.holdout]
    fx.corpus = {f.id: digest(f.model_dump()) for f in fx.facts}

