"""push: know-to-ask and intrusion budget over replayed conversations (BrainBench's definitions).

For each conversation the store is reset and its pages ingested (``id = slug``, or
``<slug>@<source>`` for each copy of a slug seeded in several sources; ``entity = slug``). Each
user turn asks ``push(Query(text=turn, k=budget, source=conversation source, context=earlier
turns, context_turns=earlier turns with role and time))``; assistant turns are context only.

- ``push/know_to_ask``: an item per scored user turn (``<conv>.<turn>``). A should-retrieve turn
  passes when the injection holds a gold or acceptable page of the conversation's source; a
  stay-silent turn when nothing is injected.
- ``push/push``: an item per gold slug of a should-retrieve turn (``<conv>.<turn>#<slug>``), which
  passes when that slug's page was injected on its turn; stay-silent turns are recorded too (their
  injection counts in ``push_precision``), as no gold item.

Any injected id of another source (a twin's foreign copy included) fails the turn's items and is a
source-isolation violation. A user turn without ``expect``, and a held-out turn, is pushed (it is
context) and not scored; a held-out conversation is not sent at all unless the run includes
holdout. A conversation's ``suites`` names the cells it is scored in.
"""

from __future__ import annotations

from membench_gate.suites.common.suite import Suite
from membench_gate.suites.push.options import PushOptions

SUITE = Suite(
    name="push",
    package=__name__,
    options=PushOptions,
    scorer_version=2,
    subfolder="conversations",
)
