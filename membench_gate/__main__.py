"""``python -m membench_gate``."""

from membench_gate.cli import console

console()
