"""The behaviour suite's fixtures are the veto suite's (``decisions.json``, ``scenarios.json``):
the same model, read the same way; the judge also reads a scenario's ``rejected_aliases``."""

from __future__ import annotations

from membench_gate.suites.veto.fixtures import Fixtures, load, validate

__all__ = ["Fixtures", "load", "validate"]
