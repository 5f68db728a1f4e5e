"""abstention: does the memory answer what it knows and abstain on what it does not?

NET(λ) = (correct − λ·wrong) / n over every probe, abstentions included: a correct answer scores 1,
a wrong one −λ, an abstention 0 (so an always-abstaining system scores NET 0). A probe *passes*
when answered correctly, or abstained on when nothing stored answers it. Two controls prove the
suite can tell a good system from a broken one; each must *fail*:

- ``control_floor_off`` answers with the top hit whatever ``abstain`` says; it fails as it should
  when it has wrong > 0 (the unanswerable probes then have nowhere to hide);
- ``control_shuffled`` ingests the facts under permuted ids (fixed seed); it fails as it should when
  its NET(1) < 0.

A control cell has one gold item, the control itself: it is listed in ``failed`` when the control
did not fail, and ``controls_passing`` on ``abstention/default`` counts those (a zero-gated metric).
"""

from __future__ import annotations

from membench_gate.suites.abstention.options import AbstentionOptions
from membench_gate.suites.common.suite import Suite

# The shuffled control asks every probe again: each probe's record keeps that answer under this
# key, so a results file re-derives the control's judgement (the floor-off control reads ``hits``).
ANSWERS = {"abstention/control_shuffled": "shuffled"}

SUITE = Suite(
    name="abstention",
    package=__name__,
    options=AbstentionOptions,
    scorer_version=2,
    files=("facts.json", "probes.json"),
    answers=ANSWERS,
)
