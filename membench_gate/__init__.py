"""membench-gate: gate the pull requests of AI-agent memory systems on deterministic suites.

The adapter types are exported lazily: ``membench-gate --help`` and the commands that never meet an
adapter start without importing them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

__all__ = ["Answer", "ContextTurn", "Hit", "MemoryAdapter", "Query", "Record", "Session", "Turn",
           "__version__"]

if TYPE_CHECKING:
    from membench_gate.adapter.types import (
        Answer,
        ContextTurn,
        Hit,
        MemoryAdapter,
        Query,
        Record,
        Session,
        Turn,
    )


def __getattr__(name: str) -> Any:
    if name in __all__:
        from membench_gate.adapter import types as adapter

        return getattr(adapter, name)
    raise AttributeError(f"module 'membench_gate' has no attribute {name!r}")
