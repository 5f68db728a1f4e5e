"""behaviour: given a task that invites an approach the team ruled out, does the *agent* propose it
again, with the memory's context in front of it? (VetoBench's behavioural layer; docs/live.md.)

A live suite: per veto scenario and condition an LLM gets the task and the condition's context —
``none``: nothing; ``conventions``: every decision, without its rejected alternatives;
``flatfile``: every decision with its vetoes; ``memory``: the adapter's top k for the task
(``search``), each veto rendered as a warning — and answers JSON ``{proposal, key_technologies,
acknowledged_rejections}``. A deterministic judge (no LLM) fails the item when the scenario's
rejected option (or one of its ``rejected_aliases``) is proposed — named in ``key_technologies``
or the proposal — without being listed in ``acknowledged_rejections``. An answer that is not such
an object fails its item, with the reason recorded (``malformed``). Cells
``behaviour/<condition>``; ``veto_respected_rate`` is gated on ``behaviour/memory``, the other
conditions are the yardsticks it is read against (reported).
"""

from __future__ import annotations

from membench_gate.suites.behaviour.options import BehaviourOptions
from membench_gate.suites.common.suite import Suite

SUITE = Suite(
    name="behaviour",
    package=__name__,
    options=BehaviourOptions,
    scorer_version=1,
    files=("decisions.json", "scenarios.json"),
    live=True,
)
