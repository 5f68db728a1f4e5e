"""The veto suite's fixtures: ``decisions.json`` (the corpus, with the options each decision
rejected and its lifecycle) and ``scenarios.json`` (tasks that invite a rejected option)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from membench_gate.errors import GateError
from membench_gate.model.measurement import digest
from membench_gate.model.results import validation_message
from membench_gate.suites.common.fixtures import (
    Item,
    SuiteFixtures,
    iso_date,
    items_of,
    load_array,
    parse_time,
    unique,
)
from membench_gate.suites.common.folders import FixtureFile


class Rejected(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, defer_build=True)
    option: str = Field(min_length=1)
    reason: str = Field(min_length=1)


class Decision(Item):
    id: str = Field(min_length=1)
    decision: str = Field(min_length=1)
    rationale: str = ""
    rejected: list[Rejected] = []
    files: list[str] = []
    created_at: str | None = None
    reviewed_at: str | None = None
    relevance: float | None = Field(default=None, ge=0, le=1)
    # Lifecycle (docs/suites.md): a superseded decision names the one that replaced it.
    status: Literal["active", "superseded"] = "active"
    superseded_by: str | None = Field(default=None, min_length=1)

    _dates = field_validator("created_at", "reviewed_at")(iso_date)


LIFECYCLE_TRAPS = ("stale-named", "stale-unnamed")


class Scenario(Item):
    id: str = Field(min_length=1)
    task: str = Field(min_length=1)
    files: list[str] = []
    veto_decision_id: str = Field(min_length=1)
    trap: Literal["direct", "implicit", "stale-named", "stale-unnamed"]
    rejected_option: str = Field(min_length=1)
    # Other spellings of the rejected option, for the behaviour suite's judge ("Mongo" for
    # "MongoDB"); the veto suite does not read them.
    rejected_aliases: list[Annotated[str, Field(min_length=1)]] = []

    @property
    def lifecycle(self) -> bool:
        """A stale-* trap: scored in ``veto/lifecycle`` only."""
        return self.trap in LIFECYCLE_TRAPS


class ScenarioFile(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, defer_build=True)
    as_of: str
    scenarios: list[dict[str, Any]]

    _date = field_validator("as_of")(iso_date)


@dataclass
class Fixtures(SuiteFixtures):
    """The veto suite's items: decisions, and scenarios with the ``as_of`` of their file."""

    decisions: list[Decision] = field(default_factory=list)
    scenarios: list[tuple[Scenario, datetime]] = field(default_factory=list)


def load(fx: Fixtures, files: list[FixtureFile]) -> None:
    decisions_file, scenarios_file = files
    decisions = load_array(fx, decisions_file, Decision)
    slabel = scenarios_file.label
    try:
        head = ScenarioFile.model_validate(scenarios_file.data)
    except ValidationError as exc:
        raise GateError(validation_message(slabel, exc)) from exc
    except ValueError as exc:
        raise GateError(f"{slabel}: as_of: {exc}") from exc
    as_of = parse_time(head.as_of, "as_of")
    scenarios = [(s, as_of) for s in items_of(Scenario, head.scenarios, slabel)]
    fx.decisions += decisions
    fx.scenarios += scenarios
    fx.origins += [(s.id, slabel) for s, _ in scenarios]


def _decision_payload(decision: Decision) -> dict[str, Any]:
    """A decision's digest payload; the lifecycle keys only when they say something, so a corpus
    without lifecycle keeps the digests it had before lifecycle existed."""
    payload = decision.model_dump()
    if decision.status == "active" and decision.superseded_by is None:
        del payload["status"], payload["superseded_by"]
    return payload


def predecessors(decisions: dict[str, Decision], current: str) -> list[str]:
    """Ids of the decisions ``current`` supersedes, directly or through a chain, nearest first."""
    replaced: dict[str, list[str]] = {}
    for d in decisions.values():
        if d.superseded_by is not None:
            replaced.setdefault(d.superseded_by, []).append(d.id)
    found: list[str] = []
    frontier = [current]
    while frontier:
        step = sorted(i for ident in frontier for i in replaced.get(ident, ()) if i not in found)
        found += step
        frontier = step
    return found


def _validate_lifecycle(fx: Fixtures, decisions: dict[str, Decision]) -> None:
    for d in decisions.values():
        where = f"{fx.label(d.id)}: decision {d.id}"
        if d.superseded_by is None:
            continue
        if d.status != "superseded":
            raise GateError(f"{where}: superseded_by is set but status is {d.status!r} "
                            "(expected 'superseded')")
        if d.superseded_by not in decisions:
            raise GateError(f"{where}: superseded_by {d.superseded_by!r} does not exist")
        seen, ident = {d.id}, d.superseded_by
        while ident is not None:
            if ident in seen:
                raise GateError(f"{where}: superseded_by forms a cycle through {ident!r}")
            seen.add(ident)
            ident = decisions[ident].superseded_by


def validate(fx: Fixtures, include_holdout: bool) -> None:
    unique(fx.origins, "veto item")
    decisions = {d.id: d for d in fx.decisions}
    _validate_lifecycle(fx, decisions)
    for scenario, as_of in fx.scenarios:
        where = f"{fx.label(scenario.id)}: scenario {scenario.id}"
        decision = decisions.get(scenario.veto_decision_id)
        if decision is None:
            raise GateError(
                f"{where}: veto_decision_id {scenario.veto_decision_id!r} does not exist"
            )
        stale = predecessors(decisions, decision.id) if scenario.lifecycle else []
        if scenario.lifecycle:
            if decision.status != "active":
                raise GateError(f"{where}: a {scenario.trap} trap's veto_decision_id must be the "
                                f"current (active) decision; {decision.id} is superseded")
            if not stale:
                raise GateError(f"{where}: a {scenario.trap} trap needs a decision superseded by "
                                f"{decision.id}; none names it in superseded_by")
        # A lifecycle scenario may name a veto still standing from a superseded predecessor: the
        # current decision carries it forward.
        options = {r.option for d in (decision, *(decisions[i] for i in stale)) for r in d.rejected}
        if scenario.rejected_option not in options:
            raise GateError(
                f"{where}: rejected_option {scenario.rejected_option!r} is not rejected by "
                f"{decision.id}" + (" or the decisions it supersedes" if stale else "")
            )
        referenced = [decision, *(decisions[i] for i in stale)]
        if include_holdout or not (scenario.holdout or any(d.holdout for d in referenced)):
            # (aliases only when listed: a corpus without them keeps the digests it had)
            payload: dict[str, Any] = {"scenario": scenario.model_dump(
                                           exclude=set() if scenario.rejected_aliases
                                           else {"rejected_aliases"}),
                                       "as_of": as_of.isoformat(),
                                       "decision": _decision_payload(decision)}
            if stale:
                payload["superseded"] = [_decision_payload(decisions[i]) for i in stale]
            fx.digests[scenario.id] = digest(payload)
    if not include_holdout:
        fx.decisions = [d for d in fx.decisions if not d.holdout]
    fx.corpus = {d.id: digest(d.model_dump()) for d in fx.decisions}

