"""``python -m membench_gate``."""

from membench_gate.cli.main import console

console()
