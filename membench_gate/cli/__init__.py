"""The console entry (``membench-gate``): parser, dispatch and process runtime."""

from membench_gate.cli.main import console

__all__ = ["console"]
