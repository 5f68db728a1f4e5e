"""push: know-to-ask and intrusion budget over replayed conversations.

For each conversation the store is reset and its pages ingested (``id = entity = slug``). Each user
turn asks ``push(Query(text=turn, k=budget, source=conversation source, context=earlier turns))``.
A should-retrieve turn passes when the injection hits gold ∪ acceptable; a stay-silent turn passes
when nothing is injected; any injected id from another source fails the turn and counts as a
source-isolation violation. Holdout turns are not scored but stay in the context of later turns.
"""

from __future__ import annotations

from membench_gate.suites.common.suite import Suite
from membench_gate.suites.push.options import PushOptions

SUITE = Suite(
    name="push",
    package=__name__,
    options=PushOptions,
    scorer_version=1,
    subfolder="conversations",
)
