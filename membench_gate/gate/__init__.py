"""The gate's rules: ``decide()`` and the justification check. Pure: no git, no GitHub, no files, no clock.

``membench_gate.gate.decide`` is :func:`membench_gate.gate.rules.decide` (DESIGN's name for it),
imported when first asked for, so importing a module of this package does not load the rules.
"""

from __future__ import annotations

from typing import Any

__all__ = ["decide"]


def __getattr__(name: str) -> Any:
    if name == "decide":
        from membench_gate.gate.rules import decide

        return decide
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
