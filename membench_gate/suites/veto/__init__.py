"""veto: does the decision that rejected an approach come back for a task that invites it?

Each decision is ingested as one record (``decision + " " + rationale``; the vetoes themselves are
metadata, not text, and so are the lifecycle fields ``status`` / ``superseded_by``). Each direct or
implicit scenario asks ``search`` with the task — with the task's files in ``files_known``, without
them in ``files_unknown`` — and passes when the vetoing decision ranks within k.

Lifecycle scenarios (``stale-named`` / ``stale-unnamed`` traps) form ``veto/lifecycle``, asked with
the task's files: their veto decision is the *current* one, and a scenario passes only when it ranks
within k with no decision it supersedes (directly or through a chain) ranked above it.
``stale_surfaced`` counts the scenarios whose hits put a superseded predecessor above the current
decision, or return one while the current decision is missing.
"""

from __future__ import annotations

from membench_gate.suites.common.suite import Suite
from membench_gate.suites.veto.options import VetoOptions

SUITE = Suite(
    name="veto",
    package=__name__,
    options=VetoOptions,
    scorer_version=2,
    files=("decisions.json", "scenarios.json"),
)
