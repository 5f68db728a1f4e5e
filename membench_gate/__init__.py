"""membench-gate: gate the pull requests of AI-agent memory systems on deterministic suites."""

from membench_gate.adapter import Answer, Hit, MemoryAdapter, Query, Record, Session, Turn

__version__ = "0.1.0"

__all__ = ["Answer", "Hit", "MemoryAdapter", "Query", "Record", "Session", "Turn", "__version__"]
