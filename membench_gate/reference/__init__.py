"""The reference memory: an adapter like any other (``membench_gate.reference:ReferenceMemory``)."""

from membench_gate.reference.memory import ReferenceMemory

__all__ = ["ReferenceMemory"]
