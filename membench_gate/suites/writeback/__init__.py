"""writeback: what the memory's own write path keeps from a conversation.

For each session the store is reset and the whole conversation handed to ``write(session)``; the
suite then reads back what was written, through ``search`` alone (docs/suites.md, "writeback"):

- ``writeback/fidelity``: per gold fact, ``search(Query(" ".join(keywords), k, source))``. The fact
  *survives* when a hit's ``text`` holds every keyword and its ``entity`` is the fact's entity, and
  no earlier fact of the session took that hit (each hit id satisfies at most one gold fact); its
  provenance is right when the hit it took carries ``{source, session, turn}`` of the fact. A fact
  item passes when it survives with the right provenance. Each *non-fact* (a hypothetical, a quoted
  claim, a retracted statement) is asked the same way and *leaks* when any hit's text holds all its
  keywords; a non-fact item passes when it does not leak.
- ``writeback/continuity``: with no reset after the write (the hop to a later session), each probe
  asks ``search(Query(question, k, source))`` and passes when a hit's text holds every keyword. A
  continuity pair seeds its pages, writes its writer session and pushes its reader's user turns,
  with no reset; each decision passes when an expected page was injected on a reader turn
  (pointer arm) or a written memory holds every keyword (fact arm).

The suite reads the hits and ignores ``abstain``: it judges what was written, not when the system
chooses to answer (the abstention suite judges that).
"""

from __future__ import annotations

from typing import Any

from membench_gate.errors import GateError
from membench_gate.suites.common.suite import Suite
from membench_gate.suites.writeback.options import WritebackOptions


def check_adapter(capabilities: Any) -> None:
    """Refuse an adapter without a write path before any suite runs (the runner asks every
    enabled suite that defines this right after ``initialize``)."""
    if not capabilities.write:
        raise GateError("suite writeback: the adapter does not implement write(session) "
                        "(its initialize result has no capabilities.write: true); implement it or "
                        "remove [suites.writeback]")


SUITE = Suite(
    name="writeback",
    package=__name__,
    options=WritebackOptions,
    scorer_version=4,
    subfolder="sessions",
    subfolders=("pairs",),
    check_adapter=check_adapter,
)
